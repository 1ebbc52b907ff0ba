package cloudprovider

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"nodefleet.dev/driver/pkg/apis"
	"nodefleet.dev/driver/pkg/nodefleetapi"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
	"sigs.k8s.io/karpenter/pkg/cloudprovider"
)

func nodePool() *karpv1.NodePool {
	return &karpv1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: karpv1.NodePoolSpec{Template: karpv1.NodeClaimTemplate{Spec: karpv1.NodeClaimTemplateSpec{
			NodeClassRef: &karpv1.NodeClassReference{Group: apis.Group, Kind: "NodefleetNodeClass", Name: "default"},
		}}},
	}
}

func instanceTypesByName(t *testing.T, e *environment) map[string]*cloudprovider.InstanceType {
	t.Helper()
	instanceTypes, err := e.cloudProvider.GetInstanceTypes(context.Background(), nodePool())
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*cloudprovider.InstanceType{}
	for _, instanceType := range instanceTypes {
		byName[instanceType.Name] = instanceType
	}
	return byName
}

func TestGetInstanceTypesDefinesEveryWellKnownLabel(t *testing.T) {
	e := newEnvironment(t)
	byName := instanceTypesByName(t, e)
	if len(byName) != 2 {
		t.Fatalf("got %d instance types, want 2", len(byName))
	}
	for name, instanceType := range byName {
		for key := range karpv1.WellKnownLabels {
			if !instanceType.Requirements.Has(key) {
				t.Errorf("%s does not define well-known label %s", name, key)
			}
		}
		for _, offering := range instanceType.Offerings {
			if !offering.Requirements.Has(corev1.LabelTopologyZone) || !offering.Requirements.Has(karpv1.CapacityTypeLabelKey) || offering.Price <= 0 {
				t.Errorf("%s offering %v lacks zone, capacity type or price", name, offering.Requirements)
			}
		}
	}
	cx22 := byName["cx22"]
	checks := map[string]string{
		corev1.LabelInstanceTypeStable: "cx22", corev1.LabelArchStable: "amd64", corev1.LabelOSStable: "linux",
		corev1.LabelTopologyRegion: "eu-central", karpv1.CapacityTypeLabelKey: "on-demand", karpv1.NodePoolLabelKey: "default",
		"nodefleet.io/instance-cpu": "2", "nodefleet.io/instance-memory": "4096", "nodefleet.io/pool": testPool,
	}
	for key, want := range checks {
		if got := cx22.Requirements.Get(key); !got.Has(want) || got.Len() != 1 {
			t.Errorf("cx22 %s = %v, want %s", key, got.Values(), want)
		}
	}
	if zones := cx22.Requirements.Get(corev1.LabelTopologyZone); !zones.Has("hel1") || !zones.Has("fsn1") {
		t.Errorf("cx22 zones = %v", zones.Values())
	}
	if cx22.Requirements.Get(corev1.LabelWindowsBuild).Operator() != corev1.NodeSelectorOpDoesNotExist {
		t.Error("windows-build must be DoesNotExist")
	}
	if cpu := cx22.Capacity[corev1.ResourceCPU]; cpu.Cmp(resource.MustParse("2")) != 0 {
		t.Errorf("capacity cpu = %s", cpu.String())
	}
	allocatable := cx22.Allocatable()
	if memory := allocatable[corev1.ResourceMemory]; memory.Cmp(resource.MustParse("3796Mi")) != 0 {
		t.Errorf("allocatable memory = %s, want capacity less the API's overhead", memory.String())
	}
}

func TestGetInstanceTypesKeepsUnavailableOfferingsAndAppliesTheSoldOutCache(t *testing.T) {
	e := newEnvironment(t)
	unavailable := instanceType("cx42", 8, 16384, 0.02, "hel1")
	unavailable.Offerings[0].Available = false
	e.api.SetInstanceTypes(instanceType("cx22", 2, 4096, 0.0060, "hel1", "fsn1"), unavailable)
	instanceTypesByName(t, e) // the API's answer, asked for before the launch failed
	e.soldOut.MarkSoldOut(testCluster, "cx22", "fsn1")

	byName := instanceTypesByName(t, e)
	if byName["cx42"] == nil || len(byName["cx42"].Offerings.Available()) != 0 {
		t.Fatal("an instance type whose offerings are all unavailable must still be listed, unavailable")
	}
	for _, offering := range byName["cx22"].Offerings {
		if want := offering.Zone() != "fsn1"; offering.Available != want {
			t.Errorf("cx22 in %s available = %v, want %v", offering.Zone(), offering.Available, want)
		}
	}
	// An answer asked for after the mark carries the API's own mark: when the API offers it again
	// (its backoff lifted), so does the driver, without waiting out its own mark.
	e.cloudProvider.instanceTypes.Flush()
	for _, offering := range instanceTypesByName(t, e)["cx22"].Offerings {
		if !offering.Available {
			t.Errorf("cx22 in %s unavailable after the API offered it again", offering.Zone())
		}
	}
}

func TestGetInstanceTypesOfAMissingNodeClassIsEmpty(t *testing.T) {
	e := newEnvironment(t)
	pool := nodePool()
	pool.Spec.Template.Spec.NodeClassRef.Name = "absent"
	instanceTypes, err := e.cloudProvider.GetInstanceTypes(context.Background(), pool)
	if err != nil || len(instanceTypes) != 0 {
		t.Fatalf("GetInstanceTypes = %v, %v", instanceTypes, err)
	}
}

func TestGetInstanceTypesReportsAnAPIError(t *testing.T) {
	e := newEnvironment(t)
	e.api.FailNext("listInstanceTypes", fakeUnavailable())
	if _, err := e.cloudProvider.GetInstanceTypes(context.Background(), nodePool()); err == nil {
		t.Fatal("GetInstanceTypes succeeded while the API failed")
	}
}

// Once read, the instance types are served stale while the API fails, so an outage does not leave
// Karpenter scheduling against nothing; a good read replaces them.
func TestGetInstanceTypesServesTheLastGoodListWhileTheAPIFails(t *testing.T) {
	e := newEnvironment(t)
	if got := instanceTypesByName(t, e); len(got) != 2 {
		t.Fatalf("instance types = %v, want cx22 and cx32", got)
	}
	e.cloudProvider.instanceTypes.Flush() // the fresh copy expired
	e.api.FailNext("listInstanceTypes", fakeUnavailable())
	if got := instanceTypesByName(t, e); len(got) != 2 || got["cx32"] == nil {
		t.Fatalf("while the API fails: instance types = %v, want the last good cx22 and cx32", got)
	}
	if reads := len(e.requestsOf("GET", "/instance-types")); reads != 2 {
		t.Fatalf("instance type reads = %d, want 2 (the stale list is not re-read at once)", reads)
	}
	e.api.ClearErrors()
	e.api.SetInstanceTypes(instanceType("cx22", 2, 4096, 0.0060, "hel1"))
	e.cloudProvider.instanceTypes.Flush()
	if got := instanceTypesByName(t, e); len(got) != 1 || got["cx22"] == nil {
		t.Fatalf("after the API recovered: instance types = %v, want its cx22 alone", got)
	}
}

// Callers arriving while instance types are being read share that one read.
func TestGetInstanceTypesSharesOneReadAmongConcurrentCallers(t *testing.T) {
	e := newEnvironment(t)
	e.api.Delay(300 * time.Millisecond)
	const callers = 5
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			instanceTypes, err := e.cloudProvider.GetInstanceTypes(context.Background(), nodePool())
			if err == nil && len(instanceTypes) != 2 {
				err = fmt.Errorf("got %d instance types, want 2", len(instanceTypes))
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if reads := len(e.requestsOf("GET", "/instance-types")); reads != 1 {
		t.Fatalf("instance type reads = %d, want 1 shared by %d callers", reads, callers)
	}
}

func TestGetInstanceTypesRefusesAQuantityThatIsNone(t *testing.T) {
	e := newEnvironment(t)
	broken := instanceType("cx22", 2, 4096, 0.0060, "hel1")
	broken.Capacity = nodefleetapi.ResourceList{Cpu: "two", Memory: "4Gi", Pods: "110", EphemeralStorage: "38Gi"}
	e.api.SetInstanceTypes(broken)
	if _, err := e.cloudProvider.GetInstanceTypes(context.Background(), nodePool()); err == nil {
		t.Fatal("GetInstanceTypes accepted cpu \"two\"")
	}
}

func TestStaticMethods(t *testing.T) {
	e := newEnvironment(t)
	if e.cloudProvider.Name() != "nodefleet" {
		t.Errorf("Name = %q", e.cloudProvider.Name())
	}
	classes := e.cloudProvider.GetSupportedNodeClasses()
	if len(classes) != 1 {
		t.Fatalf("GetSupportedNodeClasses = %v", classes)
	}
	if _, ok := classes[0].(interface{ TokenKey() string }); !ok {
		t.Errorf("the supported NodeClass is %T, want *v1alpha1.NodefleetNodeClass", classes[0])
	}
	policies := e.cloudProvider.RepairPolicies()
	statuses := map[corev1.ConditionStatus]bool{}
	for _, policy := range policies {
		if policy.ConditionType != corev1.NodeReady || policy.TolerationDuration <= 0 {
			t.Errorf("unexpected repair policy %+v", policy)
		}
		statuses[policy.ConditionStatus] = true
	}
	if !statuses[corev1.ConditionFalse] || !statuses[corev1.ConditionUnknown] {
		t.Errorf("repair policies %+v must cover Ready False and Unknown", policies)
	}
}
