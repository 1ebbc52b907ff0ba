package nodeclass

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/awslabs/operatorpkg/status"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	clientfake "sigs.k8s.io/controller-runtime/pkg/client/fake"

	"nodefleet.dev/driver/pkg/apiclient"
	"nodefleet.dev/driver/pkg/apis"
	"nodefleet.dev/driver/pkg/apis/v1alpha1"
	"nodefleet.dev/driver/pkg/fake"
	"nodefleet.dev/driver/pkg/nodefleetapi"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
	"sigs.k8s.io/karpenter/pkg/events"
)

// reconciling is a NodeClass naming the fake API's cluster "prod" and pool "workers" (changed by
// edit), stored in a fake cluster with its token Secret, and the controller keeping it.
type reconciling struct {
	t          *testing.T
	kubeClient client.Client
	controller *Controller
	key        client.ObjectKey
	events     *recordedEvents
}

// recordedEvents is an events.Recorder keeping what is published.
type recordedEvents struct{ published []events.Event }

func (r *recordedEvents) Publish(evts ...events.Event) { r.published = append(r.published, evts...) }

// reasons is the reason of every Event published, in order.
func (r *recordedEvents) reasons() []string {
	var reasons []string
	for _, event := range r.published {
		reasons = append(reasons, event.Reason)
	}
	return reasons
}

func newReconciling(t *testing.T, api *fake.ScalingAPI, edit func(*v1alpha1.NodefleetNodeClass), objects ...client.Object) *reconciling {
	t.Helper()
	nodeClass := &v1alpha1.NodefleetNodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "default", Generation: 1},
		Spec: v1alpha1.NodefleetNodeClassSpec{
			Endpoint: api.URL(), ClusterID: "prod", Pool: "workers",
			TokenSecretRef: &v1alpha1.SecretKeyReference{Name: "nodefleet-token", Namespace: "karpenter", Key: "token"},
		},
	}
	if edit != nil {
		edit(nodeClass)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "nodefleet-token", Namespace: "karpenter"}, Data: map[string][]byte{"token": []byte("t0ken")}}
	builder := clientfake.NewClientBuilder().WithScheme(scheme.Scheme).WithStatusSubresource(&v1alpha1.NodefleetNodeClass{}).WithObjects(append([]client.Object{nodeClass, secret}, objects...)...)
	// The NodeClaim indexes Karpenter's operator registers, which the finalizer's list uses.
	builder = builder.
		WithIndex(&karpv1.NodeClaim{}, "spec.nodeClassRef.group", func(o client.Object) []string { return []string{o.(*karpv1.NodeClaim).Spec.NodeClassRef.Group} }).
		WithIndex(&karpv1.NodeClaim{}, "spec.nodeClassRef.kind", func(o client.Object) []string { return []string{o.(*karpv1.NodeClaim).Spec.NodeClassRef.Kind} }).
		WithIndex(&karpv1.NodeClaim{}, "spec.nodeClassRef.name", func(o client.Object) []string { return []string{o.(*karpv1.NodeClaim).Spec.NodeClassRef.Name} })
	kubeClient := builder.Build()
	recorder := &recordedEvents{}
	controller := NewController(kubeClient, apiclient.NewConnections(apiclient.SecretTokens{Reader: kubeClient, Namespace: "karpenter"}), nil, recorder)
	return &reconciling{t: t, kubeClient: kubeClient, controller: controller, key: client.ObjectKeyFromObject(nodeClass), events: recorder}
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

// reconcileTimes runs n reconciles and answers the NodeClass as stored after the last.
func (r *reconciling) reconcileTimes(n int) *v1alpha1.NodefleetNodeClass {
	r.t.Helper()
	var stored *v1alpha1.NodefleetNodeClass
	for range n {
		stored = r.reconcile()
	}
	return stored
}

// A Ready NodeClass stays Ready through fewer than FailedChecksBeforeNotReady failed checks in a
// row (the API unreachable or answering 5xx), turns NotReady at that many, and Ready again after
// one good check; a definite answer (unauthorized) turns it NotReady at once.
func TestNotReadyOnlyAfterSustainedFailure(t *testing.T) {
	api := fake.NewScalingAPI("prod", "t0ken", "workers")
	defer api.Close()
	r := newReconciling(t, api, nil)
	if ready := r.reconcile().StatusConditions().Get(status.ConditionReady); !ready.IsTrue() {
		t.Fatalf("Ready = %+v, want True", ready)
	}
	api.FailNext("getCluster", fake.ErrorAnswer{Status: 503, Code: "Unavailable", Message: "restarting"})
	for i := 1; i < FailedChecksBeforeNotReady; i++ {
		if ready := r.reconcile().StatusConditions().Get(status.ConditionReady); !ready.IsTrue() {
			t.Fatalf("after %d failed checks: Ready = %+v, want still True", i, ready)
		}
	}
	if got := r.events.reasons(); len(got) != 0 {
		t.Fatalf("Events during tolerated failures: %v, want none", got)
	}
	if ready := r.reconcile().StatusConditions().Get(status.ConditionReady); !ready.IsFalse() || ready.Reason != "Unavailable" {
		t.Fatalf("after %d failed checks: Ready = %+v, want False Unavailable", FailedChecksBeforeNotReady, ready)
	}
	if got := r.events.reasons(); !reflect.DeepEqual(got, []string{NotReadyReason}) {
		t.Fatalf("Events after turning NotReady: %v, want [%s]", got, NotReadyReason)
	}
	if notReady := r.events.published[0]; notReady.Type != corev1.EventTypeWarning || !strings.Contains(notReady.Message, "Unavailable") {
		t.Errorf("NotReady Event = %+v, want a Warning naming the reason Unavailable", notReady)
	}
	r.reconcile() // still failing: no second Event
	api.ClearErrors()
	if ready := r.reconcile().StatusConditions().Get(status.ConditionReady); !ready.IsTrue() {
		t.Fatalf("after one good check: Ready = %+v, want True", ready)
	}
	if got := r.events.reasons(); !reflect.DeepEqual(got, []string{NotReadyReason, RecoveredReason}) {
		t.Fatalf("Events after recovering: %v, want [%s %s]", got, NotReadyReason, RecoveredReason)
	}
	// The count starts over after a good check.
	api.FailNext("getCluster", fake.ErrorAnswer{Status: 503, Code: "Unavailable", Message: "restarting"})
	if ready := r.reconcile().StatusConditions().Get(status.ConditionReady); !ready.IsTrue() {
		t.Fatalf("first failure after recovering: Ready = %+v, want still True", ready)
	}
	api.ClearErrors()
	r.reconcile()
	api.SetTokens("another")
	defer api.SetTokens("t0ken")
	if ready := r.reconcile().StatusConditions().Get(status.ConditionReady); !ready.IsFalse() || ready.Reason != "Unauthorized" {
		t.Fatalf("Ready = %+v, want False Unauthorized at once", ready)
	}
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
	if unready := r.reconcileTimes(FailedChecksBeforeNotReady); !unready.StatusConditions().Get(status.ConditionReady).IsFalse() || unready.Status.PoolTemplateHash != "2222222222222222" {
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

// nodePoolOf is a NodePool whose nodes come from the NodefleetNodeClass nodeClass.
func nodePoolOf(name, nodeClass string, taints, startupTaints []corev1.Taint) *karpv1.NodePool {
	return &karpv1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: karpv1.NodePoolSpec{Template: karpv1.NodeClaimTemplate{Spec: karpv1.NodeClaimTemplateSpec{
			NodeClassRef:  &karpv1.NodeClassReference{Group: apis.Group, Kind: "NodefleetNodeClass", Name: nodeClass},
			Taints:        taints,
			StartupTaints: startupTaints,
		}}},
	}
}

func ptr[T any](v T) *T { return &v }

// The pool's taints and labels are shown in the status; a NodePool of this NodeClass lacking one
// of the pool's taints keeps it NotReady (Karpenter then launches nothing for its NodePools), and
// fixing the NodePool, or the pool dropping the taint, makes it Ready again.
func TestNodePoolsMustCarryThePoolsTaints(t *testing.T) {
	api := fake.NewScalingAPI("prod", "t0ken", "workers")
	defer api.Close()
	api.UpdatePool("workers", func(pool *nodefleetapi.Pool) {
		pool.Labels = map[string]string{"example.com/burst": "true"}
		pool.Taints = []nodefleetapi.Taint{{Key: "workload", Value: ptr("batch"), Effect: nodefleetapi.TaintEffectNoSchedule}}
	})
	workload := corev1.Taint{Key: "workload", Value: "batch", Effect: corev1.TaintEffectNoSchedule}
	burst := nodePoolOf("burst", "default", nil, nil)
	// Another NodeClass's NodePool is none of this one's business.
	other := nodePoolOf("other", "another", nil, nil)
	r := newReconciling(t, api, nil, burst, other)
	ctx := context.Background()

	refused := r.reconcile()
	if !reflect.DeepEqual(refused.Status.PoolTaints, []corev1.Taint{workload}) || !reflect.DeepEqual(refused.Status.PoolLabels, map[string]string{"example.com/burst": "true"}) {
		t.Fatalf("status poolTaints %v, poolLabels %v; want the API's pool taints and labels", refused.Status.PoolTaints, refused.Status.PoolLabels)
	}
	ready := refused.StatusConditions().Get(status.ConditionReady)
	if !ready.IsFalse() || ready.Reason != "NodePoolTaintsNotCovered" || !strings.Contains(ready.Message, "NodePool burst lacks workload=batch:NoSchedule") || strings.Contains(ready.Message, "other") {
		t.Fatalf("Ready = %+v, want False NodePoolTaintsNotCovered naming NodePool burst and the taint only", ready)
	}

	// The same key and effect with another value does not cover it: it would replace the pool's value.
	burst.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "workload", Value: "web", Effect: corev1.TaintEffectNoSchedule}}
	if err := r.kubeClient.Update(ctx, burst); err != nil {
		t.Fatal(err)
	}
	if ready := r.reconcile().StatusConditions().Get(status.ConditionReady); !ready.IsFalse() || ready.Reason != "NodePoolTaintsNotCovered" {
		t.Fatalf("with another value: Ready = %+v, want False NodePoolTaintsNotCovered", ready)
	}

	// As a startup taint (something removes it) it is covered too.
	burst.Spec.Template.Spec.Taints = nil
	burst.Spec.Template.Spec.StartupTaints = []corev1.Taint{workload}
	if err := r.kubeClient.Update(ctx, burst); err != nil {
		t.Fatal(err)
	}
	if ready := r.reconcile().StatusConditions().Get(status.ConditionReady); !ready.IsTrue() {
		t.Fatalf("with the taint as a startup taint: Ready = %+v, want True", ready)
	}

	// A taint added to the pool in the stack: NotReady again until the NodePool carries it.
	api.UpdatePool("workers", func(pool *nodefleetapi.Pool) {
		pool.Taints = append(pool.Taints, nodefleetapi.Taint{Key: "example.com/dedicated", Effect: nodefleetapi.TaintEffectNoExecute})
	})
	if ready := r.reconcile().StatusConditions().Get(status.ConditionReady); !ready.IsFalse() || !strings.Contains(ready.Message, "lacks example.com/dedicated:NoExecute") {
		t.Fatalf("after the pool gained a taint: Ready = %+v, want False naming example.com/dedicated:NoExecute", ready)
	}

	// The pool without taints or labels: nothing to cover, and the status says so.
	api.UpdatePool("workers", func(pool *nodefleetapi.Pool) {
		pool.Taints = []nodefleetapi.Taint{}
		pool.Labels = map[string]string{}
	})
	bare := r.reconcile()
	if ready := bare.StatusConditions().Get(status.ConditionReady); !ready.IsTrue() || bare.Status.PoolTaints != nil || bare.Status.PoolLabels != nil {
		t.Fatalf("pool without taints: Ready %+v, poolTaints %v, poolLabels %v; want True and neither", ready, bare.Status.PoolTaints, bare.Status.PoolLabels)
	}

	// While the API cannot be read, the last taints stay shown.
	api.UpdatePool("workers", func(pool *nodefleetapi.Pool) {
		pool.Taints = []nodefleetapi.Taint{{Key: "workload", Value: ptr("batch"), Effect: nodefleetapi.TaintEffectNoSchedule}}
	})
	r.reconcile()
	api.FailNext("getCluster", fake.ErrorAnswer{Status: 503, Code: "Unavailable", Message: "restarting"})
	if unready := r.reconcileTimes(FailedChecksBeforeNotReady); unready.StatusConditions().Get(status.ConditionReady).Reason != "Unavailable" || !reflect.DeepEqual(unready.Status.PoolTaints, []corev1.Taint{workload}) {
		t.Fatalf("while the API is unavailable: Ready %+v, poolTaints %v; want Unavailable and the last taints kept", unready.StatusConditions().Get(status.ConditionReady), unready.Status.PoolTaints)
	}
}

// A NodePool change re-checks the NodeClass it names (old and new, as controller-runtime maps
// both of an update); NodePools of other kinds of NodeClass enqueue nothing.
func TestNodePoolChangesEnqueueTheirNodeClass(t *testing.T) {
	requests := nodeClassOfNodePool(context.Background(), nodePoolOf("burst", "default", nil, nil))
	if len(requests) != 1 || requests[0].Name != "default" {
		t.Fatalf("requests = %v, want the NodeClass default", requests)
	}
	foreign := nodePoolOf("aws", "default", nil, nil)
	foreign.Spec.Template.Spec.NodeClassRef = &karpv1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"}
	if requests := nodeClassOfNodePool(context.Background(), foreign); len(requests) != 0 {
		t.Fatalf("requests = %v for another provider's NodePool, want none", requests)
	}
}
