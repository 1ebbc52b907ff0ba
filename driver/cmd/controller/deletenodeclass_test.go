package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/awslabs/operatorpkg/status"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"nodefleet.dev/driver/pkg/apis/v1alpha1"
)

// The pre-delete hook returns only once the NodeClass is gone, i.e. after the driver lifted its
// finalizer: helm deletes the driver only then.
func TestDeleteNodeClassWaitsUntilItIsGone(t *testing.T) {
	nodeClass := &v1alpha1.NodefleetNodeClass{ObjectMeta: metav1.ObjectMeta{Name: "default", Finalizers: []string{v1alpha1.TerminationFinalizer}}}
	kubeClient := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithStatusSubresource(nodeClass).WithObjects(nodeClass).Build()
	ctx := context.Background()
	out := &bytes.Buffer{}
	done := make(chan error, 1)
	go func() { done <- deleteNodeClass(ctx, kubeClient, "default", 10*time.Millisecond, out) }()

	// The driver's side: the NodeClass waits for its NodeClaims, then the finalizer lifts.
	stored := &v1alpha1.NodefleetNodeClass{}
	for stored.DeletionTimestamp.IsZero() {
		time.Sleep(5 * time.Millisecond)
		if err := kubeClient.Get(ctx, client.ObjectKey{Name: "default"}, stored); err != nil {
			t.Fatal(err)
		}
	}
	stored.StatusConditions().SetFalse(status.ConditionReady, v1alpha1.ReasonWaitingOnNodeClaimTermination, "waiting for NodeClaim a to terminate")
	if err := kubeClient.Status().Update(ctx, stored); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		t.Fatalf("returned (%v) while the NodeClass still exists", err)
	case <-time.After(100 * time.Millisecond):
	}
	if err := kubeClient.Get(ctx, client.ObjectKey{Name: "default"}, stored); err != nil {
		t.Fatal(err)
	}
	stored.Finalizers = nil
	if err := kubeClient.Update(ctx, stored); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("still waiting after the NodeClass is gone")
	}
	if err := kubeClient.Get(ctx, client.ObjectKey{Name: "default"}, stored); !apierrors.IsNotFound(err) {
		t.Fatalf("Get = %v, want the NodeClass gone", err)
	}
	if !strings.Contains(out.String(), "waiting for NodeClaim a to terminate") || !strings.Contains(out.String(), "is gone") {
		t.Fatalf("output %q, want the wait's reason and the end", out.String())
	}

	// Uninstalling again (or a NodeClass someone deleted already) is no error.
	if err := deleteNodeClass(ctx, kubeClient, "default", time.Millisecond, out); err != nil {
		t.Fatal(err)
	}
}
