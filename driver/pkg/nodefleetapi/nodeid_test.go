package nodefleetapi

import "testing"

func TestNodeIDsAreTheAPIs(t *testing.T) {
	// The API's nodeIdFor("default-x7k2p") (automation/api/nodeIdentity.ts).
	if got := NodeIDFor("default-x7k2p"); got != "k840211218d35" {
		t.Fatalf("NodeIDFor = %s, want the API's k840211218d35", got)
	}
}
