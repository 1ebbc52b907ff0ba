package main

import (
	"maps"
	"slices"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"nodefleet.dev/toolchain/providers/internal/nativeprovider"
)

// labelFailures checks `labels` at Check with hcloud-go's label rules, the validator
// terraform-provider-hcloud attaches to Network's, Firewall's and PlacementGroup's labels, so a
// bad key or value fails the preview instead of the API call.
func labelFailures(news resource.PropertyMap) []*pulumirpc.CheckFailure {
	if labels, ok := news["labels"]; !ok || labels.ContainsUnknowns() {
		return nil
	}
	var failures []*pulumirpc.CheckFailure
	labels := nativeprovider.StringMap(news, "labels")
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		if ok, err := hcloud.ValidateResourceLabels(map[string]any{k: labels[k]}); !ok {
			failures = append(failures, nativeprovider.Failure("labels."+k, err.Error()+" (keys: an optional DNS prefix and /, then up to 63 of [A-Za-z0-9-_.] starting and ending alphanumeric; values: the same, or empty)"))
		}
	}
	return failures
}
