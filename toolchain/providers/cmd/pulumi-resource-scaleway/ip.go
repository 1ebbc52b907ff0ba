package main

import (
	"context"
	"fmt"
	"net"
	"slices"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/scaleway/scaleway-sdk-go/api/ipam/v1"
	"github.com/scaleway/scaleway-sdk-go/scw"
	"nodefleet.dev/toolchain/providers/internal/nativeprovider"
)

// ip is scaleway.ipam.Ip, after terraform-provider-scaleway's internal/services/ipam/ip.go: a new
// address, isIpv6, projectId or region replaces it (ForceNew); tags update in place; a new
// `sources` changes nothing on the API (upstream's Update ignores it; the program replaces through
// replaceOnChanges). Delete releases the address, a 404 counting as released.
type ip struct{ *cloud }

func (ip) ReplaceKeys() []string { return []string{"address", "isIpv6", "projectId", "region"} }

func (ip) Check(news resource.PropertyMap) (resource.PropertyMap, []*pulumirpc.CheckFailure) {
	if news.ContainsUnknowns() {
		return news, nil
	}
	var failures []*pulumirpc.CheckFailure
	if len(nativeprovider.Maps(news, "sources")) == 0 {
		failures = append(failures, nativeprovider.Failure("sources", "is required: the private network (or zone) to book the address in"))
	}
	if a := nativeprovider.String(news, "address"); a != "" && net.ParseIP(a) == nil {
		if _, _, err := net.ParseCIDR(a); err != nil {
			failures = append(failures, nativeprovider.Failure("address", "must be an IP address or CIDR"))
		}
	}
	return news, failures
}

var ipComputed = []string{"address", "addressCidr", "createdAt", "updatedAt", "resources", "reverses", "zone"}

func (i ip) Create(ctx context.Context, inputs resource.PropertyMap, preview bool) (string, resource.PropertyMap, error) {
	outs := inputs.Copy()
	if preview {
		nativeprovider.Computed(outs, ipComputed...)
		return "", outs, nil
	}
	client, err := i.api()
	if err != nil {
		return "", nil, err
	}
	region := i.region(inputs)
	req := &ipam.BookIPRequest{Region: region, ProjectID: i.projectID(inputs), IsIPv6: nativeprovider.Bool(inputs, "isIpv6"), Tags: nativeprovider.Strings(inputs, "tags")}
	if req.Tags == nil {
		req.Tags = []string{}
	}
	if a := nativeprovider.String(inputs, "address"); a != "" {
		parsed, _, err := net.ParseCIDR(a)
		if err != nil {
			parsed = net.ParseIP(a)
		}
		req.Address = &parsed
	}
	// Upstream's expandIPSource reads the first source block.
	source := nativeprovider.Maps(inputs, "sources")[0]
	req.Source = &ipam.Source{}
	if z := nativeprovider.String(source, "zonal"); z != "" {
		req.Source.Zonal = &z
	}
	if pn := nativeprovider.String(source, "privateNetworkId"); pn != "" {
		bare := bareID(pn)
		req.Source.PrivateNetworkID = &bare
	}
	if subnet := nativeprovider.String(source, "subnetId"); subnet != "" {
		req.Source.SubnetID = &subnet
	}
	booked, err := ipam.NewAPI(client).BookIP(req, scw.WithContext(ctx))
	if err != nil {
		return "", nil, err
	}
	return regionalID(booked.Region, booked.ID), ipOutputs(outs, booked), nil
}

func (i ip) Update(ctx context.Context, id string, olds, inputs resource.PropertyMap, preview bool) (resource.PropertyMap, error) {
	outs := inputs.Copy()
	if preview {
		return outs, nil
	}
	client, err := i.api()
	if err != nil {
		return nil, err
	}
	region, bare := splitID(id)
	if !slices.Equal(nativeprovider.Strings(olds, "tags"), nativeprovider.Strings(inputs, "tags")) {
		tags := nativeprovider.Strings(inputs, "tags")
		if tags == nil {
			tags = []string{}
		}
		if _, err := ipam.NewAPI(client).UpdateIP(&ipam.UpdateIPRequest{Region: scw.Region(region), IPID: bare, Tags: &tags}, scw.WithContext(ctx)); err != nil {
			return nil, err
		}
	}
	found, exists, err := i.Read(ctx, id, outs)
	if err != nil {
		return nil, err
	}
	if !exists {
		return nil, fmt.Errorf("ip %s disappeared during the update", id)
	}
	return found, nil
}

func (i ip) Read(ctx context.Context, id string, olds resource.PropertyMap) (resource.PropertyMap, bool, error) {
	client, err := i.api()
	if err != nil {
		return nil, false, err
	}
	region, bare := splitID(id)
	found, err := ipam.NewAPI(client).GetIP(&ipam.GetIPRequest{Region: scw.Region(region), IPID: bare}, scw.WithContext(ctx))
	if isNotFound(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return ipOutputs(olds.Copy(), found), true, nil
}

func (i ip) Delete(ctx context.Context, id string, _ resource.PropertyMap) error {
	client, err := i.api()
	if err != nil {
		return err
	}
	region, bare := splitID(id)
	err = ipam.NewAPI(client).ReleaseIP(&ipam.ReleaseIPRequest{Region: scw.Region(region), IPID: bare}, scw.WithContext(ctx))
	if err != nil && !isNotFound(err) {
		return err
	}
	return nil
}

// ipOutputs is what upstream's setIPAMIPState records: the address without its prefix and with it
// (addressCidr), the attached resource, the reverses and the zone of a zonal address.
func ipOutputs(outs resource.PropertyMap, found *ipam.IP) resource.PropertyMap {
	outs["address"] = resource.NewStringProperty(found.Address.IP.String())
	outs["addressCidr"] = resource.NewStringProperty(found.Address.String())
	outs["isIpv6"] = resource.NewBoolProperty(found.IsIPv6)
	outs["projectId"] = resource.NewStringProperty(found.ProjectID)
	outs["region"] = resource.NewStringProperty(found.Region.String())
	outs["tags"] = stringsProperty(found.Tags)
	outs["createdAt"] = timeProperty(found.CreatedAt)
	outs["updatedAt"] = timeProperty(found.UpdatedAt)
	zone := ""
	if found.Zone != nil {
		zone = found.Zone.String()
	}
	outs["zone"] = resource.NewStringProperty(zone)
	var resources []resource.PropertyValue
	if r := found.Resource; r != nil {
		mac, name := "", ""
		if r.MacAddress != nil {
			mac = *r.MacAddress
		}
		if r.Name != nil {
			name = *r.Name
		}
		resources = append(resources, resource.NewObjectProperty(resource.PropertyMap{
			"type": resource.NewStringProperty(r.Type.String()), "id": resource.NewStringProperty(r.ID),
			"macAddress": resource.NewStringProperty(mac), "name": resource.NewStringProperty(name),
		}))
	}
	outs["resources"] = arrayOf(resources)
	var reverses []resource.PropertyValue
	for _, r := range found.Reverses {
		address := ""
		if r.Address != nil {
			address = r.Address.String()
		}
		reverses = append(reverses, resource.NewObjectProperty(resource.PropertyMap{
			"hostname": resource.NewStringProperty(r.Hostname), "address": resource.NewStringProperty(address),
		}))
	}
	outs["reverses"] = arrayOf(reverses)
	return outs
}
