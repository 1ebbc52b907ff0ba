package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/scaleway/scaleway-sdk-go/api/vpc/v2"
	"github.com/scaleway/scaleway-sdk-go/scw"
	"nodefleet.dev/toolchain/providers/internal/nativeprovider"
)

// privateNetworkDeleteRetry is how long upstream retries a delete the API refuses with 412 (an
// attachment still being removed): internal/services/vpc/helpers.go defaultVPCPrivateNetworkRetryInterval,
// passed as the timeout of retry.RetryContext in private_network.go ResourceVPCPrivateNetworkDelete.
var privateNetworkDeleteRetry = 30 * time.Second

// privateNetworkDeletePoll is how often the double retries within that time.
var privateNetworkDeletePoll = time.Second

// privateNetwork is scaleway.network.PrivateNetwork, after terraform-provider-scaleway's
// internal/services/vpc/private_network.go: a new ipv4Subnet or ipv6Subnets subnet, vpcId,
// projectId or region replaces it (ForceNew); name, tags and enableDefaultRoutePropagation update
// in place.
type privateNetwork struct{ *cloud }

func (privateNetwork) ReplaceKeys() []string {
	return []string{"ipv4Subnet", "ipv6Subnets", "projectId", "region", "vpcId"}
}

// NameKey: a replacement deletes the old network first when the name is explicit (see nativeprovider.Named).
func (privateNetwork) NameKey() string { return "name" }

func (privateNetwork) Check(news resource.PropertyMap) (resource.PropertyMap, []*pulumirpc.CheckFailure) {
	var failures []*pulumirpc.CheckFailure
	if news.ContainsUnknowns() {
		return news, nil
	}
	if subnet := nativeprovider.String(nativeprovider.Object(news, "ipv4Subnet"), "subnet"); subnet != "" {
		if _, _, err := net.ParseCIDR(subnet); err != nil {
			failures = append(failures, nativeprovider.Failure("ipv4Subnet.subnet", "must be an IPv4 CIDR such as 172.16.0.0/22"))
		}
	}
	return news, failures
}

func (p privateNetwork) Create(ctx context.Context, inputs resource.PropertyMap, preview bool) (string, resource.PropertyMap, error) {
	outs := inputs.Copy()
	if preview {
		nativeprovider.Computed(outs, "createdAt", "updatedAt", "organizationId", "srn", "vpcId")
		return "", outs, nil
	}
	client, err := p.api()
	if err != nil {
		return "", nil, err
	}
	region := p.region(inputs)
	name := nativeprovider.String(inputs, "name")
	if name == "" {
		name = generatedName("pn")
	}
	req := &vpc.CreatePrivateNetworkRequest{
		Region: region, Name: name, Tags: nativeprovider.Strings(inputs, "tags"), ProjectID: p.projectID(inputs),
		DefaultRoutePropagationEnabled: nativeprovider.Bool(inputs, "enableDefaultRoutePropagation"),
	}
	if req.Tags == nil {
		req.Tags = []string{}
	}
	if vpcID := nativeprovider.String(inputs, "vpcId"); vpcID != "" {
		bare := bareID(vpcID)
		req.VpcID = &bare
	}
	subnets := []string{nativeprovider.String(nativeprovider.Object(inputs, "ipv4Subnet"), "subnet")}
	for _, s := range nativeprovider.Maps(inputs, "ipv6Subnets") {
		subnets = append(subnets, nativeprovider.String(s, "subnet"))
	}
	for _, s := range subnets {
		if s == "" {
			continue
		}
		_, ipNet, err := net.ParseCIDR(s)
		if err != nil {
			return "", nil, fmt.Errorf("subnet %q: %w", s, err)
		}
		req.Subnets = append(req.Subnets, scw.IPNet{IPNet: *ipNet})
	}
	created, err := vpc.NewAPI(client).CreatePrivateNetwork(req, scw.WithContext(ctx))
	if err != nil {
		return "", nil, err
	}
	id := regionalID(region, created.ID)
	return id, privateNetworkOutputs(outs, created), nil
}

func (p privateNetwork) Update(ctx context.Context, id string, _, inputs resource.PropertyMap, preview bool) (resource.PropertyMap, error) {
	outs := inputs.Copy()
	if preview {
		return outs, nil
	}
	client, err := p.api()
	if err != nil {
		return nil, err
	}
	region, bare := splitID(id)
	name := nativeprovider.String(inputs, "name")
	tags := nativeprovider.Strings(inputs, "tags")
	if tags == nil {
		tags = []string{}
	}
	propagation := nativeprovider.Bool(inputs, "enableDefaultRoutePropagation")
	updated, err := vpc.NewAPI(client).UpdatePrivateNetwork(&vpc.UpdatePrivateNetworkRequest{
		Region: scw.Region(region), PrivateNetworkID: bare, Name: &name, Tags: &tags, DefaultRoutePropagationEnabled: &propagation,
	}, scw.WithContext(ctx))
	if err != nil {
		return nil, err
	}
	return privateNetworkOutputs(outs, updated), nil
}

func (p privateNetwork) Read(ctx context.Context, id string, olds resource.PropertyMap) (resource.PropertyMap, bool, error) {
	client, err := p.api()
	if err != nil {
		return nil, false, err
	}
	region, bare := splitID(id)
	found, err := vpc.NewAPI(client).GetPrivateNetwork(&vpc.GetPrivateNetworkRequest{Region: scw.Region(region), PrivateNetworkID: bare}, scw.WithContext(ctx))
	if isNotFound(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return privateNetworkOutputs(olds.Copy(), found), true, nil
}

// Delete retries a 412 for up to 30 s and takes a 404 as already gone.
func (p privateNetwork) Delete(ctx context.Context, id string, _ resource.PropertyMap) error {
	client, err := p.api()
	if err != nil {
		return err
	}
	region, bare := splitID(id)
	deadline := time.Now().Add(privateNetworkDeleteRetry)
	for {
		err := vpc.NewAPI(client).DeletePrivateNetwork(&vpc.DeletePrivateNetworkRequest{Region: scw.Region(region), PrivateNetworkID: bare}, scw.WithContext(ctx))
		var response *scw.ResponseError
		var precondition *scw.PreconditionFailedError
		retryable := errors.As(err, &precondition) || (errors.As(err, &response) && response.StatusCode == 412)
		switch {
		case err == nil || isNotFound(err):
			return nil
		case !retryable || time.Now().After(deadline):
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(privateNetworkDeletePoll):
		}
	}
}

// privateNetworkOutputs is what upstream's setPrivateNetworkState records.
func privateNetworkOutputs(outs resource.PropertyMap, pn *vpc.PrivateNetwork) resource.PropertyMap {
	outs["name"] = resource.NewStringProperty(pn.Name)
	outs["tags"] = stringsProperty(pn.Tags)
	outs["region"] = resource.NewStringProperty(pn.Region.String())
	outs["projectId"] = resource.NewStringProperty(pn.ProjectID)
	outs["organizationId"] = resource.NewStringProperty(pn.OrganizationID)
	outs["vpcId"] = resource.NewStringProperty(regionalID(pn.Region, pn.VpcID))
	outs["enableDefaultRoutePropagation"] = resource.NewBoolProperty(pn.DefaultRoutePropagationEnabled)
	outs["isRegional"] = resource.NewBoolProperty(true)
	outs["srn"] = resource.NewStringProperty(pn.Srn)
	outs["createdAt"] = timeProperty(pn.CreatedAt)
	outs["updatedAt"] = timeProperty(pn.UpdatedAt)
	var v6 []resource.PropertyValue
	for _, s := range pn.Subnets {
		block := subnetProperty(s)
		if s.Subnet.IP.To4() != nil {
			outs["ipv4Subnet"] = block
		} else {
			v6 = append(v6, block)
		}
	}
	outs["ipv6Subnets"] = arrayOf(v6)
	return outs
}

func subnetProperty(s *vpc.Subnet) resource.PropertyValue {
	ones, _ := s.Subnet.Mask.Size()
	return resource.NewObjectProperty(resource.PropertyMap{
		"id":           resource.NewStringProperty(s.ID),
		"subnet":       resource.NewStringProperty(s.Subnet.String()),
		"address":      resource.NewStringProperty(s.Subnet.IP.String()),
		"subnetMask":   resource.NewStringProperty(net.IP(s.Subnet.Mask).String()),
		"prefixLength": resource.NewNumberProperty(float64(ones)),
		"srn":          resource.NewStringProperty(s.Srn),
		"createdAt":    timeProperty(s.CreatedAt),
		"updatedAt":    timeProperty(s.UpdatedAt),
	})
}

// getPrivateNetwork finds a private network by id, else by name (and vpcId, projectId) in the
// region, as upstream's private_network_data_source.go does: one list call (its first page, as
// upstream asks for no more) and datasource.FindExact's errors (internal/datasource/search.go),
// whose "no element found with the name" the pool reads as "free to create".
func (c *cloud) getPrivateNetwork(ctx context.Context, args resource.PropertyMap) (resource.PropertyMap, error) {
	client, err := c.api()
	if err != nil {
		return nil, err
	}
	api := vpc.NewAPI(client)
	region := c.region(args)
	var found *vpc.PrivateNetwork
	if id := nativeprovider.String(args, "privateNetworkId"); id != "" {
		if found, err = api.GetPrivateNetwork(&vpc.GetPrivateNetworkRequest{Region: region, PrivateNetworkID: bareID(id)}, scw.WithContext(ctx)); err != nil {
			return nil, err
		}
	} else {
		name := nativeprovider.String(args, "name")
		req := &vpc.ListPrivateNetworksRequest{Region: region, Name: &name}
		if vpcID := nativeprovider.String(args, "vpcId"); vpcID != "" {
			bare := bareID(vpcID)
			req.VpcID = &bare
		}
		if project := nativeprovider.String(args, "projectId"); project != "" {
			req.ProjectID = &project
		}
		list, err := api.ListPrivateNetworks(req, scw.WithContext(ctx))
		if err != nil {
			return nil, err
		}
		var matches []*vpc.PrivateNetwork
		for _, pn := range list.PrivateNetworks {
			if pn.Name == name {
				matches = append(matches, pn)
			}
		}
		switch {
		case len(matches) == 0:
			return nil, fmt.Errorf("no element found with the name %s", name)
		case len(matches) > 1:
			return nil, fmt.Errorf("multiple elements found with the name %s", name)
		}
		found = matches[0]
	}
	out := privateNetworkOutputs(resource.PropertyMap{}, found)
	id := regionalID(found.Region, found.ID)
	out["id"] = resource.NewStringProperty(id)
	out["privateNetworkId"] = resource.NewStringProperty(id)
	var v4 []resource.PropertyValue
	if block, ok := out["ipv4Subnet"]; ok {
		v4 = append(v4, block)
		delete(out, "ipv4Subnet")
	}
	out["ipv4Subnets"] = arrayOf(v4)
	return out, nil
}
