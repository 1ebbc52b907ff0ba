package nodeclass

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/awslabs/operatorpkg/status"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"nodefleet.dev/driver/pkg/apiclient"
	"nodefleet.dev/driver/pkg/apis"
	"nodefleet.dev/driver/pkg/apis/v1alpha1"
	"nodefleet.dev/driver/pkg/fake"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
)

// nodeClaimOf is a NodeClaim of the NodeClass group/kind/name, carrying Karpenter's termination
// finalizer as every launched NodeClaim does (so deleting it only marks it deleted).
func nodeClaimOf(name, group, kind, nodeClass string) *karpv1.NodeClaim {
	return &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: []string{karpv1.TerminationFinalizer}},
		Spec: karpv1.NodeClaimSpec{
			NodeClassRef: &karpv1.NodeClassReference{Group: group, Kind: kind, Name: nodeClass},
		},
	}
}

func (r *reconciling) nodeClaim(name string) *karpv1.NodeClaim {
	r.t.Helper()
	nodeClaim := &karpv1.NodeClaim{}
	if err := r.kubeClient.Get(context.Background(), client.ObjectKey{Name: name}, nodeClaim); err != nil {
		r.t.Fatalf("NodeClaim %s: %v", name, err)
	}
	return nodeClaim
}

// terminated is Karpenter finishing a NodeClaim: its finalizer lifted, it is gone.
func (r *reconciling) terminated(name string) {
	r.t.Helper()
	nodeClaim := r.nodeClaim(name)
	controllerutil.RemoveFinalizer(nodeClaim, karpv1.TerminationFinalizer)
	if err := r.kubeClient.Update(context.Background(), nodeClaim); err != nil {
		r.t.Fatal(err)
	}
}

// A deleted NodeClass stays while NodeClaims use it: the driver deletes them (Karpenter drains and
// deletes their nodes through this NodeClass), says why it waits with an Event and the Ready
// condition, keeps the endpoint and token usable, and lifts its finalizer once none is left.
func TestDeletionWaitsForTheNodeClaims(t *testing.T) {
	api := fake.NewScalingAPI("prod", "t0ken", "workers")
	defer api.Close()
	deleting := nodeClaimOf("b", apis.Group, "NodefleetNodeClass", "default")
	deleting.DeletionTimestamp = &metav1.Time{Time: metav1.Now().Time}
	r := newReconciling(t, api, nil,
		nodeClaimOf("a", apis.Group, "NodefleetNodeClass", "default"),
		deleting,
		// Another NodeClass's, and another provider's NodeClass of the same name: left alone.
		nodeClaimOf("c", apis.Group, "NodefleetNodeClass", "another"),
		nodeClaimOf("d", "karpenter.k8s.aws", "EC2NodeClass", "default"),
	)
	ctx := context.Background()

	if ready := r.reconcile(); !controllerutil.ContainsFinalizer(ready, v1alpha1.TerminationFinalizer) || !ready.StatusConditions().Get(status.ConditionReady).IsTrue() {
		t.Fatalf("finalizers %v, Ready %+v; want the termination finalizer and Ready", ready.Finalizers, ready.StatusConditions().Get(status.ConditionReady))
	}
	if err := r.kubeClient.Delete(ctx, &v1alpha1.NodefleetNodeClass{ObjectMeta: metav1.ObjectMeta{Name: "default"}}); err != nil {
		t.Fatal(err)
	}

	waiting := r.reconcile()
	if waiting.DeletionTimestamp.IsZero() {
		t.Fatal("the NodeClass is not being deleted")
	}
	ready := waiting.StatusConditions().Get(status.ConditionReady)
	if !ready.IsFalse() || ready.Reason != v1alpha1.ReasonWaitingOnNodeClaimTermination || !strings.Contains(ready.Message, "NodeClaims a, b") || strings.Contains(ready.Message, "API check") {
		t.Fatalf("Ready = %+v, want False %s naming NodeClaims a, b (and no API problem)", ready, v1alpha1.ReasonWaitingOnNodeClaimTermination)
	}
	if len(r.events.published) != 1 || r.events.published[0].Reason != v1alpha1.ReasonWaitingOnNodeClaimTermination || !strings.Contains(r.events.published[0].Message, "NodeClaims a, b") || r.events.published[0].InvolvedObject.(client.Object).GetName() != "default" {
		t.Fatalf("events %+v, want one WaitingOnNodeClaimTermination on the NodeClass naming a, b", r.events.published)
	}
	for name, wantDeleted := range map[string]bool{"a": true, "b": true, "c": false, "d": false} {
		if deleted := !r.nodeClaim(name).DeletionTimestamp.IsZero(); deleted != wantDeleted {
			t.Errorf("NodeClaim %s deleted: %v, want %v", name, deleted, wantDeleted)
		}
	}
	// Karpenter deletes the nodes through the deleted NodeClass: its endpoint and token still work.
	connection, err := apiclient.NewConnections(apiclient.SecretTokens{Reader: r.kubeClient, Namespace: "karpenter"}).For(waiting)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := connection.Cluster(ctx); err != nil {
		t.Fatalf("the deleted NodeClass's API: %v", err)
	}

	// A stuck deletion says when the API is the likely cause.
	r.terminated("a")
	api.FailNext("getCluster", fake.ErrorAnswer{Status: 503, Code: "Unavailable", Message: "restarting"})
	stuck := r.reconcile().StatusConditions().Get(status.ConditionReady)
	if stuck.Reason != v1alpha1.ReasonWaitingOnNodeClaimTermination || !strings.Contains(stuck.Message, "NodeClaim b ") || strings.Contains(stuck.Message, "a, b") || !strings.Contains(stuck.Message, "API check fails with Unavailable") {
		t.Fatalf("Ready = %+v, want it waiting for NodeClaim b alone and naming the API's Unavailable", stuck)
	}

	// The last one gone: the finalizer lifts and the NodeClass with it.
	r.terminated("b")
	stored := &v1alpha1.NodefleetNodeClass{}
	if err := r.kubeClient.Get(ctx, r.key, stored); err != nil {
		t.Fatal(err)
	}
	if _, err := r.controller.Reconcile(ctx, stored); err != nil {
		t.Fatal(err)
	}
	if err := r.kubeClient.Get(ctx, r.key, stored); !apierrors.IsNotFound(err) {
		t.Fatalf("after the last NodeClaim: Get = %v (finalizers %v), want the NodeClass gone", err, stored.Finalizers)
	}
	for _, name := range []string{"c", "d"} {
		if !r.nodeClaim(name).DeletionTimestamp.IsZero() {
			t.Errorf("NodeClaim %s of another NodeClass was deleted", name)
		}
	}
}

// A NodeClass deleted with no NodeClaim goes at once, without an Event.
func TestDeletionWithoutNodeClaimsIsImmediate(t *testing.T) {
	api := fake.NewScalingAPI("prod", "t0ken", "workers")
	defer api.Close()
	r := newReconciling(t, api, nil)
	ctx := context.Background()
	r.reconcile()
	if err := r.kubeClient.Delete(ctx, &v1alpha1.NodefleetNodeClass{ObjectMeta: metav1.ObjectMeta{Name: "default"}}); err != nil {
		t.Fatal(err)
	}
	stored := &v1alpha1.NodefleetNodeClass{}
	if err := r.kubeClient.Get(ctx, r.key, stored); err != nil {
		t.Fatalf("the finalizer did not hold the NodeClass: %v", err)
	}
	if _, err := r.controller.Reconcile(ctx, stored); err != nil {
		t.Fatal(err)
	}
	if err := r.kubeClient.Get(ctx, r.key, stored); !apierrors.IsNotFound(err) || len(r.events.published) != 0 {
		t.Fatalf("Get = %v, events %+v; want the NodeClass gone and no Event", err, r.events.published)
	}
}

// Only the deletion of a NodeClaim of a NodefleetNodeClass re-checks that NodeClass.
func TestNodeClaimDeletionsEnqueueTheirNodeClass(t *testing.T) {
	ours := nodeClaimOf("a", apis.Group, "NodefleetNodeClass", "default")
	if requests := nodeClassOfNodeClaim(context.Background(), ours); len(requests) != 1 || requests[0].Name != "default" {
		t.Fatalf("requests = %v, want the NodeClass default", requests)
	}
	if requests := nodeClassOfNodeClaim(context.Background(), nodeClaimOf("d", "karpenter.k8s.aws", "EC2NodeClass", "default")); len(requests) != 0 {
		t.Fatalf("requests = %v for another provider's NodeClaim, want none", requests)
	}
	if !nodeClaimGone.Delete(event.TypedDeleteEvent[*karpv1.NodeClaim]{Object: ours}) || nodeClaimGone.Update(event.TypedUpdateEvent[*karpv1.NodeClaim]{ObjectOld: ours, ObjectNew: ours}) || nodeClaimGone.Create(event.TypedCreateEvent[*karpv1.NodeClaim]{Object: ours}) {
		t.Fatal("want only deletions passed")
	}
}

func TestNodeClaimNames(t *testing.T) {
	cases := map[string][]string{
		"NodeClaim a":                         []string{"a"},
		"NodeClaims a, b":                     []string{"a", "b"},
		"NodeClaims a, b, c, d, e and 2 more": []string{"a", "b", "c", "d", "e", "f", "g"},
		"NodeClaims n0, n1, n2, n3, n4":       []string{"n0", "n1", "n2", "n3", "n4"},
	}
	for want, names := range cases {
		if got := nodeClaimNames(slices.Clone(names)); got != want {
			t.Errorf("nodeClaimNames(%v) = %q, want %q", names, got, want)
		}
	}
}
