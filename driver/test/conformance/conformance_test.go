package conformance

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
	"sigs.k8s.io/karpenter/pkg/cloudprovider"
)

var burstPool = &karpv1.NodePool{
	ObjectMeta: metav1.ObjectMeta{Name: "burst"},
	Spec: karpv1.NodePoolSpec{Template: karpv1.NodeClaimTemplate{Spec: karpv1.NodeClaimTemplateSpec{
		NodeClassRef: &karpv1.NodeClassReference{Group: "karpenter.nodefleet.io", Kind: "NodefleetNodeClass", Name: "default"},
	}}},
}

// One service for the lifecycle checks: instance types, Create (labels, capacity, providerID),
// replays, Gte/Lte and minValues, Get/List/Delete until NodeClaimNotFound.
func TestLifecycleAgainstTheRealService(t *testing.T) {
	s := startService(t, t.TempDir())
	d := newDriver(t, s.endpoint)
	ctx := context.Background()

	instanceTypes, err := d.GetInstanceTypes(ctx, burstPool)
	if err != nil || len(instanceTypes) == 0 {
		t.Fatalf("GetInstanceTypes = %d types, %v:\n%s", len(instanceTypes), err, s.output())
	}
	for _, instanceType := range instanceTypes {
		for key := range karpv1.WellKnownLabels {
			if !instanceType.Requirements.Has(key) {
				t.Errorf("%s does not define well-known label %s", instanceType.Name, key)
			}
		}
		if len(instanceType.Offerings) == 0 {
			t.Errorf("%s has no offerings", instanceType.Name)
		}
	}

	t.Run("create, replay, get, list, delete", func(t *testing.T) {
		claim := nodeClaim("burst.conformance-1",
			requirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "hel1"),
			requirement(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64"))
		created, err := d.Create(ctx, claim)
		if err != nil {
			t.Fatalf("Create: %v\n%s", err, s.output())
		}
		if created.Status.ProviderID == "" || created.Status.ImageID == "" {
			t.Fatalf("Create gave providerID %q imageID %q", created.Status.ProviderID, created.Status.ImageID)
		}
		for _, key := range []string{corev1.LabelInstanceTypeStable, corev1.LabelTopologyZone, karpv1.CapacityTypeLabelKey, corev1.LabelArchStable, corev1.LabelOSStable, corev1.LabelTopologyRegion} {
			if created.Labels[key] == "" {
				t.Errorf("Create's labels lack %s: %v", key, created.Labels)
			}
		}
		if cpu := created.Status.Capacity[corev1.ResourceCPU]; cpu.Cmp(resource.MustParse("1")) < 0 {
			t.Errorf("capacity cpu = %s", cpu.String())
		}
		if memory := created.Status.Allocatable[corev1.ResourceMemory]; memory.Cmp(created.Status.Capacity[corev1.ResourceMemory]) >= 0 {
			t.Errorf("allocatable memory %s is not below capacity", memory.String())
		}

		replay := nodeClaim("burst.conformance-1",
			requirement(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64"),
			requirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "hel1"))
		replay.Labels["karpenter.nodefleet.io/nodefleetnodeclass"] = "default"
		again, err := d.Create(ctx, replay)
		if err != nil || again.Status.ProviderID != created.Status.ProviderID {
			t.Fatalf("replayed Create = %v, %v; want providerID %s", again, err, created.Status.ProviderID)
		}

		got, err := d.Get(ctx, created.Status.ProviderID)
		if err != nil || got.Status.ProviderID != created.Status.ProviderID {
			t.Fatalf("Get = %v, %v", got, err)
		}
		listed, err := d.List(ctx)
		if err != nil || !hasProviderID(listed, created.Status.ProviderID) {
			t.Fatalf("List = %d NodeClaims, %v; want the created node among them", len(listed), err)
		}
		claim.Status.ProviderID = created.Status.ProviderID
		eventually(t, 2*time.Minute, func() string {
			if status := d.statusOf(created.Status.ProviderID); status != "RUNNING" {
				return "node status " + status + ", not yet RUNNING"
			}
			return ""
		})
		if err := d.Delete(ctx, claim); err != nil {
			t.Fatalf("Delete of a running node = %v, want nil while it terminates", err)
		}
		if _, err := d.Get(ctx, created.Status.ProviderID); err != nil {
			t.Fatalf("Get of a terminating node = %v, want the NodeClaim", err)
		}
		eventually(t, 2*time.Minute, func() string {
			if err := d.Delete(ctx, claim); !cloudprovider.IsNodeClaimNotFoundError(err) {
				return fmt.Sprintf("Delete = %v, not yet NodeClaimNotFound", err)
			}
			return ""
		})
		if _, err := d.Get(ctx, created.Status.ProviderID); !cloudprovider.IsNodeClaimNotFoundError(err) {
			t.Fatalf("Get once gone = %v, want NodeClaimNotFound", err)
		}
		if listed, err := d.List(ctx); err != nil || hasProviderID(listed, created.Status.ProviderID) {
			t.Fatalf("List once gone = %v, %v; want the node absent", len(listed), err)
		}
	})

	t.Run("Gte and Lte", func(t *testing.T) {
		claim := nodeClaim("burst-gte-lte",
			requirement("nodefleet.io/instance-cpu", "Gte", "4"),
			requirement("nodefleet.io/instance-cpu", "Lte", "4"))
		created, err := d.Create(ctx, claim)
		if err != nil {
			t.Fatalf("Create: %v", err)
		}
		if cpu := created.Status.Capacity[corev1.ResourceCPU]; cpu.Cmp(resource.MustParse("4")) != 0 {
			t.Fatalf("Gte 4 and Lte 4 gave a node of %s CPUs (%s)", cpu.String(), created.Labels[corev1.LabelInstanceTypeStable])
		}
		claim.Status.ProviderID = created.Status.ProviderID
		if err := d.Delete(ctx, claim); err != nil && !cloudprovider.IsNodeClaimNotFoundError(err) {
			t.Fatal(err)
		}
	})

	t.Run("minValues more than fit", func(t *testing.T) {
		ten := 10
		_, err := d.Create(ctx, nodeClaim("burst-minvalues", karpv1.NodeSelectorRequirementWithMinValues{
			Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpExists, MinValues: &ten,
		}))
		if !cloudprovider.IsInsufficientCapacityError(err) {
			t.Fatalf("Create = %v, want InsufficientCapacityError (NoCompatibleInstanceType)", err)
		}
	})
}

// A sold-out server type: the node fails as InsufficientCapacity, the driver remembers the
// offering, Karpenter sees it unavailable and a new Create for only that type is refused.
func TestSoldOutTypeIsInsufficientCapacity(t *testing.T) {
	s := startService(t, t.TempDir(), "NODEFLEET_SIM_OUT_OF_STOCK=cpx21")
	d := newDriver(t, s.endpoint)
	ctx := context.Background()
	claim := nodeClaim("burst-soldout", requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "cpx21"))
	created, err := d.Create(ctx, claim)
	if cloudprovider.IsInsufficientCapacityError(err) {
		t.Log("the API refused the create at once: it already knew cpx21 sold out")
		return
	}
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	claim.Status.ProviderID = created.Status.ProviderID
	eventually(t, 2*time.Minute, func() string {
		failure, err := d.LaunchFailure(ctx, claim)
		if err != nil || !cloudprovider.IsInsufficientCapacityError(failure) {
			return describe(failure, err)
		}
		return ""
	})
	instanceTypes, err := d.GetInstanceTypes(ctx, burstPool)
	if err != nil {
		t.Fatal(err)
	}
	for _, instanceType := range instanceTypes {
		if instanceType.Name == "cpx21" && len(instanceType.Offerings.Available()) != 0 {
			t.Error("cpx21 is still offered as available")
		}
	}
	if _, err := d.Create(ctx, nodeClaim("burst-soldout-2", requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "cpx21"))); !cloudprovider.IsInsufficientCapacityError(err) {
		t.Fatalf("second Create = %v, want InsufficientCapacityError", err)
	}
}

// The service killed with SIGKILL and started again on its data directory: the node created before
// is there once, and a replayed Create lands on it.
func TestKilledServiceKeepsTheNodeWithoutDuplicates(t *testing.T) {
	dataDir := t.TempDir()
	first := startService(t, dataDir)
	d := newDriver(t, first.endpoint)
	ctx := context.Background()
	claim := nodeClaim("burst-crash")
	created, err := d.Create(ctx, claim)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	first.stop(syscall.SIGKILL)

	second := startService(t, dataDir)
	d = newDriver(t, second.endpoint)
	again, err := d.Create(ctx, nodeClaim("burst-crash"))
	if err != nil || again.Status.ProviderID != created.Status.ProviderID {
		t.Fatalf("replayed Create after the restart = %v, %v; want providerID %s", again, err, created.Status.ProviderID)
	}
	eventually(t, 2*time.Minute, func() string {
		listed, err := d.List(ctx)
		if err != nil {
			return err.Error()
		}
		count := 0
		for _, nodeClaim := range listed {
			if nodeClaim.Status.ProviderID == created.Status.ProviderID {
				count++
			}
		}
		if count != 1 || len(listed) != 1 {
			return fmt.Sprintf("List has %d NodeClaims, %d of them the created node", len(listed), count)
		}
		return ""
	})
}

// A change of the pool's template drifts the node, with a reason Karpenter accepts as a condition
// Reason; the template as it was makes it current again.
func TestTemplateChangeDriftsTheNode(t *testing.T) {
	projectDir, stackFile := projectCopy(t)
	s := startServiceIn(t, projectDir, t.TempDir())
	d := newDriver(t, s.endpoint)
	ctx := context.Background()
	claim := nodeClaim("burst-drift")
	created, err := d.Create(ctx, claim)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	claim.Status.ProviderID = created.Status.ProviderID
	claim.Annotations = created.Annotations
	if reason, err := d.IsDrifted(ctx, claim); err != nil || reason != "" {
		t.Fatalf("IsDrifted before any change = %q, %v", reason, err)
	}
	original, err := os.ReadFile(stackFile)
	if err != nil {
		t.Fatal(err)
	}
	// Only the autoscaled pool's image: it is the pool after the static one in the file.
	burst := strings.Index(string(original), "- name: hel1-burst")
	changed := string(original[:burst]) + strings.Replace(string(original[burst:]), "image: ubuntu-24.04", "image: ubuntu-22.04", 1)
	if burst < 0 || changed == string(original) {
		t.Fatal("the example stack no longer has the hel1-burst pool with image ubuntu-24.04")
	}
	if err := os.WriteFile(stackFile, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, func() string {
		reason, err := d.IsDrifted(ctx, claim)
		if err != nil || reason == "" {
			return describe(reason, err)
		}
		if !conditionReason.MatchString(string(reason)) || !strings.Contains(string(reason), "Image") {
			t.Fatalf("drift reason %q is no condition Reason naming the image", reason)
		}
		return ""
	})
	if err := os.WriteFile(stackFile, original, 0o644); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, func() string {
		if reason, err := d.IsDrifted(ctx, claim); err != nil || reason != "" {
			return describe(reason, err)
		}
		return ""
	})
}

// A pool at its node limit: a further Create is InsufficientCapacity, and its offerings are
// unavailable so Karpenter does not loop on it.
func TestPoolAtItsLimitIsInsufficientCapacity(t *testing.T) {
	projectDir, stackFile := projectCopy(t)
	original, err := os.ReadFile(stackFile)
	if err != nil {
		t.Fatal(err)
	}
	limited := strings.Replace(string(original), "maxNodes: 90", "maxNodes: 1", 1)
	if limited == string(original) {
		t.Fatal("the example stack's hel1-burst pool no longer has maxNodes: 90")
	}
	if err := os.WriteFile(stackFile, []byte(limited), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startServiceIn(t, projectDir, t.TempDir())
	d := newDriver(t, s.endpoint)
	ctx := context.Background()
	if _, err := d.Create(ctx, nodeClaim("burst-limit-1")); err != nil {
		t.Fatalf("first Create: %v", err)
	}
	if _, err := d.Create(ctx, nodeClaim("burst-limit-2")); !cloudprovider.IsInsufficientCapacityError(err) {
		t.Fatalf("Create beyond maxNodes = %v, want InsufficientCapacityError", err)
	}
	eventually(t, time.Minute, func() string {
		instanceTypes, err := d.GetInstanceTypes(ctx, burstPool)
		if err != nil {
			return err.Error()
		}
		for _, instanceType := range instanceTypes {
			if available := instanceType.Offerings.Available(); len(available) > 0 {
				return instanceType.Name + " is still offered while the pool is full"
			}
		}
		return ""
	})
}

// conditionReason is Karpenter's pattern for a condition Reason.
var conditionReason = regexp.MustCompile(`^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`)

func hasProviderID(nodeClaims []*karpv1.NodeClaim, providerID string) bool {
	for _, nodeClaim := range nodeClaims {
		if nodeClaim.Status.ProviderID == providerID {
			return true
		}
	}
	return false
}
