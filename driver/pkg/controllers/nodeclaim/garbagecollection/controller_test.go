package garbagecollection

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	clientfake "sigs.k8s.io/controller-runtime/pkg/client/fake"

	"nodefleet.dev/driver/pkg/apiclient"
	"nodefleet.dev/driver/pkg/apis/v1alpha1"
	"nodefleet.dev/driver/pkg/fake"
	"nodefleet.dev/driver/pkg/metrics"
	"nodefleet.dev/driver/pkg/nodefleetapi"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
)

const (
	testToken     = "token-one"
	testNamespace = "karpenter"
	testPool      = "workers"
	testGrace     = 5 * time.Minute
)

// environment is the collector against fake scaling APIs (one per cluster), with a NodeClass per
// cluster and the token Secret in a fake Kubernetes client, on a clock the test moves.
type environment struct {
	apis        map[string]*fake.ScalingAPI
	nodeClasses map[string]*v1alpha1.NodefleetNodeClass
	kubeClient  client.Client
	connections *apiclient.Connections
	now         time.Time
	controller  *Controller
	recorder    *fake.Recorder
}

func newEnvironment(t *testing.T, clusters ...string) *environment {
	t.Helper()
	e := &environment{apis: map[string]*fake.ScalingAPI{}, nodeClasses: map[string]*v1alpha1.NodefleetNodeClass{}, now: time.Now()}
	objects := []client.Object{&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "nodefleet-token", Namespace: testNamespace},
		Data:       map[string][]byte{"token": []byte(testToken)},
	}}
	for _, cluster := range clusters {
		api := fake.NewScalingAPI(cluster, testToken, testPool)
		t.Cleanup(api.Close)
		api.SetInstanceTypes(nodefleetapi.InstanceType{
			Name: "cx22", Pool: testPool, Provider: "hcloud", Arch: "amd64", Os: "linux", Region: "eu-central", Cpu: 2, MemoryMiB: 4096,
			Capacity:  nodefleetapi.ResourceList{Cpu: "2", Memory: "4096Mi", Pods: "110", EphemeralStorage: "38Gi"},
			Offerings: []nodefleetapi.Offering{{Zone: "hel1", CapacityType: "on-demand", Price: 0.006, Available: true}},
		})
		nodeClass := &v1alpha1.NodefleetNodeClass{
			ObjectMeta: metav1.ObjectMeta{Name: cluster},
			Spec: v1alpha1.NodefleetNodeClassSpec{
				Endpoint: api.URL(), ClusterID: cluster, Pool: testPool,
				TokenSecretRef: &v1alpha1.SecretKeyReference{Name: "nodefleet-token", Namespace: testNamespace, Key: "token"},
			},
		}
		e.apis[cluster] = api
		e.nodeClasses[cluster] = nodeClass
		objects = append(objects, nodeClass)
	}
	e.kubeClient = clientfake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(objects...).Build()
	e.connections = apiclient.NewConnections(apiclient.SecretTokens{Reader: e.kubeClient, Namespace: testNamespace})
	e.recorder = &fake.Recorder{}
	e.controller = NewController(e.kubeClient, e.connections, e.recorder, func() time.Time { return e.now }, testGrace)
	return e
}

// createNode creates the node of NodeClaim name in cluster through the API, as the driver's Create
// does (with Karpenter's NodeClaim labels), and answers its nodeID.
func (e *environment) createNode(t *testing.T, cluster, name string, labels map[string]string) string {
	t.Helper()
	connection, err := e.connections.For(e.nodeClasses[cluster])
	if err != nil {
		t.Fatal(err)
	}
	node, err := connection.CreateNode(context.Background(), nodefleetapi.CreateNodeJSONRequestBody{UniqueID: name, Pool: testPool, Labels: &labels})
	if err != nil {
		t.Fatal(err)
	}
	return node.NodeID
}

func karpenterLabels(nodeClass string) map[string]string {
	return map[string]string{karpv1.NodePoolLabelKey: "default", nodeClassLabelKey: nodeClass}
}

func (e *environment) reconcile(t *testing.T) {
	t.Helper()
	result, err := e.controller.Reconcile(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if result.RequeueAfter != 2*time.Minute {
		t.Fatalf("requeued after %v, want every 2 minutes", result.RequeueAfter)
	}
}

func (e *environment) status(cluster, nodeID string) string {
	node := e.apis[cluster].Node(nodeID)
	if node == nil {
		return "gone"
	}
	return string(node.Status)
}

func (e *environment) deletes(cluster string) int {
	count := 0
	for _, request := range e.apis[cluster].Requests() {
		if request.Method == "DELETE" {
			count++
		}
	}
	return count
}

func TestAnUnclaimedNodeIsDeletedOnlyAfterTheGrace(t *testing.T) {
	e := newEnvironment(t, "prod")
	nodeID := e.createNode(t, "prod", "default-lost", karpenterLabels("prod"))
	providerID := e.apis["prod"].Node(nodeID).ProviderID
	joined := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "prod-" + nodeID}, Spec: corev1.NodeSpec{ProviderID: providerID}}
	if err := e.kubeClient.Create(context.Background(), joined); err != nil {
		t.Fatal(err)
	}

	collectedBefore := testutil.ToFloat64(metrics.GarbageCollectedNodes.WithLabelValues("prod"))
	e.now = e.now.Add(testGrace - 10*time.Second)
	e.reconcile(t)
	if status := e.status("prod", nodeID); status != "PENDING" || e.deletes("prod") != 0 {
		t.Fatalf("within the grace: node %s, %d deletes; want it left alone", status, e.deletes("prod"))
	}
	if published := e.recorder.WithReason(GarbageCollectedReason); len(published) != 0 {
		t.Fatalf("within the grace: %d GarbageCollected Events, want none", len(published))
	}

	e.now = e.now.Add(20 * time.Second)
	e.reconcile(t)
	if status := e.status("prod", nodeID); status != "TERMINATING" {
		t.Fatalf("after the grace: node %s, want TERMINATING", status)
	}
	if err := e.kubeClient.Get(context.Background(), client.ObjectKeyFromObject(joined), &corev1.Node{}); err == nil {
		t.Fatal("the Node object of the collected node still exists")
	}

	// Terminating now: not deleted again.
	e.reconcile(t)
	if got := e.deletes("prod"); got != 1 {
		t.Fatalf("%d deletes, want one", got)
	}
	if got := testutil.ToFloat64(metrics.GarbageCollectedNodes.WithLabelValues("prod")) - collectedBefore; got != 1 {
		t.Errorf("nodefleet_driver_garbage_collected_nodes_total{cluster=prod} grew by %v, want 1", got)
	}
	published := e.recorder.WithReason(GarbageCollectedReason)
	if len(published) != 1 {
		t.Fatalf("%d GarbageCollected Events, want one", len(published))
	}
	if published[0].InvolvedObject.(*v1alpha1.NodefleetNodeClass).Name != "prod" || published[0].Type != corev1.EventTypeNormal ||
		!strings.Contains(published[0].Message, providerID) {
		t.Errorf("GarbageCollected Event = %+v, want a Normal Event on NodeClass prod naming %s", published[0], providerID)
	}
}

func TestAClaimedNodeIsNeverDeleted(t *testing.T) {
	e := newEnvironment(t, "prod")
	launched := e.createNode(t, "prod", "default-launched", karpenterLabels("prod"))
	withProviderID := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "default-launched"}}
	withProviderID.Status.ProviderID = e.apis["prod"].Node(launched).ProviderID
	// A NodeClaim whose create answer was lost: no providerID yet, Karpenter's retry will replay it.
	unanswered := e.createNode(t, "prod", "default-unanswered", karpenterLabels("prod"))
	withoutProviderID := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "default-unanswered"}}
	for _, nodeClaim := range []*karpv1.NodeClaim{withProviderID, withoutProviderID} {
		if err := e.kubeClient.Create(context.Background(), nodeClaim); err != nil {
			t.Fatal(err)
		}
	}

	e.now = e.now.Add(24 * time.Hour)
	e.reconcile(t)
	for _, nodeID := range []string{launched, unanswered} {
		if status := e.status("prod", nodeID); status != "PENDING" {
			t.Errorf("claimed node %s is %s, want it left alone", nodeID, status)
		}
	}
	if got := e.deletes("prod"); got != 0 {
		t.Fatalf("%d deletes, want none", got)
	}
}

func TestOnlyNodesOfThisDriverAreCollected(t *testing.T) {
	e := newEnvironment(t, "prod")
	byHand := e.createNode(t, "prod", "made-by-hand", map[string]string{"team": "ops"})
	e.now = e.now.Add(24 * time.Hour)
	e.reconcile(t)
	if status := e.status("prod", byHand); status != "PENDING" {
		t.Fatalf("a node created without a NodeClaim's labels is %s, want it left alone", status)
	}
}

func TestARegisteredReadyNodeIsNotCollected(t *testing.T) {
	e := newEnvironment(t, "prod")
	nodeID := e.createNode(t, "prod", "default-ready", karpenterLabels("prod"))
	ready := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "prod-" + nodeID, Labels: map[string]string{karpv1.NodeRegisteredLabelKey: "true"}},
		Spec:       corev1.NodeSpec{ProviderID: e.apis["prod"].Node(nodeID).ProviderID},
		Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
	}
	if err := e.kubeClient.Create(context.Background(), ready); err != nil {
		t.Fatal(err)
	}
	e.now = e.now.Add(24 * time.Hour)
	e.reconcile(t)
	if status := e.status("prod", nodeID); status != "PENDING" {
		t.Fatalf("an unclaimed node whose registered Node is Ready is %s, want it left alone", status)
	}
}

func TestAFailingListForOneNodeClassDoesNotStopTheOthers(t *testing.T) {
	e := newEnvironment(t, "alpha", "beta", "gamma")
	nodes := map[string]string{}
	for _, cluster := range []string{"alpha", "beta", "gamma"} {
		nodes[cluster] = e.createNode(t, cluster, "default-"+cluster, karpenterLabels(cluster))
	}
	e.apis["beta"].FailNext("listNodes", fake.ErrorAnswer{Status: 503, Code: "Unavailable", Message: "down"})
	e.now = e.now.Add(testGrace + time.Second)
	e.reconcile(t)
	for cluster, want := range map[string]string{"alpha": "TERMINATING", "beta": "PENDING", "gamma": "TERMINATING"} {
		if status := e.status(cluster, nodes[cluster]); status != want {
			t.Errorf("cluster %s: node %s, want %s", cluster, status, want)
		}
	}
}

func TestAShortGraceRunsTheCollectorAsOften(t *testing.T) {
	if got := NewController(nil, nil, nil, time.Now, 30*time.Second).Interval(); got != 30*time.Second {
		t.Fatalf("interval %v with a 30 s grace, want 30 s", got)
	}
	if got := NewController(nil, nil, nil, time.Now, 0).Interval(); got != 2*time.Minute {
		t.Fatalf("interval %v with the default grace, want 2 minutes", got)
	}
}

// With hcloudProviderIds: hcloud a node has no providerID until its server exists: it must never be
// taken for a Node that has none either (or its deletion would delete that Node).
func TestANodeWithoutProviderIDIsNoNodes(t *testing.T) {
	nodes := []corev1.Node{
		{ObjectMeta: metav1.ObjectMeta{Name: "unset"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "server"}, Spec: corev1.NodeSpec{ProviderID: "hcloud://4711"}},
	}
	if node := kubeNodeOf(nodes, ""); node != nil {
		t.Errorf("kubeNodeOf(\"\") = %s, want none", node.Name)
	}
	if node := kubeNodeOf(nodes, "hcloud://4711"); node == nil || node.Name != "server" {
		t.Errorf("kubeNodeOf(hcloud://4711) = %v, want the Node named server", node)
	}
}
