package cloudprovider

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"

	"nodefleet.dev/driver/pkg/apis/v1alpha1"
	"nodefleet.dev/driver/pkg/fake"
	"nodefleet.dev/driver/pkg/metrics"
	"nodefleet.dev/driver/pkg/nodefleetapi"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
	"sigs.k8s.io/karpenter/pkg/cloudprovider"
)

// The API refuses a backed-off offering at admission with the offerings it refused (issue 36
// part 3): the driver marks exactly those unavailable and answers InsufficientCapacityError, so
// Karpenter deletes the NodeClaim (publishing its InsufficientCapacityError Event with the reason)
// and picks another offering.
func TestCreateMarksTheOfferingsAnAdmissionRefusalNames(t *testing.T) {
	e := newEnvironment(t)
	e.api.FailNext("createNode", fake.ErrorAnswer{Status: 409, Code: "InsufficientCapacity",
		Message: "every fitting offering of pool workers in hel1 is unavailable: cx32 (the Hetzner project's quota is exhausted (resource_limit_exceeded))",
		Details: map[string]any{
			"pool":        testPool,
			"unavailable": []any{"cx32@hel1"},
			"offerings":   []any{map[string]any{"instanceType": "cx32", "zone": "hel1", "reason": "quota"}},
		}})
	markedBefore := testutil.ToFloat64(metrics.OfferingsMarkedUnavailable.WithLabelValues(testCluster, "cx32", "hel1"))
	_, err := e.cloudProvider.Create(context.Background(), nodeClaim("default-quota"))
	if !cloudprovider.IsInsufficientCapacityError(err) {
		t.Fatalf("err = %v, want InsufficientCapacityError", err)
	}
	if !e.soldOut.IsSoldOut(testCluster, "cx32", "hel1") {
		t.Error("the refused offering cx32 in hel1 was not marked unavailable")
	}
	if got := testutil.ToFloat64(metrics.OfferingsMarkedUnavailable.WithLabelValues(testCluster, "cx32", "hel1")) - markedBefore; got != 1 {
		t.Errorf("nodefleet_driver_offerings_marked_unavailable_total{cx32, hel1} grew by %v, want 1", got)
	}
	published := e.recorder.WithReason(OfferingUnavailableReason)
	if len(published) != 1 {
		t.Fatalf("%d OfferingUnavailable Events, want one", len(published))
	}
	if event := published[0]; event.Type != corev1.EventTypeWarning || event.InvolvedObject.(*v1alpha1.NodefleetNodeClass).Name != "default" ||
		!strings.Contains(event.Message, "cx32 in hel1") || !strings.Contains(event.Message, "resource_limit_exceeded") {
		t.Errorf("OfferingUnavailable Event = %+v, want a Warning on NodeClass default naming cx32 in hel1 and the quota", event)
	}
	// The nodeclass controller is told to re-read the NodeClass's OfferingsAvailable condition.
	select {
	case notice := <-e.cloudProvider.BackedOffNodeClasses():
		if notice.Object.Name != "default" {
			t.Errorf("backoff notice names NodeClass %s, want default", notice.Object.Name)
		}
	default:
		t.Error("no backoff notice for NodeClass default")
	}
	if e.soldOut.IsSoldOut(testCluster, "cx22", "hel1") || e.soldOut.IsSoldOut(testCluster, "cx22", "fsn1") {
		t.Error("an offering the API did not refuse was marked unavailable")
	}
	// The next scheduling simulation sees it unavailable, the other type still available.
	types, err := e.cloudProvider.GetInstanceTypes(context.Background(), nodePool())
	if err != nil {
		t.Fatal(err)
	}
	for _, instanceType := range types {
		for _, offering := range instanceType.Offerings {
			want := !(instanceType.Name == "cx32" && offering.Zone() == "hel1")
			if offering.Available != want {
				t.Errorf("%s in %s available = %v, want %v", instanceType.Name, offering.Zone(), offering.Available, want)
			}
		}
	}
}

func TestCreateMarksEveryOfferingOfABackedOffPool(t *testing.T) {
	e := newEnvironment(t)
	e.api.FailNext("createNode", fake.ErrorAnswer{Status: 409, Code: "InsufficientCapacity", Message: "pool workers is backed off: the pool's image cannot be used",
		Details: map[string]any{"pool": testPool, "limit": "backoff", "kind": "image", "offerings": []any{
			map[string]any{"instanceType": "cx22", "zone": "hel1", "reason": "image"},
			map[string]any{"instanceType": "cx32", "zone": "hel1", "reason": "image"},
		}}})
	if _, err := e.cloudProvider.Create(context.Background(), nodeClaim("default-image")); !cloudprovider.IsInsufficientCapacityError(err) {
		t.Fatalf("err = %v, want InsufficientCapacityError", err)
	}
	// Every allowed offering in hel1 is now unavailable: the next create is refused without a request.
	creates := len(e.requestsOf("POST", "/nodes"))
	_, err := e.cloudProvider.Create(context.Background(), nodeClaim("default-image-2",
		claimRequirement(karpv1.NodePoolLabelKey, corev1.NodeSelectorOpIn, "default"),
		claimRequirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "hel1")))
	if !cloudprovider.IsInsufficientCapacityError(err) {
		t.Fatalf("second create err = %v, want InsufficientCapacityError", err)
	}
	if len(e.requestsOf("POST", "/nodes")) != creates {
		t.Error("a create was sent for a pool every offering of which is backed off")
	}
}

// A replay of a NodeClaim whose node FAILED for a reason other than capacity (an image, say) ends
// the NodeClaim at once too: its name is burned, and a CreateError would make Karpenter replay it
// until the registration timeout.
func TestCreateReplayOfAFailedNodeEndsTheNodeClaimWhateverTheFailure(t *testing.T) {
	e := newEnvironment(t)
	claim := nodeClaim("default-burned")
	e.createNode(t, claim)
	nodeID := e.failNode("default-burned", "CreateFailed", "server create failed: boom")
	_, err := e.cloudProvider.Create(context.Background(), claim)
	if !cloudprovider.IsInsufficientCapacityError(err) {
		t.Fatalf("err = %v, want InsufficientCapacityError (ends the NodeClaim)", err)
	}
	if e.soldOut.IsSoldOut(testCluster, "cx22", "hel1") {
		t.Error("a failure that is not about capacity marked the offering unavailable")
	}
	if len(e.requestsOf("DELETE", "/nodes/"+nodeID)) != 1 {
		t.Error("the failed node was not released")
	}
}

func TestCreateReplayOfADeletedNodesUniqueIDEndsTheNodeClaim(t *testing.T) {
	e := newEnvironment(t)
	claim := nodeClaim("default-gone-replay")
	e.createNode(t, claim)
	e.api.Gone(nodefleetapi.NodeIDFor("default-gone-replay"))
	_, err := e.cloudProvider.Create(context.Background(), claim)
	if !cloudprovider.IsInsufficientCapacityError(err) {
		t.Fatalf("err = %v, want InsufficientCapacityError for a burned uniqueID", err)
	}
	// A Conflict of another kind (the same name with another body) stays a CreateError.
	e.api.FailNext("createNode", fake.ErrorAnswer{Status: 409, Code: "Conflict", Message: "uniqueID reused with another body", Details: map[string]any{"nodeID": "k1"}})
	_, err = e.cloudProvider.Create(context.Background(), nodeClaim("default-reused"))
	var createError *cloudprovider.CreateError
	if cloudprovider.IsInsufficientCapacityError(err) || !errors.As(err, &createError) || createError.ConditionReason != "Conflict" {
		t.Fatalf("err = %v, want CreateError Conflict", err)
	}
}
