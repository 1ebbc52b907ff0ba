package apis_test

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"

	"nodefleet.dev/driver/pkg/apis"
)

// validator runs the NodefleetNodeClass CRD's CEL rules as the API server does on an update.
func validator(t *testing.T) (*cel.Validator, *schema.Structural) {
	t.Helper()
	crd := apis.CRDs[0]
	if len(crd.Spec.Versions) != 1 || crd.Spec.Versions[0].Schema == nil {
		t.Fatalf("the CRD has %d versions, want one with a schema", len(crd.Spec.Versions))
	}
	internal := &apiextensions.JSONSchemaProps{}
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(crd.Spec.Versions[0].Schema.OpenAPIV3Schema, internal, nil); err != nil {
		t.Fatal(err)
	}
	structural, err := schema.NewStructural(internal)
	if err != nil {
		t.Fatal(err)
	}
	v := cel.NewValidator(structural, true, celconfig.PerCallLimit)
	if v == nil {
		t.Fatal("the CRD has no CEL rules")
	}
	return v, structural
}

func nodeClass(edit func(spec map[string]any)) map[string]any {
	spec := map[string]any{
		"endpoint":       "https://nodefleet.example:8080",
		"clusterID":      "prod",
		"pool":           "workers",
		"tokenSecretRef": map[string]any{"name": "nodefleet-api-token", "namespace": "karpenter", "key": "token"},
	}
	if edit != nil {
		edit(spec)
	}
	return map[string]any{
		"apiVersion": apis.Group + "/v1alpha1",
		"kind":       "NodefleetNodeClass",
		"metadata":   map[string]any{"name": "default"},
		"spec":       spec,
	}
}

// Changing clusterID, endpoint or pool would orphan the NodeClass's running nodes (the driver
// could no longer reach them), so the API server refuses it; the token Secret and CA bundle stay
// changeable (rotation).
func TestClusterEndpointAndPoolAreImmutable(t *testing.T) {
	v, structural := validator(t)
	old := nodeClass(nil)
	refused := map[string]func(map[string]any){
		"clusterID": func(s map[string]any) { s["clusterID"] = "staging" },
		"endpoint":  func(s map[string]any) { s["endpoint"] = "https://other.example:8080" },
		"pool":      func(s map[string]any) { s["pool"] = "batch" },
	}
	for fieldName, edit := range refused {
		t.Run(fieldName, func(t *testing.T) {
			errs, _ := v.Validate(context.Background(), field.NewPath("root"), structural, nodeClass(edit), old, celconfig.RuntimeCELCostBudget)
			if len(errs) != 1 || !strings.Contains(errs.ToAggregate().Error(), fieldName+" is immutable") {
				t.Fatalf("errors %v, want one saying %s is immutable", errs, fieldName)
			}
		})
	}
	allowed := map[string]func(map[string]any){
		"unchanged": nil,
		"tokenSecretRef": func(s map[string]any) {
			s["tokenSecretRef"] = map[string]any{"name": "rotated", "namespace": "karpenter"}
		},
		"caBundle": func(s map[string]any) { s["caBundle"] = "LS0tLS1CRUdJTg==" },
	}
	for name, edit := range allowed {
		t.Run(name, func(t *testing.T) {
			if errs, _ := v.Validate(context.Background(), field.NewPath("root"), structural, nodeClass(edit), old, celconfig.RuntimeCELCostBudget); len(errs) != 0 {
				t.Fatalf("errors %v, want the update allowed", errs)
			}
		})
	}
	// A create has no old object: the transition rules do not apply.
	if errs, _ := v.Validate(context.Background(), field.NewPath("root"), structural, nodeClass(nil), nil, celconfig.RuntimeCELCostBudget); len(errs) != 0 {
		t.Fatalf("create: errors %v, want none", errs)
	}
}
