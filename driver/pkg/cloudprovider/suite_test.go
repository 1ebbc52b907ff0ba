package cloudprovider

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
	"nodefleet.dev/driver/pkg/apis"
	"nodefleet.dev/driver/pkg/apis/v1alpha1"
	"nodefleet.dev/driver/pkg/fake"
	"nodefleet.dev/driver/pkg/nodefleetapi"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
)

const (
	testCluster   = "prod"
	testPool      = "workers"
	testToken     = "token-one"
	testNamespace = "karpenter"
)

// environment is a CloudProvider against a fake scaling API, with a NodeClass and its token
// Secret in a fake Kubernetes client.
type environment struct {
	api           *fake.ScalingAPI
	kubeClient    client.Client
	cloudProvider *CloudProvider
	soldOut       *SoldOutOfferings
	recorder      *fake.Recorder
	nodeClass     *v1alpha1.NodefleetNodeClass
}

func newEnvironment(t *testing.T) *environment {
	t.Helper()
	api := fake.NewScalingAPI(testCluster, testToken, testPool)
	t.Cleanup(api.Close)
	api.SetInstanceTypes(instanceType("cx22", 2, 4096, 0.0060, "hel1", "fsn1"), instanceType("cx32", 4, 8192, 0.0110, "hel1"))
	nodeClass := &v1alpha1.NodefleetNodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: v1alpha1.NodefleetNodeClassSpec{
			Endpoint:       api.URL(),
			ClusterID:      testCluster,
			Pool:           testPool,
			TokenSecretRef: &v1alpha1.SecretKeyReference{Name: "nodefleet-token", Namespace: testNamespace, Key: "token"},
		},
	}
	nodeClass.StatusConditions().SetTrue(status.ConditionReady)
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "nodefleet-token", Namespace: testNamespace},
		Data:       map[string][]byte{"token": []byte(testToken)},
	}
	kubeClient := clientfake.NewClientBuilder().WithScheme(scheme.Scheme).
		WithStatusSubresource(&v1alpha1.NodefleetNodeClass{}).
		WithObjects(nodeClass, secret).Build()
	soldOut := NewSoldOutOfferings()
	connections := apiclient.NewConnections(apiclient.SecretTokens{Reader: kubeClient, Namespace: testNamespace})
	recorder := &fake.Recorder{}
	return &environment{
		api:           api,
		kubeClient:    kubeClient,
		cloudProvider: New(kubeClient, connections, soldOut, recorder),
		soldOut:       soldOut,
		recorder:      recorder,
		nodeClass:     nodeClass,
	}
}

func instanceType(name string, cpu, memoryMiB int, price float32, zones ...string) nodefleetapi.InstanceType {
	instanceType := nodefleetapi.InstanceType{
		Name: name, Pool: testPool, Provider: "hcloud", Arch: "amd64", Os: "linux", Region: "eu-central",
		Cpu: float32(cpu), MemoryMiB: float32(memoryMiB),
		Capacity: nodefleetapi.ResourceList{Cpu: formatNumber(cpu), Memory: formatNumber(memoryMiB) + "Mi", Pods: "110", EphemeralStorage: "38Gi"},
		Overhead: nodefleetapi.ResourceList{Cpu: "100m", Memory: "300Mi", Pods: "0", EphemeralStorage: "1Gi"},
	}
	for _, zone := range zones {
		instanceType.Offerings = append(instanceType.Offerings, nodefleetapi.Offering{Zone: zone, CapacityType: "on-demand", Price: price, Available: true})
	}
	return instanceType
}

func nodeClaim(name string, requirements ...karpv1.NodeSelectorRequirementWithMinValues) *karpv1.NodeClaim {
	return &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{karpv1.NodePoolLabelKey: "default"}},
		Spec: karpv1.NodeClaimSpec{
			NodeClassRef: &karpv1.NodeClassReference{Group: apis.Group, Kind: "NodefleetNodeClass", Name: "default"},
			Requirements: requirements,
		},
	}
}

func claimRequirement(key string, operator corev1.NodeSelectorOperator, values ...string) karpv1.NodeSelectorRequirementWithMinValues {
	return karpv1.NodeSelectorRequirementWithMinValues{Key: key, Operator: operator, Values: values}
}

// createNode creates a NodeClaim's node and fails the test if Create fails.
func (e *environment) createNode(t *testing.T, claim *karpv1.NodeClaim) *karpv1.NodeClaim {
	t.Helper()
	created, err := e.cloudProvider.Create(context.Background(), claim)
	if err != nil {
		t.Fatalf("Create(%s): %v", claim.Name, err)
	}
	claim.Status.ProviderID = created.Status.ProviderID
	return created
}

// failNode marks the node of a NodeClaim the API created FAILED with code and reason, as a failed
// engine run leaves it, and returns its id.
func (e *environment) failNode(claimName, code, reason string) string {
	nodeID := nodefleetapi.NodeIDFor(claimName)
	e.api.UpdateNode(nodeID, func(node *nodefleetapi.Node) {
		node.Status = "FAILED"
		node.FailureCode, node.FailureReason = &code, &reason
	})
	return nodeID
}

func (e *environment) requestsOf(method, pathSuffix string) []fake.Request {
	var matching []fake.Request
	for _, request := range e.api.Requests() {
		if request.Method == method && len(request.Path) >= len(pathSuffix) && request.Path[len(request.Path)-len(pathSuffix):] == pathSuffix {
			matching = append(matching, request)
		}
	}
	return matching
}

func fakeUnavailable() fake.ErrorAnswer {
	return fake.ErrorAnswer{Status: 503, Code: "Unavailable", Message: "stopping"}
}
