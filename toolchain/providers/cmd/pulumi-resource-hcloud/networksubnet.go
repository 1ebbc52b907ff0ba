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

// networkSubnet is hcloud.NetworkSubnet, id `<networkId>-<ipRange>` as upstream. It has no update:
// every argument replaces it (terraform-provider-hcloud network/resource_subnet.go).
type networkSubnet struct{ *cloud }

func (networkSubnet) ReplaceKeys() []string {
	return []string{"networkId", "type", "networkZone", "ipRange", "vswitchId"}
}

var subnetTypes = map[string]hcloud.NetworkSubnetType{
	"cloud":   hcloud.NetworkSubnetTypeCloud,
	"server":  hcloud.NetworkSubnetTypeServer,
	"vswitch": hcloud.NetworkSubnetTypeVSwitch,
}

func (networkSubnet) Check(news resource.PropertyMap) (resource.PropertyMap, []*pulumirpc.CheckFailure) {
	var failures []*pulumirpc.CheckFailure
	if !news.ContainsUnknowns() {
		if _, ok := subnetTypes[nativeprovider.String(news, "type")]; !ok {
			failures = append(failures, nativeprovider.Failure("type", "must be one of cloud, server, vswitch"))
		}
		if nativeprovider.String(news, "networkZone") == "" {
			failures = append(failures, nativeprovider.Failure("networkZone", "is required (e.g. eu-central)"))
		}
		if _, _, err := net.ParseCIDR(nativeprovider.String(news, "ipRange")); err != nil {
			failures = append(failures, nativeprovider.Failure("ipRange", "must be an IPv4 CIDR inside the network's range"))
		}
	}
	return news, failures
}

func subnetID(networkID int64, ipRange string) string {
	return fmt.Sprintf("%d-%s", networkID, ipRange)
}

func parseSubnetID(id string) (int64, string, error) {
	network, ipRange, ok := strings.Cut(id, "-")
	if !ok {
		return 0, "", fmt.Errorf("subnet id %q: must be <networkId>-<ipRange>", id)
	}
	networkID, err := parseID("network", network)
	return networkID, ipRange, err
}

func (s networkSubnet) Create(ctx context.Context, inputs resource.PropertyMap, preview bool) (string, resource.PropertyMap, error) {
	outs := inputs.Copy()
	if preview {
		nativeprovider.Computed(outs, "gateway")
		return "", outs, nil
	}
	api, err := s.api()
	if err != nil {
		return "", nil, err
	}
	networkID := int64(nativeprovider.Number(inputs, "networkId"))
	_, ipRange, _ := net.ParseCIDR(nativeprovider.String(inputs, "ipRange"))
	subnet := hcloud.NetworkSubnet{
		Type:        subnetTypes[nativeprovider.String(inputs, "type")],
		NetworkZone: hcloud.NetworkZone(nativeprovider.String(inputs, "networkZone")),
		IPRange:     ipRange,
	}
	if nativeprovider.Has(inputs, "vswitchId") {
		subnet.VSwitchID = int64(nativeprovider.Number(inputs, "vswitchId"))
	}
	if err := s.call(ctx, func() (*hcloud.Action, *hcloud.Response, error) {
		return api.Network.AddSubnet(ctx, &hcloud.Network{ID: networkID}, hcloud.NetworkAddSubnetOpts{Subnet: subnet})
	}); err != nil {
		return "", nil, err
	}
	id := subnetID(networkID, ipRange.String())
	read, _, err := s.Read(ctx, id, outs)
	if err != nil {
		return id, outs, err
	}
	return id, read, nil
}

func (networkSubnet) Update(context.Context, string, resource.PropertyMap, resource.PropertyMap, bool) (resource.PropertyMap, error) {
	return nil, fmt.Errorf("a network subnet has no in-place update: every argument replaces it")
}

func (s networkSubnet) Read(ctx context.Context, id string, olds resource.PropertyMap) (resource.PropertyMap, bool, error) {
	api, err := s.api()
	if err != nil {
		return nil, false, err
	}
	networkID, ipRange, err := parseSubnetID(id)
	if err != nil {
		return nil, false, err
	}
	found, _, err := api.Network.GetByID(ctx, networkID)
	if err != nil || found == nil {
		return nil, false, err
	}
	for _, subnet := range found.Subnets {
		if subnet.IPRange != nil && subnet.IPRange.String() == ipRange {
			outs := olds.Copy()
			outs["networkId"] = resource.NewNumberProperty(float64(networkID))
			outs["type"] = resource.NewStringProperty(string(subnet.Type))
			outs["networkZone"] = resource.NewStringProperty(string(subnet.NetworkZone))
			outs["ipRange"] = resource.NewStringProperty(ipRange)
			if subnet.Gateway != nil {
				outs["gateway"] = resource.NewStringProperty(subnet.Gateway.String())
			}
			return outs, true, nil
		}
	}
	return nil, false, nil
}

func (s networkSubnet) Delete(ctx context.Context, id string, _ resource.PropertyMap) error {
	api, err := s.api()
	if err != nil {
		return err
	}
	networkID, ipRange, err := parseSubnetID(id)
	if err != nil {
		return err
	}
	_, cidr, err := net.ParseCIDR(ipRange)
	if err != nil {
		return fmt.Errorf("subnet id %q: %v", id, err)
	}
	err = s.call(ctx, func() (*hcloud.Action, *hcloud.Response, error) {
		return api.Network.DeleteSubnet(ctx, &hcloud.Network{ID: networkID}, hcloud.NetworkDeleteSubnetOpts{Subnet: hcloud.NetworkSubnet{IPRange: cidr}})
	})
	if hcloud.IsError(err, hcloud.ErrorCodeNotFound) {
		return nil
	}
	return err
}
