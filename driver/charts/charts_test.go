package charts

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
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
		if typed.Namespace == "karpenter" && allows(typed.Rules, "", "secrets", "watch") {
			secretsInNamespace = true
		}
	}
	if !secretsInNamespace {
		t.Error("no Role lets the driver watch Secrets in its namespace")
	}
	deployment := &appsv1.Deployment{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(byKind["Deployment"][0].Object, deployment); err != nil {
		t.Fatal(err)
	}
	env := map[string]bool{}
	for _, variable := range deployment.Spec.Template.Spec.Containers[0].Env {
		env[variable.Name] = true
	}
	if !env["SYSTEM_NAMESPACE"] {
		t.Error("the Deployment does not set SYSTEM_NAMESPACE")
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
