package failed

import (
	"context"
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	clientfake "sigs.k8s.io/controller-runtime/pkg/client/fake"

	"nodefleet.dev/driver/pkg/apis"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
	"sigs.k8s.io/karpenter/pkg/events"
)

// recorder keeps the Events published.
type recorder struct{ published []events.Event }

func (r *recorder) Publish(published ...events.Event) {
	r.published = append(r.published, published...)
}

// failures answers LaunchFailure with a fixed failure and counts the calls.
type failures struct {
	failure error
	calls   int
}

func (f *failures) LaunchFailure(context.Context, *karpv1.NodeClaim) (error, error) {
	f.calls++
	return f.failure, nil
}

func launchedNodeClaim(registered bool) *karpv1.NodeClaim {
	nodeClaim := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "default-x"},
		Spec:       karpv1.NodeClaimSpec{NodeClassRef: &karpv1.NodeClassReference{Group: apis.Group, Kind: "NodefleetNodeClass", Name: "default"}},
		Status:     karpv1.NodeClaimStatus{ProviderID: "nodefleet:///prod/k1"},
	}
	nodeClaim.StatusConditions().SetTrue(karpv1.ConditionTypeLaunched)
	if registered {
		nodeClaim.StatusConditions().SetTrue(karpv1.ConditionTypeRegistered)
	}
	return nodeClaim
}

// reconcileOnce says whether the NodeClaim still exists and whether it is to be checked again.
func reconcileOnce(t *testing.T, nodeClaim *karpv1.NodeClaim, f *failures) (exists, requeued bool) {
	t.Helper()
	exists, requeued, _ = reconcileRecorded(t, nodeClaim, f)
	return exists, requeued
}

func reconcileRecorded(t *testing.T, nodeClaim *karpv1.NodeClaim, f *failures) (exists, requeued bool, published []events.Event) {
	t.Helper()
	kubeClient := clientfake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(nodeClaim).Build()
	r := &recorder{}
	result, err := NewController(kubeClient, f, r).Reconcile(context.Background(), nodeClaim)
	if err != nil {
		t.Fatal(err)
	}
	err = kubeClient.Get(context.Background(), client.ObjectKeyFromObject(nodeClaim), &karpv1.NodeClaim{})
	return err == nil, result.RequeueAfter > 0, r.published
}

func TestAFailedLaunchIsDeletedAtOnceWithAnEventSayingWhy(t *testing.T) {
	f := &failures{failure: errors.New("the Hetzner project's quota is exhausted (resource_limit_exceeded)")}
	exists, _, published := reconcileRecorded(t, launchedNodeClaim(false), f)
	if exists {
		t.Fatal("the NodeClaim of a failed node still exists")
	}
	if len(published) != 1 || published[0].Reason != LaunchFailedReason || published[0].Type != "Warning" ||
		!strings.Contains(published[0].Message, "resource_limit_exceeded") || published[0].InvolvedObject.(*karpv1.NodeClaim).Name != "default-x" {
		t.Fatalf("events = %+v, want one Warning LaunchFailed on the NodeClaim naming the failure", published)
	}
}

func TestAPendingLaunchPublishesNothing(t *testing.T) {
	if _, _, published := reconcileRecorded(t, launchedNodeClaim(false), &failures{}); len(published) != 0 {
		t.Fatalf("events = %+v for a node that has not failed", published)
	}
}

func TestAPendingLaunchIsCheckedAgain(t *testing.T) {
	f := &failures{}
	if exists, requeued := reconcileOnce(t, launchedNodeClaim(false), f); !exists || !requeued || f.calls != 1 {
		t.Fatalf("exists = %v, requeued = %v after %d checks; want the NodeClaim kept and re-checked", exists, requeued, f.calls)
	}
}

func TestOnlyUnregisteredNodeClaimsOfThisDriverAreChecked(t *testing.T) {
	other := launchedNodeClaim(false)
	other.Spec.NodeClassRef.Group = "karpenter.k8s.aws"
	notLaunched := launchedNodeClaim(false)
	notLaunched.StatusConditions().SetUnknown(karpv1.ConditionTypeLaunched)
	for name, nodeClaim := range map[string]*karpv1.NodeClaim{"registered": launchedNodeClaim(true), "another provider's": other, "not launched": notLaunched} {
		f := &failures{failure: errors.New("failed")}
		kubeClient := clientfake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(nodeClaim).Build()
		if _, err := NewController(kubeClient, f, &recorder{}).Reconcile(context.Background(), nodeClaim); err != nil {
			t.Fatal(err)
		}
		if f.calls != 0 {
			t.Errorf("%s NodeClaim was checked", name)
		}
		if err := kubeClient.Get(context.Background(), client.ObjectKeyFromObject(nodeClaim), &karpv1.NodeClaim{}); err != nil {
			t.Errorf("%s NodeClaim was deleted", name)
		}
	}
}
