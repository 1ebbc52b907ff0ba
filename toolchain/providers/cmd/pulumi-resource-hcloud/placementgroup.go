package main

import (
	"context"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"nodefleet.dev/toolchain/providers/internal/nativeprovider"
)

// placementGroup is hcloud.PlacementGroup: name and labels update in place. `type` is not ForceNew
// upstream (terraform-provider-hcloud placementgroup/resource.go) and spread is its only value, so
// it can never change.
type placementGroup struct{ *cloud }

func (placementGroup) ReplaceKeys() []string { return nil }

// NameKey: a replacement deletes the old placement group first when the name is explicit (see nativeprovider.Named).
func (placementGroup) NameKey() string { return "name" }

func (placementGroup) Check(news resource.PropertyMap) (resource.PropertyMap, []*pulumirpc.CheckFailure) {
	if news.ContainsUnknowns() {
		return news, nil
	}
	failures := labelFailures(news)
	if nativeprovider.String(news, "type") != string(hcloud.PlacementGroupTypeSpread) {
		failures = append(failures, nativeprovider.Failure("type", "must be spread (the only placement group type)"))
	}
	return news, failures
}

func (p placementGroup) Create(ctx context.Context, inputs resource.PropertyMap, preview bool) (string, resource.PropertyMap, error) {
	outs := inputs.Copy()
	if preview {
		nativeprovider.Computed(outs, "servers")
		return "", outs, nil
	}
	api, err := p.api()
	if err != nil {
		return "", nil, err
	}
	created, _, err := api.PlacementGroup.Create(ctx, hcloud.PlacementGroupCreateOpts{
		Name:   nativeprovider.String(inputs, "name"),
		Labels: nativeprovider.StringMap(inputs, "labels"),
		Type:   hcloud.PlacementGroupTypeSpread,
	})
	if err != nil {
		return "", nil, err
	}
	if err := p.wait(ctx, created.Action); err != nil {
		return formatID(created.PlacementGroup.ID), outs, err
	}
	return formatID(created.PlacementGroup.ID), placementGroupOutputs(outs, created.PlacementGroup), nil
}

func (p placementGroup) Update(ctx context.Context, id string, _, inputs resource.PropertyMap, preview bool) (resource.PropertyMap, error) {
	outs := inputs.Copy()
	if preview {
		return outs, nil
	}
	api, err := p.api()
	if err != nil {
		return nil, err
	}
	groupID, err := parseID("placement group", id)
	if err != nil {
		return nil, err
	}
	updated, _, err := api.PlacementGroup.Update(ctx, &hcloud.PlacementGroup{ID: groupID}, hcloud.PlacementGroupUpdateOpts{
		Name:   nativeprovider.String(inputs, "name"),
		Labels: nativeprovider.StringMap(inputs, "labels"),
	})
	if err != nil {
		return nil, err
	}
	return placementGroupOutputs(outs, updated), nil
}

func (p placementGroup) Read(ctx context.Context, id string, olds resource.PropertyMap) (resource.PropertyMap, bool, error) {
	api, err := p.api()
	if err != nil {
		return nil, false, err
	}
	groupID, err := parseID("placement group", id)
	if err != nil {
		return nil, false, err
	}
	found, _, err := api.PlacementGroup.GetByID(ctx, groupID)
	if err != nil || found == nil {
		return nil, false, err
	}
	outs := placementGroupOutputs(olds.Copy(), found)
	outs["name"] = resource.NewStringProperty(found.Name)
	outs["labels"] = labelsProperty(found.Labels)
	return outs, true, nil
}

func (p placementGroup) Delete(ctx context.Context, id string, _ resource.PropertyMap) error {
	api, err := p.api()
	if err != nil {
		return err
	}
	groupID, err := parseID("placement group", id)
	if err != nil {
		return err
	}
	// A group already gone is an error, as upstream (placementgroup/resource.go): a refresh drops it.
	_, err = api.PlacementGroup.Delete(ctx, &hcloud.PlacementGroup{ID: groupID})
	return err
}

func placementGroupOutputs(outs resource.PropertyMap, group *hcloud.PlacementGroup) resource.PropertyMap {
	servers := []resource.PropertyValue{}
	if group != nil {
		for _, id := range group.Servers {
			servers = append(servers, resource.NewNumberProperty(float64(id)))
		}
	}
	outs["servers"] = resource.NewArrayProperty(servers)
	return outs
}
