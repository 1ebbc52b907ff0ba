package cloudprovider

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"nodefleet.dev/driver/pkg/nodefleetapi"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
	"sigs.k8s.io/karpenter/pkg/cloudprovider"
)

func TestCreateReturnsWhatKarpenterNeeds(t *testing.T) {
	e := newEnvironment(t)
	created := e.createNode(t, nodeClaim("default-abc12"))

	wantProviderID := "nodefleet:///" + testCluster + "/" + nodefleetapi.NodeIDFor("default-abc12")
	if created.Status.ProviderID != wantProviderID {
		t.Errorf("providerID = %q, want %q", created.Status.ProviderID, wantProviderID)
	}
	if created.Status.ImageID != "ubuntu-24.04" {
		t.Errorf("imageID = %q, want the API's", created.Status.ImageID)
	}
	for _, key := range []string{corev1.LabelInstanceTypeStable, corev1.LabelTopologyZone, karpv1.CapacityTypeLabelKey, corev1.LabelArchStable, corev1.LabelOSStable, corev1.LabelTopologyRegion} {
		if created.Labels[key] == "" {
			t.Errorf("label %s missing from %v", key, created.Labels)
		}
	}
	if created.Labels[corev1.LabelInstanceTypeStable] != "cx22" || created.Labels[corev1.LabelTopologyZone] != "hel1" {
		t.Errorf("instance type and zone labels = %v, want the cheapest offering cx22 in hel1", created.Labels)
	}
	if cpu := created.Status.Capacity[corev1.ResourceCPU]; cpu.Cmp(resource.MustParse("2")) != 0 {
		t.Errorf("capacity cpu = %s, want 2", cpu.String())
	}
	if memory := created.Status.Allocatable[corev1.ResourceMemory]; memory.Cmp(resource.MustParse("4096Mi")) != 0 {
		t.Errorf("allocatable memory = %s, want 4096Mi", memory.String())
	}
	if created.Annotations[ClusterPoolAnnotationKey] != testCluster+"/"+testPool {
		t.Errorf("annotation %s = %q", ClusterPoolAnnotationKey, created.Annotations[ClusterPoolAnnotationKey])
	}
	creates := e.requestsOf("POST", "/nodes")
	if len(creates) != 1 || creates[0].Authorization != "Bearer "+testToken {
		t.Fatalf("create requests = %+v, want one with the Secret's token", creates)
	}
}

func TestCreateTranslatesRequirementsSortedWithMinValuesAndGteLte(t *testing.T) {
	e := newEnvironment(t)
	two := 2
	claim := nodeClaim("default-req",
		claimRequirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "hel1", "fsn1"),
		karpv1.NodeSelectorRequirementWithMinValues{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"cx32", "cx22"}, MinValues: &two},
		claimRequirement("nodefleet.io/instance-cpu", "Gte", "2"),
		claimRequirement("nodefleet.io/instance-cpu", "Lte", "8"),
		claimRequirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, "on-demand"),
	)
	claim.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "batch", Effect: corev1.TaintEffectNoSchedule}}
	claim.Spec.StartupTaints = []corev1.Taint{
		{Key: "dedicated", Value: "startup", Effect: corev1.TaintEffectNoSchedule},
		{Key: "node.cilium.io/agent-not-ready", Effect: corev1.TaintEffectNoExecute},
	}
	e.createNode(t, claim)

	var body struct {
		UniqueID     string            `json:"uniqueID"`
		Pool         string            `json:"pool"`
		Labels       map[string]string `json:"labels"`
		Requirements []requirement     `json:"requirements"`
		Taints       []taint           `json:"taints"`
	}
	if err := json.Unmarshal(e.requestsOf("POST", "/nodes")[0].Body, &body); err != nil {
		t.Fatal(err)
	}
	if body.UniqueID != "default-req" || body.Pool != testPool || body.Labels[karpv1.NodePoolLabelKey] != "default" {
		t.Errorf("body = %+v, want uniqueID, pool and the NodeClaim's labels", body)
	}
	want := []requirement{
		{Key: karpv1.CapacityTypeLabelKey, Operator: "In", Values: []string{"on-demand"}},
		{Key: corev1.LabelInstanceTypeStable, Operator: "In", Values: []string{"cx22", "cx32"}, MinValues: &two},
		{Key: "nodefleet.io/instance-cpu", Operator: "Gte", Values: []string{"2"}},
		{Key: "nodefleet.io/instance-cpu", Operator: "Lte", Values: []string{"8"}},
		{Key: corev1.LabelTopologyZone, Operator: "In", Values: []string{"fsn1", "hel1"}},
	}
	gotJSON, _ := json.Marshal(body.Requirements)
	wantJSON, _ := json.Marshal(want)
	if string(gotJSON) != string(wantJSON) {
		t.Errorf("requirements =\n%s\nwant\n%s", gotJSON, wantJSON)
	}
	wantTaints := []taint{{Key: "dedicated", Value: "batch", Effect: "NoSchedule"}, {Key: "node.cilium.io/agent-not-ready", Effect: "NoExecute"}}
	gotTaints, _ := json.Marshal(body.Taints)
	wantTaintsJSON, _ := json.Marshal(wantTaints)
	if string(gotTaints) != string(wantTaintsJSON) {
		t.Errorf("taints = %s, want %s (one per key and effect, the taint winning over the startup taint)", gotTaints, wantTaintsJSON)
	}
}

func TestCreateReplayWithReorderedRequirementsAndMoreLabelsIsTheSameNode(t *testing.T) {
	e := newEnvironment(t)
	first := e.createNode(t, nodeClaim("default-replay",
		claimRequirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "hel1", "fsn1"),
		claimRequirement(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64")))
	again := nodeClaim("default-replay",
		claimRequirement(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64"),
		claimRequirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "fsn1", "hel1"))
	again.Labels["karpenter.nodefleet.io/nodefleetnodeclass"] = "default"
	second := e.createNode(t, again)
	if first.Status.ProviderID != second.Status.ProviderID {
		t.Fatalf("replay gave providerID %q, first %q", second.Status.ProviderID, first.Status.ProviderID)
	}
	creates := e.requestsOf("POST", "/nodes")
	if len(creates) != 2 {
		t.Fatalf("%d create requests, want 2", len(creates))
	}
}

func TestCreateRefusesWithoutAReadyNodeClass(t *testing.T) {
	t.Run("missing NodeClass", func(t *testing.T) {
		e := newEnvironment(t)
		claim := nodeClaim("default-x")
		claim.Spec.NodeClassRef.Name = "absent"
		_, err := e.cloudProvider.Create(context.Background(), claim)
		if !cloudprovider.IsNodeClassNotReadyError(err) {
			t.Fatalf("err = %v, want NodeClassNotReadyError", err)
		}
	})
	t.Run("NodeClass not ready", func(t *testing.T) {
		e := newEnvironment(t)
		e.nodeClass.StatusConditions().SetFalse("Ready", "PoolNotFound", "no pool")
		if err := e.kubeClient.Status().Update(context.Background(), e.nodeClass); err != nil {
			t.Fatal(err)
		}
		_, err := e.cloudProvider.Create(context.Background(), nodeClaim("default-x"))
		if !cloudprovider.IsNodeClassNotReadyError(err) {
			t.Fatalf("err = %v, want NodeClassNotReadyError", err)
		}
		if len(e.requestsOf("POST", "/nodes")) != 0 {
			t.Error("a create request was sent for a NodeClass that is not ready")
		}
	})
	t.Run("token Secret missing", func(t *testing.T) {
		e := newEnvironment(t)
		e.nodeClass.Spec.TokenSecretRef.Name = "absent"
		if err := e.kubeClient.Update(context.Background(), e.nodeClass); err != nil {
			t.Fatal(err)
		}
		_, err := e.cloudProvider.Create(context.Background(), nodeClaim("default-x"))
		if !cloudprovider.IsNodeClassNotReadyError(err) {
			t.Fatalf("err = %v, want NodeClassNotReadyError", err)
		}
	})
}

// A NodeClaim of a NodePool edited since the NodeClass status last checked it: the NodeClass is
// still Ready, but the NodeClaim lacks a pool taint, so its node would take none of its pods.
func TestCreateRefusesANodeClaimLackingThePoolsTaints(t *testing.T) {
	e := newEnvironment(t)
	e.nodeClass.Status.PoolTaints = []corev1.Taint{
		{Key: "workload", Value: "batch", Effect: corev1.TaintEffectNoSchedule},
		{Key: "example.com/agent-not-ready", Effect: corev1.TaintEffectNoExecute},
	}
	if err := e.kubeClient.Status().Update(context.Background(), e.nodeClass); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		taints  []corev1.Taint
		missing string
	}{
		"no taints": {nil, "workload=batch:NoSchedule, example.com/agent-not-ready:NoExecute"},
		"another value": {[]corev1.Taint{
			{Key: "workload", Value: "web", Effect: corev1.TaintEffectNoSchedule},
			{Key: "example.com/agent-not-ready", Effect: corev1.TaintEffectNoExecute},
		}, "workload=batch:NoSchedule"},
		"another effect": {[]corev1.Taint{
			{Key: "workload", Value: "batch", Effect: corev1.TaintEffectNoSchedule},
			{Key: "example.com/agent-not-ready", Effect: corev1.TaintEffectNoSchedule},
		}, "example.com/agent-not-ready:NoExecute"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			claim := nodeClaim("default-uncovered")
			claim.Spec.Taints = c.taints
			_, err := e.cloudProvider.Create(context.Background(), claim)
			if !cloudprovider.IsNodeClassNotReadyError(err) || !strings.Contains(err.Error(), "lacks the taints "+c.missing+" ") {
				t.Fatalf("err = %v, want NodeClassNotReadyError naming exactly %s", err, c.missing)
			}
		})
	}
	if creates := e.requestsOf("POST", "/nodes"); len(creates) != 0 {
		t.Fatalf("%d create requests were sent for NodeClaims lacking the pool's taints", len(creates))
	}
	// Covered by a taint and a startup taint (something removes the latter): created.
	covered := nodeClaim("default-covered")
	covered.Spec.Taints = []corev1.Taint{{Key: "workload", Value: "batch", Effect: corev1.TaintEffectNoSchedule}}
	covered.Spec.StartupTaints = []corev1.Taint{{Key: "example.com/agent-not-ready", Effect: corev1.TaintEffectNoExecute}}
	e.createNode(t, covered)
}

func TestCreateOfAFailedNodeReleasesItAndRemembersTheSoldOutOffering(t *testing.T) {
	e := newEnvironment(t)
	claim := nodeClaim("default-failed")
	e.createNode(t, claim)
	nodeID := e.failNode("default-failed", "InsufficientCapacity", "cx22 is sold out in hel1")
	_, err := e.cloudProvider.Create(context.Background(), claim)
	if !cloudprovider.IsInsufficientCapacityError(err) {
		t.Fatalf("err = %v, want InsufficientCapacityError", err)
	}
	if !e.soldOut.IsSoldOut(testCluster, "cx22", "hel1") {
		t.Error("the sold-out offering was not remembered")
	}
	if len(e.requestsOf("DELETE", "/nodes/"+nodeID)) != 1 {
		t.Error("the failed node was not released")
	}
}

func TestCreateFailsFastWhenEveryAllowedOfferingIsSoldOut(t *testing.T) {
	e := newEnvironment(t)
	instanceTypesByName(t, e) // the API's answer, asked for before the launch failed
	e.soldOut.MarkSoldOut(testCluster, "cx32", "hel1")
	// As Karpenter writes a NodeClaim: its NodePool is a requirement too.
	_, err := e.cloudProvider.Create(context.Background(), nodeClaim("default-soldout",
		claimRequirement(karpv1.NodePoolLabelKey, corev1.NodeSelectorOpIn, "default"),
		claimRequirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "cx32")))
	if !cloudprovider.IsInsufficientCapacityError(err) {
		t.Fatalf("err = %v, want InsufficientCapacityError", err)
	}
	if len(e.requestsOf("POST", "/nodes")) != 0 {
		t.Error("a create request was sent although every allowed offering is sold out")
	}
	// Another type is still offered: the create goes through.
	e.createNode(t, nodeClaim("default-other", claimRequirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "cx22", "cx32")))
}
