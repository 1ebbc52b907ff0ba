package main

import (
	"context"
	"fmt"
	"net"
	"strings"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"nodefleet.dev/toolchain/providers/internal/nativeprovider"
)

// networkRoute is hcloud.NetworkRoute, id `<networkId>-<destination>` as upstream. It has no update:
// every argument replaces it (terraform-provider-hcloud internal/network/resource_route.go). nodefleet
// declares one, 0.0.0.0/0 via the fleet's NAT gateway, for pools without public IPv4.
type networkRoute struct{ *cloud }

func (networkRoute) ReplaceKeys() []string {
	return []string{"networkId", "destination", "gateway"}
}

func (networkRoute) Check(news resource.PropertyMap) (resource.PropertyMap, []*pulumirpc.CheckFailure) {
	var failures []*pulumirpc.CheckFailure
	if !news.ContainsUnknowns() {
		if !nativeprovider.Has(news, "networkId") {
			failures = append(failures, nativeprovider.Failure("networkId", "is required (the id of the network the route belongs to)"))
		}
		if _, _, err := net.ParseCIDR(nativeprovider.String(news, "destination")); err != nil {
			failures = append(failures, nativeprovider.Failure("destination", "must be a CIDR such as 0.0.0.0/0"))
		}
		if net.ParseIP(nativeprovider.String(news, "gateway")) == nil {
			failures = append(failures, nativeprovider.Failure("gateway", "must be an IP address inside the network's range"))
		}
	}
	return news, failures
}

func routeID(networkID int64, destination string) string {
	return fmt.Sprintf("%d-%s", networkID, destination)
}

func parseRouteID(id string) (int64, *net.IPNet, error) {
	network, destination, ok := strings.Cut(id, "-")
	if !ok {
		return 0, nil, fmt.Errorf("route id %q: must be <networkId>-<destination>", id)
	}
	networkID, err := parseID("network", network)
	if err != nil {
		return 0, nil, err
	}
	_, cidr, err := net.ParseCIDR(destination)
	if err != nil {
		return 0, nil, fmt.Errorf("route id %q: %v", id, err)
	}
	return networkID, cidr, nil
}

// Create adds the route, retrying while the network is busy (conflict), five tries as upstream.
func (r networkRoute) Create(ctx context.Context, inputs resource.PropertyMap, preview bool) (string, resource.PropertyMap, error) {
	outs := inputs.Copy()
	if preview {
		return "", outs, nil
	}
	api, err := r.api()
	if err != nil {
		return "", nil, err
	}
	networkID := int64(nativeprovider.Number(inputs, "networkId"))
	_, destination, _ := net.ParseCIDR(nativeprovider.String(inputs, "destination"))
	route := hcloud.NetworkRoute{Destination: destination, Gateway: net.ParseIP(nativeprovider.String(inputs, "gateway"))}
	var action *hcloud.Action
	if err := retry(ctx, 5, func() error {
		var err error
		action, _, err = api.Network.AddRoute(ctx, &hcloud.Network{ID: networkID}, hcloud.NetworkAddRouteOpts{Route: route})
		if err == nil || hcloud.IsError(err, hcloud.ErrorCodeConflict) {
			return err
		}
		return stop(err)
	}); err != nil {
		return "", nil, err
	}
	return r.readCreated(ctx, action, routeID(networkID, destination.String()), outs, r.Read)
}

func (networkRoute) Update(context.Context, string, resource.PropertyMap, resource.PropertyMap, bool) (resource.PropertyMap, error) {
	return nil, fmt.Errorf("a network route has no in-place update: every argument replaces it")
}

// Read finds the route by its destination in the network; a network or route gone is "does not exist".
func (r networkRoute) Read(ctx context.Context, id string, olds resource.PropertyMap) (resource.PropertyMap, bool, error) {
	api, err := r.api()
	if err != nil {
		return nil, false, err
	}
	networkID, destination, err := parseRouteID(id)
	if err != nil {
		return nil, false, err
	}
	found, _, err := api.Network.GetByID(ctx, networkID)
	if err != nil || found == nil {
		return nil, false, err
	}
	for _, route := range found.Routes {
		if route.Destination != nil && route.Destination.String() == destination.String() {
			outs := olds.Copy()
			outs["networkId"] = resource.NewNumberProperty(float64(networkID))
			outs["destination"] = resource.NewStringProperty(destination.String())
			outs["gateway"] = resource.NewStringProperty(route.Gateway.String())
			return outs, true, nil
		}
	}
	return nil, false, nil
}

// Delete removes the route, retrying while the network is busy (conflict); a route or network
// already gone is deleted, as upstream.
func (r networkRoute) Delete(ctx context.Context, id string, olds resource.PropertyMap) error {
	api, err := r.api()
	if err != nil {
		return err
	}
	networkID, destination, err := parseRouteID(id)
	if err != nil {
		return err
	}
	route := hcloud.NetworkRoute{Destination: destination, Gateway: net.ParseIP(nativeprovider.String(olds, "gateway"))}
	var action *hcloud.Action
	err = retry(ctx, 5, func() error {
		var err error
		action, _, err = api.Network.DeleteRoute(ctx, &hcloud.Network{ID: networkID}, hcloud.NetworkDeleteRouteOpts{Route: route})
		if err == nil || hcloud.IsError(err, hcloud.ErrorCodeConflict) {
			return err
		}
		return stop(err)
	})
	if hcloud.IsError(err, hcloud.ErrorCodeNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	return r.wait(ctx, action)
}
