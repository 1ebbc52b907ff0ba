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
)

func readyAfterReconcile(t *testing.T, api *fake.ScalingAPI, edit func(*v1alpha1.NodefleetNodeClass)) *status.Condition {
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
	ctx := context.Background()
	stored := &v1alpha1.NodefleetNodeClass{}
	if err := kubeClient.Get(ctx, client.ObjectKeyFromObject(nodeClass), stored); err != nil {
		t.Fatal(err)
	}
	result, err := controller.Reconcile(ctx, stored)
	if err != nil {
		t.Fatal(err)
	}
	if result.RequeueAfter <= 0 {
		t.Error("the NodeClass is not re-checked")
	}
	if err := kubeClient.Get(ctx, client.ObjectKeyFromObject(nodeClass), stored); err != nil {
		t.Fatal(err)
	}
	return stored.StatusConditions().Get(status.ConditionReady)
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
