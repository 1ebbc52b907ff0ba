package main

import (
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"nodefleet.dev/toolchain/providers/internal/nativeprovider"
)

func serverInputs(extra map[string]any) resource.PropertyMap {
	m := map[string]any{"name": "w1", "serverType": "cax11", "image": "ubuntu-24.04", "location": "fsn1"}
	for k, v := range extra {
		m[k] = v
	}
	return resource.NewPropertyMapFromMap(m)
}

func failureOn(failures []*pulumirpc.CheckFailure, property string) string {
	for _, f := range failures {
		if f.GetProperty() == property {
			return f.GetReason()
		}
	}
	return ""
}

// Hetzner no longer places servers by datacenter: refused at Check, naming location instead.
func TestServerCheckRefusesDatacenter(t *testing.T) {
	_, failures := server{}.Check(serverInputs(map[string]any{"datacenter": "fsn1-dc14"}))
	if reason := failureOn(failures, "datacenter"); !strings.Contains(reason, "not supported") || !strings.Contains(reason, "location") {
		t.Fatalf("datacenter failure = %q, want it refused pointing at location", reason)
	}
	if _, failures := (server{}).Check(serverInputs(nil)); len(failures) != 0 {
		t.Fatalf("a server with a location failed Check: %v", failures)
	}
}

// Labels follow Hetzner's key and value rules at Check, as upstream's schema validates them.
func TestServerCheckValidatesLabels(t *testing.T) {
	for _, labels := range []map[string]any{
		{"nodefleet.io/cluster": "t1", "pool": "a-b_c.d", "empty": ""},
		{"example.com/x": "Y9"},
	} {
		if _, failures := (server{}).Check(serverInputs(map[string]any{"labels": labels})); len(failures) != 0 {
			t.Errorf("labels %v refused: %v", labels, failures)
		}
	}
	for _, labels := range []map[string]any{
		{"-pool": "a"},
		{"pool": "a b"},
		{"pool": strings.Repeat("a", 64)},
		{"a/b/c": "x"},
		{"pool": "ends-with-dash-"},
	} {
		_, failures := server{}.Check(serverInputs(map[string]any{"labels": labels}))
		// One failure per bad label, named labels.<key> (labels.go).
		var key string
		for k := range labels {
			key = k
		}
		if reason := failureOn(failures, "labels."+key); reason == "" {
			t.Errorf("labels %v accepted, want a failure on labels.%s", labels, key)
		}
	}
	unknown := serverInputs(nil)
	unknown["labels"] = resource.MakeComputed(resource.NewStringProperty(""))
	if _, failures := (server{}).Check(unknown); len(failures) != 0 {
		t.Errorf("unknown labels (preview) refused: %v", failures)
	}
}

// The four resources the bridge autonames (a `name` input) are deleted before their replacement.
func TestNamedResourcesDeleteBeforeReplace(t *testing.T) {
	for what, r := range map[string]nativeprovider.Resource{"Server": server{}, "Network": network{}, "Firewall": firewall{}, "PlacementGroup": placementGroup{}} {
		named, ok := r.(nativeprovider.Named)
		if !ok || named.NameKey() != "name" {
			t.Errorf("%s does not declare its name input", what)
		}
	}
}
