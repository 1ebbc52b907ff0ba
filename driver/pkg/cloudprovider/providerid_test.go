package cloudprovider

import "testing"

func TestParseProviderID(t *testing.T) {
	ref, err := parseProviderID("nodefleet:///prod/k0123456789ab")
	if err != nil || ref != (nodeRef{ClusterID: "prod", NodeID: "k0123456789ab"}) {
		t.Fatalf("parseProviderID = %+v, %v", ref, err)
	}
	for _, invalid := range []string{"", "nodefleet://prod/k1", ":///prod/k1", "nodefleet:///prod", "nodefleet:////k1", "nodefleet:///prod/", "nodefleet:///prod/k1/extra"} {
		if _, err := parseProviderID(invalid); err == nil {
			t.Errorf("parseProviderID(%q) accepted it", invalid)
		}
	}
}
