package apiclient

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/client-go/kubernetes/scheme"
	clientfake "sigs.k8s.io/controller-runtime/pkg/client/fake"

	"nodefleet.dev/driver/pkg/fake"
	"nodefleet.dev/driver/pkg/metrics"
	"nodefleet.dev/driver/pkg/nodefleetapi"
)

// counted is how much a counter of metrics.APIRequests or metrics.AuthErrors grew while run ran.
func counted(t *testing.T, run func(), counter func() float64) float64 {
	t.Helper()
	before := counter()
	run()
	return counter() - before
}

// Every call is counted by its route template (never its node id), method and status code, timed,
// and a 401 or an unreadable token is counted as an auth error of the cluster.
func TestCallsAreCountedByRouteAndCodeAndAuthErrorsByCluster(t *testing.T) {
	api := fake.NewScalingAPI("prod", "t0ken", "workers")
	defer api.Close()
	api.SetInstanceTypes(nodefleetapi.InstanceType{
		Name: "cx22", Pool: "workers", Provider: "hcloud", Arch: "amd64", Os: "linux", Region: "eu-central", Cpu: 2, MemoryMiB: 4096,
		Capacity:  nodefleetapi.ResourceList{Cpu: "2", Memory: "4096Mi", Pods: "110", EphemeralStorage: "38Gi"},
		Offerings: []nodefleetapi.Offering{{Zone: "hel1", CapacityType: "on-demand", Price: 0.006, Available: true}},
	})
	kubeClient := clientfake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(tokenSecret("t0ken")).Build()
	connection, err := NewConnections(SecretTokens{Reader: kubeClient, Namespace: "karpenter"}).For(nodeClassFor(api.URL()))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	requests := func(route, method, code string) func() float64 {
		return func() float64 { return testutil.ToFloat64(metrics.APIRequests.WithLabelValues(route, method, code)) }
	}
	timed := func() int { return testutil.CollectAndCount(metrics.APIRequestDuration) }

	if got := counted(t, func() {
		if _, err := connection.Cluster(ctx); err != nil {
			t.Fatal(err)
		}
	}, requests("/clusters/{id}", "GET", "200")); got != 1 {
		t.Errorf("GET /clusters/{id} 200 grew by %v, want 1", got)
	}
	var nodeID string
	if got := counted(t, func() {
		node, err := connection.CreateNode(ctx, nodefleetapi.CreateNodeJSONRequestBody{UniqueID: "default-a", Pool: "workers"})
		if err != nil {
			t.Fatal(err)
		}
		nodeID = node.NodeID
	}, requests("/clusters/{id}/nodes", "POST", "201")); got != 1 {
		t.Errorf("POST /clusters/{id}/nodes 201 grew by %v, want 1", got)
	}
	api.Gone(nodeID)
	if got := counted(t, func() {
		if _, err := connection.GetNode(ctx, nodeID); CodeOf(err) != "NodeNotFound" {
			t.Fatalf("GetNode of a gone node: %v, want NodeNotFound", err)
		}
	}, requests("/clusters/{id}/nodes/{nodeID}", "GET", "404")); got != 1 {
		t.Errorf("GET /clusters/{id}/nodes/{nodeID} 404 grew by %v, want 1", got)
	}
	if timed() == 0 {
		t.Error("no call was timed in nodefleet_driver_api_request_duration_seconds")
	}

	api.SetTokens("another")
	unauthorized := func() float64 {
		return testutil.ToFloat64(metrics.AuthErrors.WithLabelValues("prod", metrics.AuthUnauthorized))
	}
	if got := counted(t, func() { _, _ = connection.ListNodes(ctx) }, unauthorized); got != 1 {
		t.Errorf("auth errors (unauthorized) grew by %v after a 401, want 1", got)
	}

	unreadable, err := NewConnections(SecretTokens{Reader: clientfake.NewClientBuilder().WithScheme(scheme.Scheme).Build(), Namespace: "karpenter"}).For(nodeClassFor(api.URL()))
	if err != nil {
		t.Fatal(err)
	}
	tokenUnavailable := func() float64 {
		return testutil.ToFloat64(metrics.AuthErrors.WithLabelValues("prod", metrics.AuthTokenUnavailable))
	}
	if got := counted(t, func() { _, _ = unreadable.Cluster(ctx) }, tokenUnavailable); got != 1 {
		t.Errorf("auth errors (token_unavailable) grew by %v without the Secret, want 1", got)
	}

	// No answer at all: the code is "none".
	api.Close()
	if got := counted(t, func() { _, _ = connection.InstanceTypes(ctx) }, requests("/clusters/{id}/instance-types", "GET", metrics.CodeNoResponse)); got != 1 {
		t.Errorf("a call to a closed API grew code %q by %v, want 1", metrics.CodeNoResponse, got)
	}
}
