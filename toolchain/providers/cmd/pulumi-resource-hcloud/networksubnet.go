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
		if !nativeprovider.Has(news, "networkId") {
			failures = append(failures, nativeprovider.Failure("networkId", "is required (the id of the network the subnet belongs to)"))
		}
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
	// Upstream (terraform-provider-hcloud internal/network/resource_subnet.go) retries the add while
	// the network is busy (conflict) or the vSwitch is still registered elsewhere, five tries.
	var action *hcloud.Action
	if err := retry(ctx, 5, func() error {
		var err error
		action, _, err = api.Network.AddSubnet(ctx, &hcloud.Network{ID: networkID}, hcloud.NetworkAddSubnetOpts{Subnet: subnet})
		if err == nil || hcloud.IsError(err, hcloud.ErrorCodeConflict, hcloud.ErrorCodeVSwitchAlreadyUsed) {
			return err
		}
		return stop(err)
	}); err != nil {
		return "", nil, err
	}
	// From here the subnet exists: readCreated answers its id even when the wait or the read fails.
	return s.readCreated(ctx, action, subnetID(networkID, ipRange.String()), outs, s.Read)
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

// subnetDeleteTries is upstream's budget for a subnet still in use (ten times its default five);
// with 1s doubling it outlasts any engine timeout, so in practice the delete retries until then.
const subnetDeleteTries = 50

// serversAttached is the API's refusal to remove a subnet servers still use (a service_error whose
// message says so), which upstream retries and, when its tries run out, takes as the network going
// away with the subnet.
func serversAttached(err error) bool {
	return hcloud.IsError(err, hcloud.ErrorCodeServiceError) &&
		(strings.Contains(err.Error(), "servers are attached") || strings.Contains(err.Error(), "network has attached resources"))
}

// Delete retries while the network is busy (conflict, locked) or servers are still attached, as
// upstream does: servers deleted in the same run detach in the background. A subnet or network
// already gone is deleted.
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
	var action *hcloud.Action
	err = retry(ctx, subnetDeleteTries, func() error {
		var err error
		action, _, err = api.Network.DeleteSubnet(ctx, &hcloud.Network{ID: networkID}, hcloud.NetworkDeleteSubnetOpts{Subnet: hcloud.NetworkSubnet{IPRange: cidr}})
		if err == nil || hcloud.IsError(err, hcloud.ErrorCodeConflict, hcloud.ErrorCodeLocked) || serversAttached(err) {
			return err
		}
		return stop(err)
	})
	switch {
	case hcloud.IsError(err, hcloud.ErrorCodeNotFound):
		return nil
	case serversAttached(err):
		// Upstream's choice, kept: the tries ran out with servers attached and it assumes the network
		// is being deleted too (which detaches them). FIDELITY.md records the hazard for a replaced
		// subnet on a surviving network.
		nativeprovider.Log(ctx, fmt.Sprintf("network subnet %s still has servers attached after %d tries; it is dropped from the state on the assumption that its network is deleted as well", id, subnetDeleteTries))
		return nil
	case err != nil:
		return err
	}
	return s.wait(ctx, action)
}
