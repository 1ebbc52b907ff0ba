package main

import (
	"github.com/hetznercloud/hcloud-go/v2/hcloud"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"nodefleet.dev/toolchain/providers/internal/nativeprovider"
)

// labelFailures checks `labels` against Hetzner's rules for label keys and values at Check, as
// upstream's schema does (terraform-provider-hcloud server/resource.go, labels ValidateDiagFunc, on
// hcloud-go's ValidateResourceLabels), so a bad label fails the preview instead of the create.
func labelFailures(news resource.PropertyMap) []*pulumirpc.CheckFailure {
	labels, ok := news["labels"]
	if !ok || labels.ContainsUnknowns() {
		return nil
	}
	values := map[string]any{}
	for k, v := range nativeprovider.StringMap(news, "labels") {
		values[k] = v
	}
	if valid, err := hcloud.ValidateResourceLabels(values); !valid {
		return []*pulumirpc.CheckFailure{nativeprovider.Failure("labels", err.Error()+
			" (a key: up to 63 of [a-zA-Z0-9._-] starting and ending alphanumeric, optionally after a prefix of the same and \"/\";"+
			" a value: empty, or up to 63 of the same starting and ending alphanumeric)")}
	}
	return nil
}
