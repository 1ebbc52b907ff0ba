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

func TestParseProviderIDOfAnHcloudServer(t *testing.T) {
	ref, err := parseProviderID("hcloud://4711")
	if err != nil || ref != (nodeRef{ServerID: "4711"}) {
		t.Fatalf("parseProviderID(hcloud://4711) = %+v, %v, want the server id only", ref, err)
	}
	// A fleet whose providerIdScheme is hcloud keeps nodefleet's form: it names cluster and node.
	ref, err = parseProviderID("hcloud:///prod/k1")
	if err != nil || ref != (nodeRef{ClusterID: "prod", NodeID: "k1"}) {
		t.Fatalf("parseProviderID(hcloud:///prod/k1) = %+v, %v", ref, err)
	}
	for _, invalid := range []string{"hcloud://", "hcloud://0", "hcloud://12a", "hcloud://bm-12", "hrobot://12", "hcloud://-1"} {
		if _, err := parseProviderID(invalid); err == nil {
			t.Errorf("parseProviderID(%q) accepted it", invalid)
		}
	}
}
