package nodeclass

import (
	"context"
	"testing"

	"github.com/awslabs/operatorpkg/status"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	clientfake "sigs.k8s.io/controller-runtime/pkg/client/fake"

	"nodefleet.dev/driver/pkg/apiclient"
	"nodefleet.dev/driver/pkg/apis/v1alpha1"
	"nodefleet.dev/driver/pkg/fake"
	"nodefleet.dev/driver/pkg/nodefleetapi"
)

// reconciling is a NodeClass naming the fake API's cluster "prod" and pool "workers" (changed by
// edit), stored in a fake cluster with its token Secret, and the controller keeping it.
type reconciling struct {
	t          *testing.T
	kubeClient client.Client
	controller *Controller
	key        client.ObjectKey
}

func newReconciling(t *testing.T, api *fake.ScalingAPI, edit func(*v1alpha1.NodefleetNodeClass)) *reconciling {
	t.Helper()
	nodeClass := &v1alpha1.NodefleetNodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "default", Generation: 1},
		Spec: v1alpha1.NodefleetNodeClassSpec{
			Endpoint: api.URL(), ClusterID: "prod", Pool: "workers",
			TokenSecretRef: v1alpha1.SecretKeyReference{Name: "nodefleet-token", Namespace: "karpenter", Key: "token"},
		},
	}
	if edit != nil {
		edit(nodeClass)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "nodefleet-token", Namespace: "karpenter"}, Data: map[string][]byte{"token": []byte("t0ken")}}
	kubeClient := clientfake.NewClientBuilder().WithScheme(scheme.Scheme).WithStatusSubresource(&v1alpha1.NodefleetNodeClass{}).WithObjects(nodeClass, secret).Build()
	controller := NewController(kubeClient, apiclient.NewConnections(apiclient.SecretTokens{Reader: kubeClient, Namespace: "karpenter"}), nil)
	return &reconciling{t: t, kubeClient: kubeClient, controller: controller, key: client.ObjectKeyFromObject(nodeClass)}
}

// reconcile runs one reconcile of the stored NodeClass and answers it as stored afterwards.
func (r *reconciling) reconcile() *v1alpha1.NodefleetNodeClass {
	r.t.Helper()
	ctx := context.Background()
	stored := &v1alpha1.NodefleetNodeClass{}
	if err := r.kubeClient.Get(ctx, r.key, stored); err != nil {
		r.t.Fatal(err)
	}
	result, err := r.controller.Reconcile(ctx, stored)
	if err != nil {
		r.t.Fatal(err)
	}
	if result.RequeueAfter <= 0 {
		r.t.Error("the NodeClass is not re-checked")
	}
	if err := r.kubeClient.Get(ctx, r.key, stored); err != nil {
		r.t.Fatal(err)
	}
	return stored
}

func readyAfterReconcile(t *testing.T, api *fake.ScalingAPI, edit func(*v1alpha1.NodefleetNodeClass)) *status.Condition {
	t.Helper()
	return newReconciling(t, api, edit).reconcile().StatusConditions().Get(status.ConditionReady)
}

// A pool template changed in the stack must update the NodeClass: that update is what makes
// Karpenter re-check its NodeClaims' drift without waiting for its periodic re-check.
func TestPoolTemplateHashFollowsTheAPI(t *testing.T) {
	api := fake.NewScalingAPI("prod", "t0ken", "workers")
	defer api.Close()
	api.UpdatePool("workers", func(pool *nodefleetapi.Pool) { pool.TemplateHash = "1111111111111111" })
	r := newReconciling(t, api, nil)
	first := r.reconcile()
	if first.Status.PoolTemplateHash != "1111111111111111" {
		t.Fatalf("PoolTemplateHash = %q, want the API's 1111111111111111", first.Status.PoolTemplateHash)
	}
	if again := r.reconcile(); again.ResourceVersion != first.ResourceVersion {
		t.Error("an unchanged pool template updated the NodeClass")
	}
	api.UpdatePool("workers", func(pool *nodefleetapi.Pool) { pool.TemplateHash = "2222222222222222" })
	changed := r.reconcile()
	if changed.Status.PoolTemplateHash != "2222222222222222" || changed.ResourceVersion == first.ResourceVersion {
		t.Fatalf("PoolTemplateHash = %q (resourceVersion %s, was %s), want the NodeClass updated to 2222222222222222", changed.Status.PoolTemplateHash, changed.ResourceVersion, first.ResourceVersion)
	}
	api.FailNext("getCluster", fake.ErrorAnswer{Status: 503, Code: "Unavailable", Message: "restarting"})
	if unready := r.reconcile(); !unready.StatusConditions().Get(status.ConditionReady).IsFalse() || unready.Status.PoolTemplateHash != "2222222222222222" {
		t.Fatalf("while the API is unavailable: Ready %+v, PoolTemplateHash %q; want False and the last hash kept", unready.StatusConditions().Get(status.ConditionReady), unready.Status.PoolTemplateHash)
	}
}

func TestReadyFollowsTheCluster(t *testing.T) {
	api := fake.NewScalingAPI("prod", "t0ken", "workers")
	defer api.Close()
	if ready := readyAfterReconcile(t, api, nil); !ready.IsTrue() {
		t.Fatalf("Ready = %+v, want True", ready)
	}
	cases := map[string]func(*v1alpha1.NodefleetNodeClass){
		"PoolNotFound":     func(n *v1alpha1.NodefleetNodeClass) { n.Spec.Pool = "absent" },
		"ClusterNotFound":  func(n *v1alpha1.NodefleetNodeClass) { n.Spec.ClusterID = "other" },
		"TokenUnavailable": func(n *v1alpha1.NodefleetNodeClass) { n.Spec.TokenSecretRef.Name = "absent" },
		"InvalidSpec":      func(n *v1alpha1.NodefleetNodeClass) { n.Spec.CABundle = []byte("no certificate") },
		"APIUnreachable":   func(n *v1alpha1.NodefleetNodeClass) { n.Spec.Endpoint = "http://127.0.0.1:1" },
	}
	for reason, edit := range cases {
		t.Run(reason, func(t *testing.T) {
			if ready := readyAfterReconcile(t, api, edit); !ready.IsFalse() || ready.Reason != reason {
				t.Fatalf("Ready = %+v, want False with reason %s", ready, reason)
			}
		})
	}
	t.Run("Unauthorized", func(t *testing.T) {
		api.SetTokens("another")
		defer api.SetTokens("t0ken")
		if ready := readyAfterReconcile(t, api, nil); !ready.IsFalse() || ready.Reason != "Unauthorized" {
			t.Fatalf("Ready = %+v, want False Unauthorized", ready)
		}
	})
}
