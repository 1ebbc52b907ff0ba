package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/scaleway/scaleway-sdk-go/api/baremetal/v1"
	"github.com/scaleway/scaleway-sdk-go/scw"
	"nodefleet.dev/toolchain/providers/internal/nativeprovider"
)

// The Elastic Metal look-ups answer as terraform-provider-scaleway's data sources do
// (internal/services/baremetal/offer_data_source.go, os_data_source.go, option_data_source.go):
// by id when one is given, else by name over every page of the zone's list, and the found id
// answered with its zone ("fr-par-2/<uuid>") both as `id` and as `offerId`/`osId`/`optionId`.

// getOffer matches the upper-cased name exactly, refuses a disabled offer unless includeDisabled,
// and fails when no offer or more than one matches (the hourly and monthly twins share a name:
// subscriptionPeriod picks one).
func (c *cloud) getOffer(ctx context.Context, args resource.PropertyMap) (resource.PropertyMap, error) {
	client, err := c.api()
	if err != nil {
		return nil, err
	}
	api := baremetal.NewAPI(client)
	zone := c.zone(args)
	var offer *baremetal.Offer
	if id := nativeprovider.String(args, "offerId"); id != "" {
		locality, bare := splitID(id)
		if locality != "" {
			zone = scw.Zone(locality)
		}
		if offer, err = api.GetOffer(&baremetal.GetOfferRequest{Zone: zone, OfferID: bare}, scw.WithContext(ctx)); err != nil {
			return nil, err
		}
	} else {
		period := nativeprovider.String(args, "subscriptionPeriod")
		list, err := api.ListOffers(&baremetal.ListOffersRequest{Zone: zone, SubscriptionPeriod: baremetal.OfferSubscriptionPeriod(period)}, scw.WithAllPages(), scw.WithContext(ctx))
		if err != nil {
			return nil, err
		}
		name := nativeprovider.String(args, "name")
		var matches []*baremetal.Offer
		for _, o := range list.Offers {
			if o.Name != strings.ToUpper(name) {
				continue
			}
			if !o.Enable && !nativeprovider.Bool(args, "includeDisabled") {
				return nil, fmt.Errorf("%s offer %s (%s) found in zone %s but is disabled: set includeDisabled to use it", o.SubscriptionPeriod, o.Name, o.ID, zone)
			}
			matches = append(matches, o)
		}
		switch {
		case len(matches) == 0:
			return nil, fmt.Errorf("no offer found with the name %s in zone %s", name, zone)
		case len(matches) > 1:
			return nil, fmt.Errorf("%d offers found with the same name %s in zone %s: set subscriptionPeriod", len(matches), name, zone)
		}
		offer = matches[0]
	}
	id := zonedID(zone, offer.ID)
	out := resource.PropertyMap{
		"id":                 resource.NewStringProperty(id),
		"offerId":            resource.NewStringProperty(id),
		"zone":               resource.NewStringProperty(zone.String()),
		"name":               resource.NewStringProperty(offer.Name),
		"subscriptionPeriod": resource.NewStringProperty(offer.SubscriptionPeriod.String()),
		"includeDisabled":    resource.NewBoolProperty(!offer.Enable),
		"bandwidth":          resource.NewNumberProperty(float64(offer.Bandwidth)),
		"commercialRange":    resource.NewStringProperty(offer.CommercialRange),
		"stock":              resource.NewStringProperty(offer.Stock.String()),
	}
	// The SDK's `cpu` is one object: the first CPU of upstream's list.
	if len(offer.CPUs) > 0 {
		cpu := offer.CPUs[0]
		out["cpu"] = resource.NewObjectProperty(resource.PropertyMap{
			"name":        resource.NewStringProperty(cpu.Name),
			"coreCount":   resource.NewNumberProperty(float64(cpu.CoreCount)),
			"frequency":   resource.NewNumberProperty(float64(cpu.Frequency)),
			"threadCount": resource.NewNumberProperty(float64(cpu.ThreadCount)),
		})
	}
	disks := []resource.PropertyValue{}
	for _, d := range offer.Disks {
		disks = append(disks, resource.NewObjectProperty(resource.PropertyMap{
			"type": resource.NewStringProperty(d.Type), "capacity": resource.NewNumberProperty(float64(d.Capacity)),
		}))
	}
	out["disks"] = resource.NewArrayProperty(disks)
	memories := []resource.PropertyValue{}
	for _, m := range offer.Memories {
		memories = append(memories, resource.NewObjectProperty(resource.PropertyMap{
			"type":      resource.NewStringProperty(m.Type),
			"capacity":  resource.NewNumberProperty(float64(m.Capacity)),
			"frequency": resource.NewNumberProperty(float64(m.Frequency)),
			"isEcc":     resource.NewBoolProperty(m.IsEcc),
		}))
	}
	out["memories"] = resource.NewArrayProperty(memories)
	return out, nil
}

// getOs finds the OS by id, else the first whose name and version both equal the arguments.
// Upstream answers an empty id when nothing matches; the double fails, naming what it looked for.
func (c *cloud) getOs(ctx context.Context, args resource.PropertyMap) (resource.PropertyMap, error) {
	client, err := c.api()
	if err != nil {
		return nil, err
	}
	api := baremetal.NewAPI(client)
	zone := c.zone(args)
	var found *baremetal.OS
	if id := nativeprovider.String(args, "osId"); id != "" {
		if found, err = api.GetOS(&baremetal.GetOSRequest{Zone: zone, OsID: bareID(id)}, scw.WithContext(ctx)); err != nil {
			return nil, err
		}
	} else {
		list, err := api.ListOS(&baremetal.ListOSRequest{Zone: zone}, scw.WithAllPages(), scw.WithContext(ctx))
		if err != nil {
			return nil, err
		}
		name, osVersion := nativeprovider.String(args, "name"), nativeprovider.String(args, "version")
		for _, o := range list.Os {
			if o.Name == name && o.Version == osVersion {
				found = o
				break
			}
		}
		if found == nil {
			return nil, fmt.Errorf("no os found with the name %q and version %q in zone %s", name, osVersion, zone)
		}
	}
	id := zonedID(zone, found.ID)
	return resource.PropertyMap{
		"id":      resource.NewStringProperty(id),
		"osId":    resource.NewStringProperty(id),
		"zone":    resource.NewStringProperty(zone.String()),
		"name":    resource.NewStringProperty(found.Name),
		"version": resource.NewStringProperty(found.Version),
	}, nil
}

// getOption finds the option by id, else the first with that exact name, and answers whether it
// is manageable. Upstream answers an empty id when nothing matches; the double fails.
func (c *cloud) getOption(ctx context.Context, args resource.PropertyMap) (resource.PropertyMap, error) {
	client, err := c.api()
	if err != nil {
		return nil, err
	}
	api := baremetal.NewAPI(client)
	zone := c.zone(args)
	var found *baremetal.Option
	if id := nativeprovider.String(args, "optionId"); id != "" {
		if found, err = api.GetOption(&baremetal.GetOptionRequest{Zone: zone, OptionID: bareID(id)}, scw.WithContext(ctx)); err != nil {
			return nil, err
		}
	} else {
		list, err := api.ListOptions(&baremetal.ListOptionsRequest{Zone: zone}, scw.WithAllPages(), scw.WithContext(ctx))
		if err != nil {
			return nil, err
		}
		name := nativeprovider.String(args, "name")
		for _, o := range list.Options {
			if o.Name == name {
				found = o
				break
			}
		}
		if found == nil {
			return nil, fmt.Errorf("no option found with the name %q in zone %s", name, zone)
		}
	}
	id := zonedID(zone, found.ID)
	return resource.PropertyMap{
		"id":         resource.NewStringProperty(id),
		"optionId":   resource.NewStringProperty(id),
		"zone":       resource.NewStringProperty(zone.String()),
		"name":       resource.NewStringProperty(found.Name),
		"manageable": resource.NewBoolProperty(found.Manageable),
	}, nil
}
