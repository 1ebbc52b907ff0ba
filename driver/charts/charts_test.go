package charts

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
)

// helmOrSkip is the toolchain's helm; without it the test skips, unless CI requires the toolchain.
func helmOrSkip(t *testing.T) string {
	t.Helper()
	helm, err := FindHelm()
	if err != nil {
		if os.Getenv("NODEFLEET_REQUIRE_TOOLCHAIN") == "1" {
			t.Fatalf("NODEFLEET_REQUIRE_TOOLCHAIN=1 but %v", err)
		}
		t.Skipf("needs helm from the toolchain: %v", err)
	}
	return helm
}

func TestChartCRDsAreThePinnedModulesCRDs(t *testing.T) {
	want := CRDs()
	entries, err := os.ReadDir(filepath.Join(ChartDir, "crds"))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(want) {
		t.Errorf("crds/ has %d files, want %d", len(entries), len(want))
	}
	for name, content := range want {
		got, err := os.ReadFile(filepath.Join(ChartDir, "crds", name))
		if err != nil || !bytes.Equal(got, content) {
			t.Errorf("crds/%s is missing or stale: run `go generate ./...` in driver/", name)
		}
	}
}

func TestChartLintsAndRendersTheCheckedInManifests(t *testing.T) {
	helm := helmOrSkip(t)
	lint := []string{"lint", ChartDir, "--strict"}
	for _, value := range ManifestValues {
		lint = append(lint, "--set", value)
	}
	if _, err := Helm(helm, lint...); err != nil {
		t.Fatal(err)
	}
	if _, err := Helm(helm, "lint", ChartDir, "--strict"); err != nil {
		t.Fatalf("lint with the default values: %v", err)
	}
	if _, err := Helm(helm, "template", "nodefleet-karpenter", ChartDir); err != nil {
		t.Fatalf("template with the default values: %v", err)
	}
	rendered, err := RenderManifests(helm)
	if err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile(ManifestsFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(rendered, committed) {
		t.Fatalf("%s is stale: run `go generate ./...` in driver/", ManifestsFile)
	}
}

func TestChartRefusesANodeClassWithoutItsEndpoint(t *testing.T) {
	helm := helmOrSkip(t)
	_, err := Helm(helm, "template", "x", ChartDir, "--set", "nodeClass.create=true", "--set", "api.clusterID=c", "--set", "api.pool=p")
	if err == nil || !strings.Contains(err.Error(), "api.endpoint is required") {
		t.Fatalf("err = %v, want one naming api.endpoint", err)
	}
}

// The rendered objects are what the driver needs: its NodeClass readable and its status
// writable cluster-wide, token Secrets readable in its namespace only, SYSTEM_NAMESPACE set.
func TestRenderedManifestsGrantWhatTheDriverUses(t *testing.T) {
	committed, err := os.ReadFile(ManifestsFile)
	if err != nil {
		t.Fatal(err)
	}
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(committed), 4096)
	byKind := map[string][]*unstructured.Unstructured{}
	for {
		object := &unstructured.Unstructured{}
		if err := decoder.Decode(&object.Object); err != nil {
			break
		}
		if object.Object == nil {
			continue
		}
		byKind[object.GetKind()] = append(byKind[object.GetKind()], object)
	}
	if len(byKind["CustomResourceDefinition"]) != 5 || len(byKind["Deployment"]) != 1 || len(byKind["NodefleetNodeClass"]) != 1 {
		t.Fatalf("rendered kinds: %d CRDs, %d Deployments, %d NodefleetNodeClasses", len(byKind["CustomResourceDefinition"]), len(byKind["Deployment"]), len(byKind["NodefleetNodeClass"]))
	}
	clusterRole := &rbacv1.ClusterRole{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(byKind["ClusterRole"][0].Object, clusterRole); err != nil {
		t.Fatal(err)
	}
	allows := func(rules []rbacv1.PolicyRule, group, resource, verb string) bool {
		for _, rule := range rules {
			if contains(rule.APIGroups, group) && contains(rule.Resources, resource) && contains(rule.Verbs, verb) && len(rule.ResourceNames) == 0 {
				return true
			}
		}
		return false
	}
	for _, need := range [][3]string{
		{"karpenter.nodefleet.io", "nodefleetnodeclasses", "watch"},
		{"karpenter.nodefleet.io", "nodefleetnodeclasses/status", "patch"},
		{"karpenter.sh", "nodeclaims", "delete"},
	} {
		if !allows(clusterRole.Rules, need[0], need[1], need[2]) {
			t.Errorf("the ClusterRole does not allow %s %s/%s", need[2], need[0], need[1])
		}
	}
	if allows(clusterRole.Rules, "", "secrets", "get") {
		t.Error("the ClusterRole reads Secrets cluster-wide")
	}
	secretsInNamespace := false
	for _, role := range byKind["Role"] {
		typed := &rbacv1.Role{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(role.Object, typed); err != nil {
			t.Fatal(err)
		}
		for _, rule := range typed.Rules {
			if contains(rule.Resources, "secrets") {
				if len(rule.ResourceNames) != 1 || rule.ResourceNames[0] != "nodefleet-api-token" {
					t.Errorf("Role %s/%s grants Secrets %v, want the token Secret alone by resourceNames", typed.Namespace, typed.Name, rule.ResourceNames)
				}
				secretsInNamespace = typed.Namespace == "karpenter" && contains(rule.Verbs, "watch")
			}
		}
	}
	if !secretsInNamespace {
		t.Error("no Role lets the driver watch its token Secret in its namespace")
	}
	deployment := &appsv1.Deployment{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(byKind["Deployment"][0].Object, deployment); err != nil {
		t.Fatal(err)
	}
	env := map[string]bool{}
	for _, variable := range deployment.Spec.Template.Spec.Containers[0].Env {
		env[variable.Name] = true
	}
	if !env["SYSTEM_NAMESPACE"] || !env["NODEFLEET_TOKEN_SECRET"] {
		t.Error("the Deployment does not set SYSTEM_NAMESPACE and NODEFLEET_TOKEN_SECRET (the driver caches that Secret alone)")
	}
}

// token.projected: the driver presents its projected ServiceAccount token (audience nodefleet), the
// NodeClass names no Secret, and no Role grants any Secret.
func TestProjectedTokenModeReadsNoSecret(t *testing.T) {
	helm := helmOrSkip(t)
	objects := render(t, helm, append(ManifestValues, "token.projected=true", "token.value=unused-static-token")...)
	if len(objects["Secret"]) != 0 {
		t.Errorf("%d Secrets rendered with a projected token", len(objects["Secret"]))
	}
	for _, role := range objects["Role"] {
		for _, rule := range convert[rbacv1.Role](t, role).Rules {
			if contains(rule.Resources, "secrets") {
				t.Errorf("Role %s grants Secrets %v with a projected token", role.GetName(), rule.Verbs)
			}
		}
	}
	spec, _, _ := unstructured.NestedMap(objects["NodefleetNodeClass"][0].Object, "spec")
	if _, named := spec["tokenSecretRef"]; named {
		t.Error("the NodeClass names a token Secret with a projected token")
	}
	pod := convert[appsv1.Deployment](t, objects["Deployment"][0]).Spec.Template.Spec
	env := envOf(pod.Containers[0])
	if env["NODEFLEET_TOKEN_FILE"] != "/var/run/secrets/nodefleet/token" || env["NODEFLEET_TOKEN_SECRET"] != "" {
		t.Errorf("env %v, want NODEFLEET_TOKEN_FILE and no NODEFLEET_TOKEN_SECRET", env)
	}
	projected := false
	for _, volume := range pod.Volumes {
		if volume.Projected != nil {
			for _, source := range volume.Projected.Sources {
				if token := source.ServiceAccountToken; token != nil && token.Audience == "nodefleet" && token.Path == "token" {
					projected = true
				}
			}
		}
	}
	if !projected {
		t.Error("no projected serviceAccountToken volume with audience nodefleet")
	}
}

// helm uninstall with the chart's own NodeClass: a pre-delete hook Job deletes that NodeClass
// (with the driver's image and the ServiceAccount allowed to delete it alone) and waits for it,
// before helm deletes the driver. The checked-in manifests, for kubectl apply, carry no hook.
func TestUninstallDeletesTheChartsNodeClassFirst(t *testing.T) {
	helm := helmOrSkip(t)
	values := []string{"template", "nodefleet-karpenter", ChartDir, "--namespace", "karpenter"}
	for _, value := range ManifestValues {
		values = append(values, "--set", value)
	}
	rendered, err := Helm(helm, values...)
	if err != nil {
		t.Fatal(err)
	}
	var job *batchv1.Job
	clusterRole := &rbacv1.ClusterRole{}
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(rendered), 4096)
	for {
		object := &unstructured.Unstructured{}
		if err := decoder.Decode(&object.Object); err != nil {
			break
		}
		switch object.GetKind() {
		case "Job":
			job = &batchv1.Job{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(object.Object, job); err != nil {
				t.Fatal(err)
			}
		case "ClusterRole":
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(object.Object, clusterRole); err != nil {
				t.Fatal(err)
			}
		}
	}
	if job == nil || job.Annotations["helm.sh/hook"] != "pre-delete" {
		t.Fatalf("no pre-delete hook Job rendered (%v)", job)
	}
	container := job.Spec.Template.Spec.Containers[0]
	if strings.Join(container.Args, " ") != "delete-nodeclass default" || container.Image != "nodefleet-karpenter:1.14.1" || job.Spec.Template.Spec.ServiceAccountName != "nodefleet-karpenter" {
		t.Fatalf("hook runs %v in %s as %s; want delete-nodeclass default in the driver's image as its ServiceAccount", container.Args, container.Image, job.Spec.Template.Spec.ServiceAccountName)
	}
	deletesOnlyIt := false
	for _, rule := range clusterRole.Rules {
		if contains(rule.Resources, "nodefleetnodeclasses") && contains(rule.Verbs, "delete") {
			if strings.Join(rule.ResourceNames, ",") != "default" {
				t.Fatalf("the ClusterRole deletes NodefleetNodeClasses %v, want the chart's own only", rule.ResourceNames)
			}
			deletesOnlyIt = true
		}
	}
	if !deletesOnlyIt {
		t.Fatal("the hook's ServiceAccount may not delete the NodeClass")
	}
	committed, err := os.ReadFile(ManifestsFile)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(committed, []byte("helm.sh/hook")) {
		t.Fatal("the manifests for kubectl apply carry a helm hook, which kubectl would run at once")
	}
	off, err := Helm(helm, append(values, "--set", "nodeClass.deleteOnUninstall=false")...)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(off, []byte("delete-nodeclass")) {
		t.Fatal("nodeClass.deleteOnUninstall=false still renders the hook")
	}
}

func contains(list []string, value string) bool {
	for _, item := range list {
		if item == value || item == "*" {
			return true
		}
	}
	return false
}

// render is `helm template` of the chart with the values, its objects by kind.
func render(t *testing.T, helm string, values ...string) map[string][]*unstructured.Unstructured {
	t.Helper()
	args := []string{"template", "nodefleet-karpenter", ChartDir, "--namespace", "karpenter"}
	for _, value := range values {
		args = append(args, "--set", value)
	}
	rendered, err := Helm(helm, args...)
	if err != nil {
		t.Fatal(err)
	}
	byKind := map[string][]*unstructured.Unstructured{}
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(rendered), 4096)
	for {
		object := &unstructured.Unstructured{}
		if err := decoder.Decode(&object.Object); err != nil {
			break
		}
		if object.Object != nil {
			byKind[object.GetKind()] = append(byKind[object.GetKind()], object)
		}
	}
	return byKind
}

func convert[T any](t *testing.T, object *unstructured.Unstructured) *T {
	t.Helper()
	typed := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(object.Object, typed); err != nil {
		t.Fatal(err)
	}
	return typed
}

// The rules of every ClusterRole and Role rendered.
func allRules(t *testing.T, byKind map[string][]*unstructured.Unstructured) []rbacv1.PolicyRule {
	var rules []rbacv1.PolicyRule
	for _, object := range byKind["ClusterRole"] {
		rules = append(rules, convert[rbacv1.ClusterRole](t, object).Rules...)
	}
	for _, object := range byKind["Role"] {
		rules = append(rules, convert[rbacv1.Role](t, object).Rules...)
	}
	return rules
}

func envOf(container corev1.Container) map[string]string {
	env := map[string]string{}
	for _, variable := range container.Env {
		env[variable.Name] = variable.Value
	}
	return env
}

// By default two replicas run with leader election on, over a Lease the Role lets them update,
// a PodDisruptionBudget lets only one go at a time, and they spread over nodes and zones.
func TestChartRunsTwoReplicasWithLeaderElection(t *testing.T) {
	helm := helmOrSkip(t)
	byKind := render(t, helm)
	deployment := convert[appsv1.Deployment](t, byKind["Deployment"][0])
	if deployment.Spec.Replicas == nil || *deployment.Spec.Replicas != 2 {
		t.Errorf("replicas = %v, want 2", deployment.Spec.Replicas)
	}
	podLabels := labels.Set(deployment.Spec.Template.Labels)
	env := envOf(deployment.Spec.Template.Spec.Containers[0])
	if env["DISABLE_LEADER_ELECTION"] != "false" || env["LEADER_ELECTION_NAME"] == "" {
		t.Errorf("leader election env: DISABLE_LEADER_ELECTION=%q LEADER_ELECTION_NAME=%q", env["DISABLE_LEADER_ELECTION"], env["LEADER_ELECTION_NAME"])
	}
	updatesLease := false
	for _, rule := range allRules(t, byKind) {
		if contains(rule.APIGroups, "coordination.k8s.io") && contains(rule.Resources, "leases") && contains(rule.Verbs, "update") && contains(rule.ResourceNames, env["LEADER_ELECTION_NAME"]) {
			updatesLease = true
		}
	}
	if !updatesLease {
		t.Errorf("no rule lets the replicas update their Lease %q", env["LEADER_ELECTION_NAME"])
	}
	if len(byKind["PodDisruptionBudget"]) != 1 {
		t.Fatalf("%d PodDisruptionBudgets rendered, want 1", len(byKind["PodDisruptionBudget"]))
	}
	pdb := convert[policyv1.PodDisruptionBudget](t, byKind["PodDisruptionBudget"][0])
	selector, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	if err != nil || !selector.Matches(podLabels) || pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() != 1 {
		t.Errorf("the PodDisruptionBudget (selector %v, maxUnavailable %v) does not cover the pods one at a time", pdb.Spec.Selector, pdb.Spec.MaxUnavailable)
	}
	keys := map[string]bool{}
	for _, constraint := range deployment.Spec.Template.Spec.TopologySpreadConstraints {
		selector, err := metav1.LabelSelectorAsSelector(constraint.LabelSelector)
		if err != nil || !selector.Matches(podLabels) {
			t.Errorf("the spread over %s does not select the pods", constraint.TopologyKey)
		}
		keys[constraint.TopologyKey] = true
	}
	if !keys["kubernetes.io/hostname"] || !keys["topology.kubernetes.io/zone"] {
		t.Errorf("the replicas spread over %v, want nodes and zones", keys)
	}
	single := render(t, helm, "replicas=1", "podDisruptionBudget.enabled=false")
	if len(single["PodDisruptionBudget"]) != 0 {
		t.Error("podDisruptionBudget.enabled=false still renders one")
	}
}

// Karpenter never creates Node objects (the kubelet registers them), so no rule may.
func TestNoRuleGrantsNodesCreate(t *testing.T) {
	helm := helmOrSkip(t)
	for _, values := range [][]string{nil, ManifestValues} {
		rules := allRules(t, render(t, helm, values...))
		if len(rules) == 0 {
			t.Fatal("no rules rendered")
		}
		patchesNodes := false
		for _, rule := range rules {
			if contains(rule.APIGroups, "") && contains(rule.Resources, "nodes") {
				if contains(rule.Verbs, "create") {
					t.Errorf("rule %v grants nodes create", rule)
				}
				patchesNodes = patchesNodes || contains(rule.Verbs, "patch") && contains(rule.Verbs, "delete")
			}
		}
		if !patchesNodes {
			t.Error("no rule lets Karpenter patch and delete nodes")
		}
	}
}

func TestAggregateAdminRoleManagesNodeClasses(t *testing.T) {
	helm := helmOrSkip(t)
	found := false
	for _, object := range render(t, helm)["ClusterRole"] {
		role := convert[rbacv1.ClusterRole](t, object)
		if role.Labels["rbac.authorization.k8s.io/aggregate-to-admin"] != "true" {
			continue
		}
		found = true
		for _, verb := range []string{"get", "list", "watch", "create", "update", "patch", "delete"} {
			granted := false
			for _, rule := range role.Rules {
				granted = granted || contains(rule.APIGroups, "karpenter.nodefleet.io") && contains(rule.Resources, "nodefleetnodeclasses") && contains(rule.Verbs, verb)
			}
			if !granted {
				t.Errorf("the aggregated admin role does not grant %s on nodefleetnodeclasses", verb)
			}
		}
	}
	if !found {
		t.Fatal("no ClusterRole labelled aggregate-to-admin")
	}
	if off := render(t, helm, "aggregateAdminRole=false"); len(off["ClusterRole"]) != 1 {
		t.Errorf("aggregateAdminRole=false renders %d ClusterRoles, want the driver's only", len(off["ClusterRole"]))
	}
}

func TestImageTagDefaultsToTheChartsAppVersion(t *testing.T) {
	helm := helmOrSkip(t)
	chart, err := os.ReadFile(filepath.Join(ChartDir, "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var meta struct {
		AppVersion string `json:"appVersion"`
	}
	if err := utilyaml.Unmarshal(chart, &meta); err != nil || meta.AppVersion == "" {
		t.Fatalf("Chart.yaml appVersion: %q, %v", meta.AppVersion, err)
	}
	image := convert[appsv1.Deployment](t, render(t, helm)["Deployment"][0]).Spec.Template.Spec.Containers[0].Image
	if image != "nodefleet-karpenter:"+meta.AppVersion {
		t.Errorf("image = %s, want the appVersion %s as its tag", image, meta.AppVersion)
	}
	image = convert[appsv1.Deployment](t, render(t, helm, "image.tag=v9")["Deployment"][0]).Spec.Template.Spec.Containers[0].Image
	if image != "nodefleet-karpenter:v9" {
		t.Errorf("image.tag=v9 renders %s", image)
	}
}

// The NodePool option renders nothing by default and, when on, a NodePool of Karpenter's v1 API on
// the chart's NodeClass whose disruption suits billing per started hour.
func TestNodePoolOptionRendersAValidNodePoolOnlyWhenEnabled(t *testing.T) {
	helm := helmOrSkip(t)
	if got := render(t, helm, ManifestValues...)["NodePool"]; len(got) != 0 {
		t.Fatalf("%d NodePools rendered by default", len(got))
	}
	objects := render(t, helm, append(ManifestValues, "nodePool.create=true", "nodePool.limits.nodes=10")...)["NodePool"]
	if len(objects) != 1 || objects[0].GetAPIVersion() != "karpenter.sh/v1" {
		t.Fatalf("nodePool.create=true renders %v", objects)
	}
	nodePool := convert[karpv1.NodePool](t, objects[0])
	ref := nodePool.Spec.Template.Spec.NodeClassRef
	if ref == nil || ref.Group != "karpenter.nodefleet.io" || ref.Kind != "NodefleetNodeClass" || ref.Name != "default" {
		t.Errorf("nodeClassRef = %v, want the chart's NodefleetNodeClass", ref)
	}
	disruption := nodePool.Spec.Disruption
	if disruption.ConsolidationPolicy != karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized {
		t.Errorf("consolidationPolicy = %s", disruption.ConsolidationPolicy)
	}
	if disruption.ConsolidateAfter.Duration == nil || *disruption.ConsolidateAfter.Duration < 10*time.Minute {
		t.Errorf("consolidateAfter = %v, want long enough not to churn servers billed per started hour", disruption.ConsolidateAfter.Duration)
	}
	if len(disruption.Budgets) == 0 || disruption.Budgets[0].Nodes != "1" {
		t.Errorf("budgets = %v, want one node at a time", disruption.Budgets)
	}
	if nodePool.Spec.Limits.ExceededBy(corev1.ResourceList{"nodes": resource.MustParse("11")}) == nil || len(nodePool.Spec.Template.Spec.Requirements) == 0 {
		t.Errorf("limits %v, requirements %v", nodePool.Spec.Limits, nodePool.Spec.Template.Spec.Requirements)
	}
	if _, err := Helm(helm, "template", "x", ChartDir, "--set", "nodePool.create=true"); err == nil || !strings.Contains(err.Error(), "nodePool.create needs nodeClass.create") {
		t.Errorf("a NodePool without the chart's NodeClass: err = %v", err)
	}
}

// Outside the cluster it scales, the driver's pods run where the chart is installed with
// kubeconfig.render=controller, and the scaled cluster gets, with render=target, the RBAC bound to
// the kubeconfig's identity (no ServiceAccount, no pods there).
func TestKubeconfigModeRendersTheTargetClustersRBAC(t *testing.T) {
	helm := helmOrSkip(t)
	user := []string{"kubeconfig.secretName=kc", "kubeconfig.subjects[0].kind=User", "kubeconfig.subjects[0].name=nodefleet-driver", "kubeconfig.subjects[0].apiGroup=rbac.authorization.k8s.io"}
	target := render(t, helm, append(append([]string{"kubeconfig.render=target"}, user...), ManifestValues...)...)
	if len(target["Deployment"]) != 0 || len(target["ServiceAccount"]) != 0 || len(target["PodDisruptionBudget"]) != 0 || len(target["Job"]) != 0 {
		t.Errorf("the target cluster's part renders pods or a ServiceAccount: %d Deployments, %d ServiceAccounts, %d Jobs", len(target["Deployment"]), len(target["ServiceAccount"]), len(target["Job"]))
	}
	if len(target["NodefleetNodeClass"]) != 1 || len(target["ClusterRoleBinding"]) != 1 || len(target["RoleBinding"]) != 2 {
		t.Fatalf("the target cluster's part: %d NodeClasses, %d ClusterRoleBindings, %d RoleBindings", len(target["NodefleetNodeClass"]), len(target["ClusterRoleBinding"]), len(target["RoleBinding"]))
	}
	subjects := convert[rbacv1.ClusterRoleBinding](t, target["ClusterRoleBinding"][0]).Subjects
	for _, object := range target["RoleBinding"] {
		subjects = append(subjects, convert[rbacv1.RoleBinding](t, object).Subjects...)
	}
	for _, subject := range subjects {
		if subject.Kind != "User" || subject.Name != "nodefleet-driver" {
			t.Errorf("a binding in the target cluster names %v, want the kubeconfig's user", subject)
		}
	}
	controller := render(t, helm, append([]string{"kubeconfig.render=controller"}, user...)...)
	if len(controller["Deployment"]) != 1 || len(controller["ClusterRole"]) != 0 || len(controller["Role"]) != 0 {
		t.Fatalf("the controller's part: %d Deployments, %d ClusterRoles, %d Roles", len(controller["Deployment"]), len(controller["ClusterRole"]), len(controller["Role"]))
	}
	if env := envOf(convert[appsv1.Deployment](t, controller["Deployment"][0]).Spec.Template.Spec.Containers[0]); env["KUBECONFIG"] == "" {
		t.Error("the controller's part does not point KUBECONFIG at the mounted Secret")
	}
}

// The CRD chart holds the same CRDs as templates (upgraded by helm upgrade, unlike crds/).
func TestCRDChartHoldsThePinnedCRDsAsTemplates(t *testing.T) {
	want := CRDs()
	entries, err := os.ReadDir(filepath.Join(CRDChartDir, "templates"))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(want) {
		t.Errorf("the CRD chart's templates/ has %d files, want %d", len(entries), len(want))
	}
	for name, content := range want {
		got, err := os.ReadFile(filepath.Join(CRDChartDir, "templates", name))
		if err != nil || !bytes.Equal(got, content) {
			t.Errorf("%s/templates/%s is missing or stale: run `go generate ./...` in driver/", CRDChartDir, name)
		}
	}
	helm := helmOrSkip(t)
	if _, err := Helm(helm, "lint", CRDChartDir, "--strict"); err != nil {
		t.Fatal(err)
	}
	rendered, err := Helm(helm, "template", "nodefleet-karpenter-crd", CRDChartDir)
	if err != nil {
		t.Fatal(err)
	}
	if count := bytes.Count(rendered, []byte("\nkind: CustomResourceDefinition\n")); count != len(want) {
		t.Errorf("the CRD chart renders %d CRDs, want %d", count, len(want))
	}
}

// The metrics Service selects the driver's pods on their metrics port; the ServiceMonitor is off by
// default, and when on selects that Service (and no other) on the same port, in the release's
// namespace, with the labels a Prometheus selects ServiceMonitors by.
func TestMetricsServiceAndOptionalServiceMonitor(t *testing.T) {
	helm := helmOrSkip(t)
	byKind := render(t, helm)
	if len(byKind["ServiceMonitor"]) != 0 {
		t.Error("a ServiceMonitor is rendered by default; it needs the Prometheus Operator's CRDs")
	}
	if len(byKind["Service"]) != 1 {
		t.Fatalf("%d Services rendered, want the metrics Service", len(byKind["Service"]))
	}
	service := convert[corev1.Service](t, byKind["Service"][0])
	deployment := convert[appsv1.Deployment](t, byKind["Deployment"][0])
	if !labels.SelectorFromSet(service.Spec.Selector).Matches(labels.Set(deployment.Spec.Template.Labels)) || len(service.Spec.Selector) == 0 {
		t.Errorf("the metrics Service selects %v, not the driver's pods %v", service.Spec.Selector, deployment.Spec.Template.Labels)
	}
	env := envOf(deployment.Spec.Template.Spec.Containers[0])
	if len(service.Spec.Ports) != 1 || service.Spec.Ports[0].Port != 8000 || service.Spec.Ports[0].TargetPort.String() != "http-metrics" {
		t.Fatalf("metrics Service ports %+v, want 8000 to the http-metrics port", service.Spec.Ports)
	}
	served := false
	for _, port := range deployment.Spec.Template.Spec.Containers[0].Ports {
		served = served || (port.Name == "http-metrics" && fmt.Sprint(port.ContainerPort) == env["METRICS_PORT"])
	}
	if !served {
		t.Errorf("no container port http-metrics on METRICS_PORT %s", env["METRICS_PORT"])
	}

	monitored := render(t, helm, "metrics.serviceMonitor.enabled=true", "metrics.serviceMonitor.additionalLabels.release=prometheus", "metrics.serviceMonitor.interval=30s")
	if len(monitored["ServiceMonitor"]) != 1 {
		t.Fatalf("%d ServiceMonitors rendered with metrics.serviceMonitor.enabled=true, want 1", len(monitored["ServiceMonitor"]))
	}
	monitor := monitored["ServiceMonitor"][0]
	if monitor.GetAPIVersion() != "monitoring.coreos.com/v1" || monitor.GetLabels()["release"] != "prometheus" {
		t.Errorf("ServiceMonitor %s with labels %v, want monitoring.coreos.com/v1 labelled release=prometheus", monitor.GetAPIVersion(), monitor.GetLabels())
	}
	matchLabels, _, _ := unstructured.NestedStringMap(monitor.Object, "spec", "selector", "matchLabels")
	monitoredService := convert[corev1.Service](t, monitored["Service"][0])
	if len(matchLabels) == 0 || !labels.SelectorFromSet(matchLabels).Matches(labels.Set(monitoredService.Labels)) ||
		labels.SelectorFromSet(matchLabels).Matches(labels.Set(deployment.Labels)) {
		t.Errorf("the ServiceMonitor selects %v: want the metrics Service %v and not the release's other objects", matchLabels, monitoredService.Labels)
	}
	namespaces, _, _ := unstructured.NestedStringSlice(monitor.Object, "spec", "namespaceSelector", "matchNames")
	endpoints, _, _ := unstructured.NestedSlice(monitor.Object, "spec", "endpoints")
	if len(namespaces) != 1 || namespaces[0] != "karpenter" || len(endpoints) != 1 {
		t.Fatalf("ServiceMonitor namespaces %v, endpoints %v; want the release's namespace and one endpoint", namespaces, endpoints)
	}
	endpoint := endpoints[0].(map[string]any)
	if endpoint["port"] != monitoredService.Spec.Ports[0].Name || endpoint["path"] != "/metrics" || endpoint["interval"] != "30s" {
		t.Errorf("ServiceMonitor endpoint %v, want port %s, path /metrics, interval 30s", endpoint, monitoredService.Spec.Ports[0].Name)
	}

	if _, err := Helm(helm, "template", "nodefleet-karpenter", ChartDir, "--set", "metrics.serviceMonitor.enabled=true", "--set", "metrics.service.enabled=false"); err == nil ||
		!strings.Contains(err.Error(), "metrics.service.enabled") {
		t.Errorf("a ServiceMonitor without the Service it selects: %v, want an error naming metrics.service.enabled", err)
	}
	target := render(t, helm, "kubeconfig.render=target", "metrics.serviceMonitor.enabled=true")
	if len(target["Service"]) != 0 || len(target["ServiceMonitor"]) != 0 {
		t.Error("kubeconfig.render=target renders the metrics Service or ServiceMonitor, which belong where the driver runs")
	}
}

// The dashboard ConfigMap is off by default; when on it carries the Grafana sidecar's label and the
// committed dashboard as it is.
func TestDashboardConfigMapCarriesTheCommittedDashboard(t *testing.T) {
	helm := helmOrSkip(t)
	if configMaps := render(t, helm)["ConfigMap"]; len(configMaps) != 0 {
		t.Fatalf("%d ConfigMaps rendered by default, want none", len(configMaps))
	}
	configMaps := render(t, helm, "metrics.dashboard.enabled=true")["ConfigMap"]
	if len(configMaps) != 1 {
		t.Fatalf("%d ConfigMaps rendered with metrics.dashboard.enabled=true, want 1", len(configMaps))
	}
	configMap := convert[corev1.ConfigMap](t, configMaps[0])
	committed, err := os.ReadFile(filepath.Join(ChartDir, "dashboards", "nodefleet.json"))
	if err != nil {
		t.Fatal(err)
	}
	if configMap.Labels["grafana_dashboard"] != "1" || configMap.Namespace != "karpenter" {
		t.Errorf("ConfigMap labels %v in %s, want grafana_dashboard=1 in the release namespace", configMap.Labels, configMap.Namespace)
	}
	if strings.TrimSpace(configMap.Data["nodefleet.json"]) != strings.TrimSpace(string(committed)) {
		t.Error("the ConfigMap's nodefleet.json differs from dashboards/nodefleet.json")
	}
}
