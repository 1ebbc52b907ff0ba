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

// getImage follows terraform-provider-hcloud's hcloud_image data source (internal/image/data_source.go,
// v1.66.1; docs: website/docs/d/image.html.md): by id; else by name for `withArchitecture`
// (default x86); else by `withSelector` among images of that architecture (and `withStatuses`,
// `includeDeprecated`), which must match one image unless `mostRecent` picks the newest created.
func (c *cloud) getImage(ctx context.Context, args resource.PropertyMap) (resource.PropertyMap, error) {
	api, err := c.api()
	if err != nil {
		return nil, err
	}
	architecture := hcloud.Architecture(nativeprovider.String(args, "withArchitecture"))
	if architecture == "" {
		architecture = hcloud.ArchitectureX86
	}
	var statuses []hcloud.ImageStatus
	if v, ok := args["withStatuses"]; ok && v.IsArray() {
		for _, s := range v.ArrayValue() {
			if s.IsString() {
				statuses = append(statuses, hcloud.ImageStatus(s.StringValue()))
			}
		}
	}
	i, err := finder[hcloud.Image]{
		kind: "image",
		byID: func(ctx context.Context, id int64) (*hcloud.Image, error) {
			i, _, err := api.Image.GetByID(ctx, id)
			return i, err
		},
		byName: func(ctx context.Context, name string) (*hcloud.Image, error) {
			i, _, err := api.Image.GetByNameAndArchitecture(ctx, name, architecture)
			return i, err
		},
		bySelector: func(ctx context.Context, selector string) ([]*hcloud.Image, error) {
			return api.Image.AllWithOpts(ctx, hcloud.ImageListOpts{
				ListOpts:          hcloud.ListOpts{LabelSelector: selector},
				Architecture:      []hcloud.Architecture{architecture},
				Status:            statuses,
				IncludeDeprecated: nativeprovider.Bool(args, "includeDeprecated"),
			})
		},
		id:      func(i *hcloud.Image) int64 { return i.ID },
		created: func(i *hcloud.Image) time.Time { return i.Created },
	}.find(ctx, args)
	if err != nil {
		return nil, err
	}
	out := imageProperties(i)
	copyLookupArgs(out, args)
	for _, k := range []resource.PropertyKey{"withArchitecture", "withStatuses", "includeDeprecated"} {
		if v, ok := args[k]; ok {
			out[k] = v
		}
	}
	return out, nil
}

// imageProperties is an image in @pulumi/hcloud's GetImageResult shape.
func imageProperties(i *hcloud.Image) resource.PropertyMap {
	labels := resource.PropertyMap{}
	for k, v := range i.Labels {
		labels[resource.PropertyKey(k)] = resource.NewStringProperty(v)
	}
	deprecated := ""
	if !i.Deprecated.IsZero() {
		deprecated = i.Deprecated.Format(time.RFC3339)
	}
	return resource.PropertyMap{
		"id":           resource.NewNumberProperty(float64(i.ID)),
		"name":         resource.NewStringProperty(i.Name),
		"type":         resource.NewStringProperty(string(i.Type)),
		"architecture": resource.NewStringProperty(string(i.Architecture)),
		"created":      resource.NewStringProperty(i.Created.Format(time.RFC3339)),
		"deprecated":   resource.NewStringProperty(deprecated),
		"description":  resource.NewStringProperty(i.Description),
		"osFlavor":     resource.NewStringProperty(i.OSFlavor),
		"osVersion":    resource.NewStringProperty(i.OSVersion),
		"rapidDeploy":  resource.NewBoolProperty(i.RapidDeploy),
		"labels":       resource.NewObjectProperty(labels),
	}
}
