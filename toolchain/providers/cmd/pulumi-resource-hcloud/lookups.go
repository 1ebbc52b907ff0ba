package main

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"nodefleet.dev/toolchain/providers/internal/nativeprovider"
)

// The look-ups follow the upstream data sources: by id, else by name, else by label selector, where
// a selector must match exactly one object unless mostRecent picks the newest. Unlike upstream, a
// name and a selector together must both hold: the object found by name must match the selector,
// so an ownership check written as `name` + `withSelector` is never silently skipped.

// finder is how one kind of object is looked up.
type finder[T any] struct {
	kind       string
	byID       func(ctx context.Context, id int64) (*T, error)
	byName     func(ctx context.Context, name string) (*T, error)
	bySelector func(ctx context.Context, selector string) ([]*T, error)
	id         func(*T) int64
	created    func(*T) time.Time
}

func (f finder[T]) find(ctx context.Context, args resource.PropertyMap) (*T, error) {
	var found []*T
	identified := true
	switch {
	case nativeprovider.Has(args, "id"):
		item, err := f.byID(ctx, int64(nativeprovider.Number(args, "id")))
		if err != nil {
			return nil, err
		}
		found = appendIf(found, item)
	case nativeprovider.String(args, "name") != "":
		item, err := f.byName(ctx, nativeprovider.String(args, "name"))
		if err != nil {
			return nil, err
		}
		found = appendIf(found, item)
	default:
		identified = false
	}
	if selector := nativeprovider.String(args, "withSelector"); selector != "" {
		matching, err := f.bySelector(ctx, selector)
		if err != nil {
			return nil, err
		}
		found = narrow(found, matching, f.id, identified)
	}
	switch {
	case len(found) == 0:
		return nil, fmt.Errorf("no %s matches the given id, name and selector", f.kind)
	case len(found) > 1 && !nativeprovider.Bool(args, "mostRecent"):
		return nil, fmt.Errorf("%d %ss match: narrow the selector or set mostRecent", len(found), f.kind)
	}
	sort.Slice(found, func(i, j int) bool { return f.created(found[i]).After(f.created(found[j])) })
	return found[0], nil
}

func (c *cloud) getNetwork(ctx context.Context, args resource.PropertyMap) (resource.PropertyMap, error) {
	api, err := c.api()
	if err != nil {
		return nil, err
	}
	n, err := finder[hcloud.Network]{
		kind: "network",
		byID: func(ctx context.Context, id int64) (*hcloud.Network, error) {
			n, _, err := api.Network.GetByID(ctx, id)
			return n, err
		},
		byName: func(ctx context.Context, name string) (*hcloud.Network, error) {
			n, _, err := api.Network.GetByName(ctx, name)
			return n, err
		},
		bySelector: func(ctx context.Context, selector string) ([]*hcloud.Network, error) {
			return api.Network.AllWithOpts(ctx, hcloud.NetworkListOpts{ListOpts: hcloud.ListOpts{LabelSelector: selector}})
		},
		id:      func(n *hcloud.Network) int64 { return n.ID },
		created: func(n *hcloud.Network) time.Time { return n.Created },
	}.find(ctx, args)
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
	f, err := finder[hcloud.Firewall]{
		kind: "firewall",
		byID: func(ctx context.Context, id int64) (*hcloud.Firewall, error) {
			f, _, err := api.Firewall.GetByID(ctx, id)
			return f, err
		},
		byName: func(ctx context.Context, name string) (*hcloud.Firewall, error) {
			f, _, err := api.Firewall.GetByName(ctx, name)
			return f, err
		},
		bySelector: func(ctx context.Context, selector string) ([]*hcloud.Firewall, error) {
			return api.Firewall.AllWithOpts(ctx, hcloud.FirewallListOpts{ListOpts: hcloud.ListOpts{LabelSelector: selector}})
		},
		id:      func(f *hcloud.Firewall) int64 { return f.ID },
		created: func(f *hcloud.Firewall) time.Time { return f.Created },
	}.find(ctx, args)
	if err != nil {
		return nil, err
	}
	out := firewallProperties(f)
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

func copyLookupArgs(out, args resource.PropertyMap) {
	for _, k := range []resource.PropertyKey{"withSelector", "mostRecent"} {
		if v, ok := args[k]; ok {
			out[k] = v
		}
	}
}
