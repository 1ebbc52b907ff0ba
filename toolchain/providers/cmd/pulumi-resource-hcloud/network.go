package main

import (
	"context"
	"net"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"nodefleet.dev/toolchain/providers/internal/nativeprovider"
)

// network is hcloud.Network: name, labels, protection and vSwitch routes update in place; a new
// ip_range replaces it (terraform-provider-hcloud network/resource.go: ip_range ForceNew).
type network struct{ *cloud }

func (network) ReplaceKeys() []string { return []string{"ipRange"} }

// NameKey: a replacement deletes the old network first when the name is explicit (see nativeprovider.Named).
func (network) NameKey() string { return "name" }

func (network) Check(news resource.PropertyMap) (resource.PropertyMap, []*pulumirpc.CheckFailure) {
	var failures []*pulumirpc.CheckFailure
	if !news.ContainsUnknowns() {
		failures = labelFailures(news)
		if nativeprovider.String(news, "name") == "" {
			failures = append(failures, nativeprovider.Failure("name", "is required"))
		}
		if _, _, err := net.ParseCIDR(nativeprovider.String(news, "ipRange")); err != nil {
			failures = append(failures, nativeprovider.Failure("ipRange", "must be an IPv4 CIDR such as 10.0.0.0/16"))
		}
	}
	return news, failures
}

func (n network) Create(ctx context.Context, inputs resource.PropertyMap, preview bool) (string, resource.PropertyMap, error) {
	outs := inputs.Copy()
	if preview {
		return "", outs, nil
	}
	api, err := n.api()
	if err != nil {
		return "", nil, err
	}
	_, ipRange, _ := net.ParseCIDR(nativeprovider.String(inputs, "ipRange"))
	created, _, err := api.Network.Create(ctx, hcloud.NetworkCreateOpts{
		Name:                  nativeprovider.String(inputs, "name"),
		IPRange:               ipRange,
		Labels:                nativeprovider.StringMap(inputs, "labels"),
		ExposeRoutesToVSwitch: nativeprovider.Bool(inputs, "exposeRoutesToVswitch"),
	})
	if err != nil {
		return "", nil, err
	}
	if nativeprovider.Bool(inputs, "deleteProtection") {
		if err := n.call(ctx, func() (*hcloud.Action, *hcloud.Response, error) {
			return api.Network.ChangeProtection(ctx, created, hcloud.NetworkChangeProtectionOpts{Delete: hcloud.Ptr(true)})
		}); err != nil {
			return formatID(created.ID), outs, err
		}
	}
	return formatID(created.ID), networkOutputs(outs, created), nil
}

func (n network) Update(ctx context.Context, id string, olds, inputs resource.PropertyMap, preview bool) (resource.PropertyMap, error) {
	outs := inputs.Copy()
	if preview {
		return outs, nil
	}
	api, err := n.api()
	if err != nil {
		return nil, err
	}
	networkID, err := parseID("network", id)
	if err != nil {
		return nil, err
	}
	current := &hcloud.Network{ID: networkID}
	updated, _, err := api.Network.Update(ctx, current, hcloud.NetworkUpdateOpts{
		Name:                  nativeprovider.String(inputs, "name"),
		Labels:                nativeprovider.StringMap(inputs, "labels"),
		ExposeRoutesToVSwitch: hcloud.Ptr(nativeprovider.Bool(inputs, "exposeRoutesToVswitch")),
	})
	if err != nil {
		return nil, err
	}
	if nativeprovider.Bool(olds, "deleteProtection") != nativeprovider.Bool(inputs, "deleteProtection") {
		if err := n.call(ctx, func() (*hcloud.Action, *hcloud.Response, error) {
			return api.Network.ChangeProtection(ctx, current, hcloud.NetworkChangeProtectionOpts{Delete: hcloud.Ptr(nativeprovider.Bool(inputs, "deleteProtection"))})
		}); err != nil {
			return nil, err
		}
	}
	return networkOutputs(outs, updated), nil
}

func (n network) Read(ctx context.Context, id string, olds resource.PropertyMap) (resource.PropertyMap, bool, error) {
	api, err := n.api()
	if err != nil {
		return nil, false, err
	}
	networkID, err := parseID("network", id)
	if err != nil {
		return nil, false, err
	}
	found, _, err := api.Network.GetByID(ctx, networkID)
	if err != nil || found == nil {
		return nil, false, err
	}
	return networkOutputs(olds.Copy(), found), true, nil
}

func (n network) Delete(ctx context.Context, id string, _ resource.PropertyMap) error {
	api, err := n.api()
	if err != nil {
		return err
	}
	networkID, err := parseID("network", id)
	if err != nil {
		return err
	}
	_, err = api.Network.Delete(ctx, &hcloud.Network{ID: networkID})
	if hcloud.IsError(err, hcloud.ErrorCodeNotFound) {
		return nil
	}
	return err
}

func networkOutputs(outs resource.PropertyMap, n *hcloud.Network) resource.PropertyMap {
	if n == nil {
		return outs
	}
	outs["name"] = resource.NewStringProperty(n.Name)
	if n.IPRange != nil {
		outs["ipRange"] = resource.NewStringProperty(n.IPRange.String())
	}
	outs["labels"] = labelsProperty(n.Labels)
	outs["deleteProtection"] = resource.NewBoolProperty(n.Protection.Delete)
	outs["exposeRoutesToVswitch"] = resource.NewBoolProperty(n.ExposeRoutesToVSwitch)
	return outs
}
