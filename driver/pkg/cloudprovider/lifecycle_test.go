package cloudprovider

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"nodefleet.dev/driver/pkg/fake"
	"nodefleet.dev/driver/pkg/metrics"
	"nodefleet.dev/driver/pkg/nodefleetapi"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
	"sigs.k8s.io/karpenter/pkg/cloudprovider"
)

// Delete: nil while the node terminates (Karpenter calls again), NodeClaimNotFound once gone;
// Get follows the same node: the NodeClaim until gone, then NodeClaimNotFound.
func TestGetAndDeleteFollowTheContract(t *testing.T) {
	e := newEnvironment(t)
	ctx := context.Background()
	claim := nodeClaim("default-life")
	created := e.createNode(t, claim)
	nodeID := nodefleetapi.NodeIDFor("default-life")

	got, err := e.cloudProvider.Get(ctx, created.Status.ProviderID)
	if err != nil || got.Status.ProviderID != created.Status.ProviderID {
		t.Fatalf("Get = %v, %v; want the node", got, err)
	}
	if err := e.cloudProvider.Delete(ctx, claim); err != nil {
		t.Fatalf("first Delete = %v, want nil (terminating)", err)
	}
	if err := e.cloudProvider.Delete(ctx, claim); err != nil {
		t.Fatalf("repeated Delete while terminating = %v, want nil", err)
	}
	if got, err := e.cloudProvider.Get(ctx, created.Status.ProviderID); err != nil || got.DeletionTimestamp == nil {
		t.Fatalf("Get of a terminating node = %v, %v; want it, marked as deleting", got, err)
	}
	e.api.Gone(nodeID)
	if err := e.cloudProvider.Delete(ctx, claim); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Fatalf("Delete once gone = %v, want NodeClaimNotFoundError", err)
	}
	if _, err := e.cloudProvider.Get(ctx, created.Status.ProviderID); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Fatalf("Get once gone = %v, want NodeClaimNotFoundError", err)
	}
}

func TestDeleteOfANeverLaunchedNodeClaimIsNotFound(t *testing.T) {
	e := newEnvironment(t)
	if err := e.cloudProvider.Delete(context.Background(), nodeClaim("default-never")); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Fatalf("Delete = %v, want NodeClaimNotFoundError", err)
	}
	if len(e.api.Requests()) != 0 {
		t.Error("Delete of a NodeClaim without providerID called the API")
	}
}

func TestGetAndDeleteDoNotMistakeOtherErrorsForGone(t *testing.T) {
	e := newEnvironment(t)
	ctx := context.Background()
	claim := nodeClaim("default-flaky")
	created := e.createNode(t, claim)
	for _, code := range []string{"RouteNotFound", "ClusterNotFound", "Unavailable", "Unauthorized"} {
		e.api.FailNext("getNode", fake.ErrorAnswer{Status: 404, Code: code, Message: code})
		e.api.FailNext("deleteNode", fake.ErrorAnswer{Status: 404, Code: code, Message: code})
		if _, err := e.cloudProvider.Get(ctx, created.Status.ProviderID); err == nil || cloudprovider.IsNodeClaimNotFoundError(err) {
			t.Errorf("Get with %s = %v, want an error that is not NodeClaimNotFound", code, err)
		}
		if err := e.cloudProvider.Delete(ctx, claim); err == nil || cloudprovider.IsNodeClaimNotFoundError(err) {
			t.Errorf("Delete with %s = %v, want an error that is not NodeClaimNotFound", code, err)
		}
	}
}

func TestGetRefusesAProviderIDOfNoKnownCluster(t *testing.T) {
	e := newEnvironment(t)
	for _, providerID := range []string{"nodefleet:///other/k1", "aws:///i-123", "garbage"} {
		if _, err := e.cloudProvider.Get(context.Background(), providerID); err == nil || cloudprovider.IsNodeClaimNotFoundError(err) {
			t.Errorf("Get(%q) = %v, want an error that is not NodeClaimNotFound", providerID, err)
		}
	}
}

func TestListReturnsEveryNodeAndMarksTerminatingOnes(t *testing.T) {
	e := newEnvironment(t)
	ctx := context.Background()
	e.createNode(t, nodeClaim("default-a"))
	leaving := nodeClaim("default-b")
	e.createNode(t, leaving)
	if err := e.cloudProvider.Delete(ctx, leaving); err != nil {
		t.Fatal(err)
	}
	listed, err := e.cloudProvider.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	byProviderID := map[string]*karpv1.NodeClaim{}
	for _, claim := range listed {
		byProviderID[claim.Status.ProviderID] = claim
	}
	a := byProviderID["nodefleet:///prod/"+nodefleetapi.NodeIDFor("default-a")]
	b := byProviderID["nodefleet:///prod/"+nodefleetapi.NodeIDFor("default-b")]
	if len(listed) != 2 || a == nil || b == nil {
		t.Fatalf("List = %d NodeClaims %v, want both nodes", len(listed), byProviderID)
	}
	if a.DeletionTimestamp != nil || b.DeletionTimestamp == nil {
		t.Error("want only the terminating node marked as deleting")
	}
	lists := e.requestsOf("GET", "/nodes")
	if len(lists) != 1 || lists[0].Query != "pool="+testPool {
		t.Errorf("list requests = %+v, want one filtered by the NodeClass's pool", lists)
	}
}

// A cluster whose nodes cannot be read is answered with its NodeClaims as they are (so Karpenter's
// garbage collection deletes none of them), while the other clusters are listed from the API as
// usual (so garbage collection keeps working for them); the failure is counted per cluster.
func TestListKeepsTheNodeClaimsOfAClusterItCannotRead(t *testing.T) {
	e := newEnvironment(t)
	ctx := context.Background()
	e.createNode(t, nodeClaim("default-a"))
	other := fake.NewScalingAPI("other", testToken, testPool)
	t.Cleanup(other.Close)
	otherClass := e.nodeClass.DeepCopy()
	otherClass.ResourceVersion = ""
	otherClass.Name = "other"
	otherClass.Spec.Endpoint = other.URL()
	otherClass.Spec.ClusterID = "other"
	if err := e.kubeClient.Create(ctx, otherClass); err != nil {
		t.Fatal(err)
	}
	kept := nodeClaim("other-a")
	kept.Status.ProviderID = "nodefleet:///other/" + nodefleetapi.NodeIDFor("other-a")
	unrelated := nodeClaim("gone-a")
	unrelated.Status.ProviderID = "nodefleet:///gone/" + nodefleetapi.NodeIDFor("gone-a")
	for _, claim := range []*karpv1.NodeClaim{kept, unrelated} {
		if err := e.kubeClient.Create(ctx, claim); err != nil {
			t.Fatal(err)
		}
	}
	other.FailNext("listNodes", fake.ErrorAnswer{Status: 503, Code: "Unavailable", Message: "stopping"})
	before := testutil.ToFloat64(metrics.ListFailures.WithLabelValues("other"))
	listed, err := e.cloudProvider.List(ctx)
	if err != nil {
		t.Fatalf("List: %v, want the readable cluster listed and the other's NodeClaims kept", err)
	}
	providerIDs := map[string]bool{}
	for _, claim := range listed {
		providerIDs[claim.Status.ProviderID] = true
	}
	want := []string{"nodefleet:///prod/" + nodefleetapi.NodeIDFor("default-a"), kept.Status.ProviderID}
	if len(listed) != 2 || !providerIDs[want[0]] || !providerIDs[want[1]] {
		t.Fatalf("List = %v, want exactly %v", providerIDs, want)
	}
	if after := testutil.ToFloat64(metrics.ListFailures.WithLabelValues("other")); after != before+1 {
		t.Errorf("list failures of cluster other = %v, want %v", after, before+1)
	}
}

func TestIsDrifted(t *testing.T) {
	e := newEnvironment(t)
	ctx := context.Background()
	claim := nodeClaim("default-drift")
	created := e.createNode(t, claim)
	claim.Annotations = created.Annotations
	nodeID := nodefleetapi.NodeIDFor("default-drift")

	if reason, err := e.cloudProvider.IsDrifted(ctx, claim); err != nil || reason != "" {
		t.Fatalf("IsDrifted of a current node = %q, %v", reason, err)
	}
	setDrift := func(reason string) {
		e.api.UpdateNode(nodeID, func(node *nodefleetapi.Node) {
			node.Drifted = true
			node.DriftReason = &reason
		})
	}
	setDrift("ServerTypeDrift,ImageDrift")
	if reason, err := e.cloudProvider.IsDrifted(ctx, claim); err != nil || reason != "ServerTypeDrift,ImageDrift" {
		t.Fatalf("IsDrifted = %q, %v; want the API's reason", reason, err)
	}
	setDrift("server type changed from cx22 to cx32")
	reason, err := e.cloudProvider.IsDrifted(ctx, claim)
	if err != nil || !conditionReason.MatchString(string(reason)) {
		t.Fatalf("IsDrifted with a reason that is no condition Reason = %q, %v; want a valid Reason", reason, err)
	}

	e.nodeClass.Spec.Pool = "bigger"
	if err := e.kubeClient.Update(ctx, e.nodeClass); err != nil {
		t.Fatal(err)
	}
	if reason, err := e.cloudProvider.IsDrifted(ctx, claim); err != nil || reason != NodeClassDrift {
		t.Fatalf("IsDrifted after the NodeClass changed pool = %q, %v; want %s", reason, err, NodeClassDrift)
	}
}

// A pool with imageSelector drifts only the members of the architecture that got a newer matching
// snapshot: the API reports ImageDrift on those nodes, and IsDrifted hands exactly that to Karpenter
// per NodeClaim, leaving the other architecture's members alone (docs/fleet-spec.md).
func TestIsDriftedReportsImageDriftOfOneArchitecture(t *testing.T) {
	e := newEnvironment(t)
	ctx := context.Background()
	x86 := nodeClaim("image-x86")
	x86.Annotations = e.createNode(t, x86).Annotations
	arm := nodeClaim("image-arm")
	arm.Annotations = e.createNode(t, arm).Annotations
	e.api.UpdateNode(nodefleetapi.NodeIDFor("image-x86"), func(node *nodefleetapi.Node) {
		reason, details := "ImageDrift", "image: 4001 -> 4002"
		node.Drifted, node.DriftReason, node.DriftDetails = true, &reason, &details
	})
	if reason, err := e.cloudProvider.IsDrifted(ctx, x86); err != nil || reason != "ImageDrift" {
		t.Fatalf("IsDrifted of the x86 member = %q, %v; want ImageDrift", reason, err)
	}
	if reason, err := e.cloudProvider.IsDrifted(ctx, arm); err != nil || reason != "" {
		t.Fatalf("IsDrifted of the other member = %q, %v; want no drift", reason, err)
	}
}

func TestIsDriftedOfAGoneNodeIsNotDrift(t *testing.T) {
	e := newEnvironment(t)
	claim := nodeClaim("default-gone")
	e.createNode(t, claim)
	e.api.Gone(nodefleetapi.NodeIDFor("default-gone"))
	if reason, err := e.cloudProvider.IsDrifted(context.Background(), claim); err != nil || reason != "" {
		t.Fatalf("IsDrifted = %q, %v; want no drift", reason, err)
	}
}

func TestLaunchFailureReportsOnlyFailedNodes(t *testing.T) {
	e := newEnvironment(t)
	ctx := context.Background()
	claim := nodeClaim("default-launch")
	e.createNode(t, claim)
	if failure, err := e.cloudProvider.LaunchFailure(ctx, claim); err != nil || failure != nil {
		t.Fatalf("LaunchFailure of a pending node = %v, %v", failure, err)
	}
	code, reason := "CreateFailed", "image not found"
	e.api.UpdateNode(nodefleetapi.NodeIDFor("default-launch"), func(node *nodefleetapi.Node) {
		node.Status = "FAILED"
		node.FailureCode, node.FailureReason = &code, &reason
	})
	failure, err := e.cloudProvider.LaunchFailure(ctx, claim)
	if err != nil || failure == nil {
		t.Fatalf("LaunchFailure of a failed node = %v, %v", failure, err)
	}
	if cloudprovider.IsInsufficientCapacityError(failure) || e.soldOut.IsSoldOut(testCluster, "cx22", "hel1") {
		t.Error("a failure that is not sold out was taken for one")
	}
}
