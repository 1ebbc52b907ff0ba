package main

import (
	"context"
	"fmt"
	"sort"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"nodefleet.dev/toolchain/providers/internal/nativeprovider"
)

// The look-ups follow the upstream data sources: by id, else by name, else by label selector, where
// a selector must match exactly one object unless mostRecent picks the newest. Unlike upstream, a
// name and a selector together must both hold: the object found by name must match the selector,
// so an ownership check written as `name` + `withSelector` is never silently skipped.

func (c *cloud) getNetwork(ctx context.Context, args resource.PropertyMap) (resource.PropertyMap, error) {
	api, err := c.api()
	if err != nil {
		return nil, err
	}
	var found []*hcloud.Network
	switch {
	case nativeprovider.Has(args, "id"):
		n, _, err := api.Network.GetByID(ctx, int64(nativeprovider.Number(args, "id")))
		if err != nil {
			return nil, err
		}
		found = appendIf(found, n)
	case nativeprovider.String(args, "name") != "":
		n, _, err := api.Network.GetByName(ctx, nativeprovider.String(args, "name"))
		if err != nil {
			return nil, err
		}
		found = appendIf(found, n)
	}
	if selector := nativeprovider.String(args, "withSelector"); selector != "" {
		matching, err := api.Network.AllWithOpts(ctx, hcloud.NetworkListOpts{ListOpts: hcloud.ListOpts{LabelSelector: selector}})
		if err != nil {
			return nil, err
		}
		found = narrow(found, matching, func(n *hcloud.Network) int64 { return n.ID }, nativeprovider.Has(args, "id") || nativeprovider.String(args, "name") != "")
	}
	n, err := pick("network", found, nativeprovider.Bool(args, "mostRecent"), func(n *hcloud.Network) int64 { return n.Created.Unix() })
	if err != nil {
		return nil, err
	}
	out := networkOutputs(resource.PropertyMap{}, n)
	out["id"] = resource.NewNumberProperty(float64(n.ID))
	copyLookupArgs(out, args)
	return out, nil
}

func (c *cloud) getFirewall(ctx context.Context, args resource.PropertyMap) (resource.PropertyMap, error) {
	api, err := c.api()
	if err != nil {
		return nil, err
	}
	var found []*hcloud.Firewall
	switch {
	case nativeprovider.Has(args, "id"):
		f, _, err := api.Firewall.GetByID(ctx, int64(nativeprovider.Number(args, "id")))
		if err != nil {
			return nil, err
		}
		found = appendIf(found, f)
	case nativeprovider.String(args, "name") != "":
		f, _, err := api.Firewall.GetByName(ctx, nativeprovider.String(args, "name"))
		if err != nil {
			return nil, err
		}
		found = appendIf(found, f)
	}
	if selector := nativeprovider.String(args, "withSelector"); selector != "" {
		matching, err := api.Firewall.AllWithOpts(ctx, hcloud.FirewallListOpts{ListOpts: hcloud.ListOpts{LabelSelector: selector}})
		if err != nil {
			return nil, err
		}
		found = narrow(found, matching, func(f *hcloud.Firewall) int64 { return f.ID }, nativeprovider.Has(args, "id") || nativeprovider.String(args, "name") != "")
	}
	f, err := pick("firewall", found, nativeprovider.Bool(args, "mostRecent"), func(f *hcloud.Firewall) int64 { return f.Created.Unix() })
	if err != nil {
		return nil, err
	}
	applied := []resource.PropertyValue{}
	for _, r := range f.AppliedTo {
		to := resource.PropertyMap{}
		if r.Server != nil {
			to["server"] = resource.NewNumberProperty(float64(r.Server.ID))
		}
		if r.LabelSelector != nil {
			to["labelSelector"] = resource.NewStringProperty(r.LabelSelector.Selector)
		}
		applied = append(applied, resource.NewObjectProperty(to))
	}
	out := resource.PropertyMap{
		"id":       resource.NewNumberProperty(float64(f.ID)),
		"name":     resource.NewStringProperty(f.Name),
		"labels":   labelsProperty(f.Labels),
		"rules":    rulesProperty(f.Rules),
		"applyTos": resource.NewArrayProperty(applied),
	}
	copyLookupArgs(out, args)
	return out, nil
}

func appendIf[T any](list []*T, item *T) []*T {
	if item != nil {
		return append(list, item)
	}
	return list
}

// narrow keeps the candidates the selector matched; without an id or name the selector's matches are the candidates.
func narrow[T any](candidates, matching []*T, id func(*T) int64, identified bool) []*T {
	if !identified {
		return matching
	}
	matched := map[int64]bool{}
	for _, m := range matching {
		matched[id(m)] = true
	}
	var out []*T
	for _, c := range candidates {
		if matched[id(c)] {
			out = append(out, c)
		}
	}
	return out
}

func pick[T any](kind string, found []*T, mostRecent bool, created func(*T) int64) (*T, error) {
	switch {
	case len(found) == 0:
		return nil, fmt.Errorf("no %s matches the given id, name and selector", kind)
	case len(found) > 1 && !mostRecent:
		return nil, fmt.Errorf("%d %ss match: narrow the selector or set mostRecent", len(found), kind)
	}
	sort.Slice(found, func(i, j int) bool { return created(found[i]) > created(found[j]) })
	return found[0], nil
}

func copyLookupArgs(out, args resource.PropertyMap) {
	for _, k := range []resource.PropertyKey{"withSelector", "mostRecent"} {
		if v, ok := args[k]; ok {
			out[k] = v
		}
	}
}
