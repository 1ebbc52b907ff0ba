package cloudprovider

import (
	"context"
	"testing"
	"time"

	"nodefleet.dev/driver/pkg/nodefleetapi"
	"sigs.k8s.io/karpenter/pkg/cloudprovider"
)

// hcloudEnvironment is a cluster with hcloudProviderIds: hcloud (docs/hcloud-ccm.md): a created
// node has no providerID until its server exists.
func hcloudEnvironment(t *testing.T) *environment {
	t.Helper()
	e := newEnvironment(t)
	e.api.UseHcloudProviderIDs()
	e.cloudProvider.providerIDWait = 2 * time.Second
	e.cloudProvider.providerIDPoll = 20 * time.Millisecond
	return e
}

func TestCreateAnswersOnceTheServerIdIsKnown(t *testing.T) {
	e := hcloudEnvironment(t)
	claim := nodeClaim("default-hc001")
	go func() {
		time.Sleep(150 * time.Millisecond)
		e.api.HcloudServerCreated(nodefleetapi.NodeIDFor(claim.Name), 4711)
	}()
	created := e.createNode(t, claim)
	if created.Status.ProviderID != "hcloud://4711" {
		t.Fatalf("providerID = %q, want the server's hcloud://4711", created.Status.ProviderID)
	}
	if gets := e.requestsOf("GET", "/nodes/"+nodefleetapi.NodeIDFor(claim.Name)); len(gets) == 0 {
		t.Errorf("Create never asked for the node again while it waited")
	}
}

func TestCreateErrsForARetryWhileTheServerDoesNotExist(t *testing.T) {
	e := hcloudEnvironment(t)
	e.cloudProvider.providerIDWait = 100 * time.Millisecond
	claim := nodeClaim("default-hc002")
	_, err := e.cloudProvider.Create(context.Background(), claim)
	if err == nil || cloudprovider.IsInsufficientCapacityError(err) || cloudprovider.IsNodeClassNotReadyError(err) {
		t.Fatalf("Create = %v, want a plain error Karpenter retries (no capacity or NodeClass error, which would end the NodeClaim)", err)
	}
	// The replay of the same NodeClaim answers once the server exists; no second node.
	e.api.HcloudServerCreated(nodefleetapi.NodeIDFor(claim.Name), 4712)
	created := e.createNode(t, claim)
	if created.Status.ProviderID != "hcloud://4712" {
		t.Fatalf("providerID = %q, want hcloud://4712", created.Status.ProviderID)
	}
}

func TestHcloudProviderIDsReachTheNodeClaimsNode(t *testing.T) {
	e := hcloudEnvironment(t)
	claim := nodeClaim("default-hc003")
	nodeID := nodefleetapi.NodeIDFor(claim.Name)
	ctx := context.Background()
	e.cloudProvider.providerIDWait = 0
	if _, err := e.cloudProvider.Create(ctx, claim); err == nil {
		t.Fatal("Create answered before the server existed")
	}
	e.api.HcloudServerCreated(nodeID, 4713)
	created := e.createNode(t, claim)

	got, err := e.cloudProvider.Get(ctx, created.Status.ProviderID)
	if err != nil || got.Status.ProviderID != "hcloud://4713" {
		t.Fatalf("Get(hcloud://4713) = %+v, %v", got, err)
	}
	listed, err := e.cloudProvider.List(ctx)
	if err != nil || len(listed) != 1 || listed[0].Status.ProviderID != "hcloud://4713" {
		t.Fatalf("List = %v, %v, want the one node with its providerID", listed, err)
	}
	if _, err := e.cloudProvider.Get(ctx, "hcloud://999"); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Errorf("Get(hcloud://999) = %v, want NodeClaimNotFound", err)
	}
	if err := e.cloudProvider.Delete(ctx, claim); err != nil {
		t.Fatalf("Delete = %v", err)
	}
	if deletes := e.requestsOf("DELETE", "/nodes/"+nodeID); len(deletes) != 1 {
		t.Errorf("DELETE requests for %s = %d, want 1: the NodeClaim's node", nodeID, len(deletes))
	}
}

func TestListLeavesOutNodesWithoutAServerYet(t *testing.T) {
	e := hcloudEnvironment(t)
	e.cloudProvider.providerIDWait = 0
	for _, name := range []string{"default-hc004", "default-hc005"} {
		if _, err := e.cloudProvider.Create(context.Background(), nodeClaim(name)); err == nil {
			t.Fatalf("Create(%s) answered without a providerID", name)
		}
	}
	listed, err := e.cloudProvider.List(context.Background())
	if err != nil || len(listed) != 0 {
		t.Fatalf("List = %v, %v, want nothing: no NodeClaim can name a node without a providerID", listed, err)
	}
}
