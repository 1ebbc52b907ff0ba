package main

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/awslabs/operatorpkg/status"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	clientfake "sigs.k8s.io/controller-runtime/pkg/client/fake"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"nodefleet.dev/driver/pkg/apiclient"
	"nodefleet.dev/driver/pkg/apis"
	"nodefleet.dev/driver/pkg/apis/v1alpha1"
	nodefleet "nodefleet.dev/driver/pkg/cloudprovider"
	"nodefleet.dev/driver/pkg/controllers/nodeclaim/garbagecollection"
	"nodefleet.dev/driver/pkg/fake"
	"nodefleet.dev/driver/pkg/nodefleetapi"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
	cloudprovidermetrics "sigs.k8s.io/karpenter/pkg/cloudprovider/metrics"
	"sigs.k8s.io/karpenter/pkg/controllers/nodeoverlay"
	"sigs.k8s.io/karpenter/pkg/operator/injection"
	"sigs.k8s.io/karpenter/pkg/operator/options"
)

// exportedMetricsFile lists the series names of the driver's own metrics and of Karpenter's
// CloudProvider decorator as the registry serves them: test/automation/api/dashboardQueries.test.ts
// checks every query of the Grafana dashboard against it. Regenerate with NODEFLEET_UPDATE_GOLDEN=1.
const exportedMetricsFile = "testdata/exported-metrics.txt"

// exportedPrefixes are the families the file lists: the driver's and the decorator's. Karpenter's
// other metrics depend on which of its controllers ran, which this test does not start.
var exportedPrefixes = []string{"nodefleet_", "karpenter_cloudprovider_"}

const (
	testCluster = "prod"
	testPool    = "workers"
	testToken   = "t0ken"
)

// Karpenter's controllers get the provider through Karpenter's metrics decorator: every method is
// timed by controller and method, and errors counted by kind. Then every driver metric is exercised
// (calls by route and code, an auth error, a marked offering, a failed list, a garbage collected
// node), and the series the registry serves must be those exportedMetricsFile lists.
func TestTheProviderIsMeasuredAndTheExportedMetricsAreListed(t *testing.T) {
	api := fake.NewScalingAPI(testCluster, testToken, testPool)
	defer api.Close()
	api.SetInstanceTypes(nodefleetapi.InstanceType{
		Name: "cx22", Pool: testPool, Provider: "hcloud", Arch: "amd64", Os: "linux", Region: "eu-central", Cpu: 2, MemoryMiB: 4096,
		Capacity:  nodefleetapi.ResourceList{Cpu: "2", Memory: "4096Mi", Pods: "110", EphemeralStorage: "38Gi"},
		Overhead:  nodefleetapi.ResourceList{Cpu: "100m", Memory: "300Mi", Pods: "0", EphemeralStorage: "1Gi"},
		Offerings: []nodefleetapi.Offering{{Zone: "hel1", CapacityType: "on-demand", Price: 0.006, Available: true}},
	})
	nodeClass := &v1alpha1.NodefleetNodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: v1alpha1.NodefleetNodeClassSpec{
			Endpoint: api.URL(), ClusterID: testCluster, Pool: testPool,
			TokenSecretRef: &v1alpha1.SecretKeyReference{Name: "nodefleet-token", Namespace: "karpenter", Key: "token"},
		},
	}
	nodeClass.StatusConditions().SetTrue(status.ConditionReady)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "nodefleet-token", Namespace: "karpenter"}, Data: map[string][]byte{"token": []byte(testToken)}}
	nodeClassRef := &karpv1.NodeClassReference{Group: apis.Group, Kind: "NodefleetNodeClass", Name: "default"}
	nodePool := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	nodePool.Spec.Template.Spec.NodeClassRef = nodeClassRef
	kubeClient := clientfake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(nodeClass, secret, nodePool).Build()
	connections := apiclient.NewConnections(apiclient.SecretTokens{Reader: kubeClient, Namespace: "karpenter"})
	recorder := &fake.Recorder{}
	full, measured := decorated(nodefleet.New(kubeClient, connections, nodefleet.NewSoldOutOfferings(), recorder), kubeClient, nodeoverlay.NewInstanceTypeStore())
	if full == measured {
		t.Fatal("the NodeOverlay decorator is missing")
	}
	ctx := injection.WithControllerName(options.ToContext(context.Background(), &options.Options{}), "metrics.test")
	timedCalls := func(method string) uint64 {
		return sample(t, "karpenter_cloudprovider_duration_seconds", map[string]string{"controller": "metrics.test", "method": method, "provider": "nodefleet"}).GetHistogram().GetSampleCount()
	}

	if _, err := full.GetInstanceTypes(ctx, nodePool); err != nil {
		t.Fatal(err)
	}
	claim := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "default-a", Labels: map[string]string{karpv1.NodePoolLabelKey: "default"}},
		Spec:       karpv1.NodeClaimSpec{NodeClassRef: nodeClassRef},
	}
	created, err := full.Create(ctx, claim)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := full.Get(ctx, created.Status.ProviderID); err != nil {
		t.Fatal(err)
	}
	if _, err := full.List(ctx); err != nil {
		t.Fatal(err)
	}
	for _, method := range []string{"GetInstanceTypes", "Create", "Get", "List"} {
		if timedCalls(method) != 1 {
			t.Errorf("karpenter_cloudprovider_duration_seconds{method=%q} counted %d calls, want 1", method, timedCalls(method))
		}
	}
	// A refused create: the decorator counts the error by kind, the driver marks the offering.
	api.FailNext("createNode", fake.ErrorAnswer{Status: 409, Code: "InsufficientCapacity", Message: "quota exhausted",
		Details: map[string]any{"offerings": []any{map[string]any{"instanceType": "cx22", "zone": "hel1", "reason": "quota"}}}})
	insufficient := func() float64 {
		return sample(t, "karpenter_cloudprovider_errors_total", map[string]string{
			"controller": "metrics.test", "method": "Create", "provider": "nodefleet", "error": cloudprovidermetrics.InsufficientCapacityError}).GetCounter().GetValue()
	}
	before := insufficient()
	second := claim.DeepCopy()
	second.Name = "default-b"
	if _, err := full.Create(ctx, second); err == nil {
		t.Fatal("a create the API refused succeeded")
	}
	api.ClearErrors()
	if insufficient()-before != 1 {
		t.Errorf("karpenter_cloudprovider_errors_total{error=InsufficientCapacityError} grew by %v, want 1", insufficient()-before)
	}
	if len(recorder.WithReason(nodefleet.OfferingUnavailableReason)) != 1 {
		t.Error("no OfferingUnavailable Event for the refused offering")
	}

	// A failed list, then an unauthorized token.
	api.FailNext("listNodes", fake.ErrorAnswer{Status: 503, Code: "Unavailable", Message: "restarting"})
	if _, err := full.List(ctx); err != nil {
		t.Fatal(err)
	}
	api.ClearErrors()
	api.SetTokens("another")
	_, _ = full.Get(ctx, created.Status.ProviderID)
	api.SetTokens(testToken)

	// A node whose NodeClaim never existed, garbage collected after the grace.
	labels := map[string]string{karpv1.NodePoolLabelKey: "default", karpv1.NodeClassLabelKey(v1alpha1.SchemeGroupVersion.WithKind("NodefleetNodeClass").GroupKind()): "default"}
	connection, err := connections.For(nodeClass)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := connection.CreateNode(ctx, nodefleetapi.CreateNodeJSONRequestBody{UniqueID: "default-leaked", Pool: testPool, Labels: &labels}); err != nil {
		t.Fatal(err)
	}
	later := func() time.Time { return time.Now().Add(time.Hour) }
	if _, err := garbagecollection.NewController(kubeClient, connections, recorder, later, 0).Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if len(recorder.WithReason(garbagecollection.GarbageCollectedReason)) != 1 {
		t.Error("the leaked node was not garbage collected")
	}

	checkExportedMetrics(t, exportedSeriesNames(t))
}

// sample is the series of family name with exactly labels as the registry serves it (nil if none).
func sample(t *testing.T, name string, labels map[string]string) *dto.Metric {
	t.Helper()
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, family := range families {
		if family.GetName() != name {
			continue
		}
		for _, metric := range family.GetMetric() {
			if labelsOf(metric) == formatLabels(labels) {
				return metric
			}
		}
	}
	return nil
}

func labelsOf(metric *dto.Metric) string {
	labels := map[string]string{}
	for _, pair := range metric.GetLabel() {
		labels[pair.GetName()] = pair.GetValue()
	}
	return formatLabels(labels)
}

func formatLabels(labels map[string]string) string {
	var pairs []string
	for name, value := range labels {
		pairs = append(pairs, name+"="+value)
	}
	slices.Sort(pairs)
	return strings.Join(pairs, ",")
}

// exportedSeriesNames are the series names the registry serves for exportedPrefixes: a histogram
// family is served as its _bucket, _sum and _count series, which is what queries name.
func exportedSeriesNames(t *testing.T) []string {
	t.Helper()
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, family := range families {
		name := family.GetName()
		if !slices.ContainsFunc(exportedPrefixes, func(prefix string) bool { return strings.HasPrefix(name, prefix) }) {
			continue
		}
		switch family.GetType() {
		case dto.MetricType_HISTOGRAM:
			names = append(names, name+"_bucket", name+"_sum", name+"_count")
		case dto.MetricType_SUMMARY:
			names = append(names, name, name+"_sum", name+"_count")
		default:
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// checkExportedMetrics compares names with exportedMetricsFile, or rewrites the file with
// NODEFLEET_UPDATE_GOLDEN=1.
func checkExportedMetrics(t *testing.T, names []string) {
	t.Helper()
	want := strings.Join(names, "\n") + "\n"
	if os.Getenv("NODEFLEET_UPDATE_GOLDEN") == "1" {
		if err := os.WriteFile(exportedMetricsFile, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(exportedMetricsFile)
	if err != nil {
		t.Fatalf("%v (create it with NODEFLEET_UPDATE_GOLDEN=1)", err)
	}
	if string(got) != want {
		t.Fatalf("%s is stale (regenerate it with NODEFLEET_UPDATE_GOLDEN=1 and check the dashboard's queries):\nfile:\n%s\nregistry:\n%s", exportedMetricsFile, got, want)
	}
	for _, prefix := range []string{"nodefleet_driver_api_requests_total", "nodefleet_driver_api_request_duration_seconds_bucket",
		"nodefleet_driver_api_auth_errors_total", "nodefleet_driver_api_list_failures_total", "nodefleet_driver_offerings_marked_unavailable_total",
		"nodefleet_driver_garbage_collected_nodes_total", "karpenter_cloudprovider_duration_seconds_bucket", "karpenter_cloudprovider_errors_total"} {
		if !slices.Contains(names, prefix) {
			t.Errorf("the registry serves no %s after the code that exports it ran", prefix)
		}
	}
}
