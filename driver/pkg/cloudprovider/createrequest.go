package cloudprovider

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"nodefleet.dev/driver/pkg/nodefleetapi"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
)

// requirement and taint are the create body's parts as the API documents them. The generated
// body's fields for them are filled through JSON (fillFromJSON), so the driver does not depend on
// how the generator names (or inlines) their types.
type requirement struct {
	Key       string   `json:"key"`
	Operator  string   `json:"operator"`
	Values    []string `json:"values,omitempty"`
	MinValues *int     `json:"minValues,omitempty"`
}

type taint struct {
	Key    string `json:"key"`
	Value  string `json:"value,omitempty"`
	Effect string `json:"effect"`
}

// createRequest translates a NodeClaim into the API's create body. It is a pure function of the
// NodeClaim's name, immutable spec and labels, with requirements, values and taints sorted, so
// Karpenter's retried Create is recognised by the API as a replay of the same request.
func createRequest(nodeClaim *karpv1.NodeClaim, pool string) (nodefleetapi.CreateNodeJSONRequestBody, error) {
	request := nodefleetapi.CreateNodeJSONRequestBody{UniqueID: nodeClaim.Name, Pool: pool}
	if requirements := toRequirements(nodeClaim.Spec.Requirements); len(requirements) > 0 {
		if err := fillFromJSON(&request.Requirements, requirements); err != nil {
			return request, err
		}
	}
	if len(nodeClaim.Labels) > 0 {
		labels := maps.Clone(nodeClaim.Labels)
		request.Labels = &labels
	}
	if taints := toTaints(nodeClaim.Spec.Taints, nodeClaim.Spec.StartupTaints); len(taints) > 0 {
		if err := fillFromJSON(&request.Taints, taints); err != nil {
			return request, err
		}
	}
	return request, nil
}

func toRequirements(requirements []karpv1.NodeSelectorRequirementWithMinValues) []requirement {
	translated := make([]requirement, 0, len(requirements))
	for _, r := range requirements {
		values := slices.Clone(r.Values)
		slices.Sort(values)
		translated = append(translated, requirement{Key: r.Key, Operator: string(r.Operator), Values: values, MinValues: r.MinValues})
	}
	slices.SortStableFunc(translated, func(a, b requirement) int {
		return cmp.Or(cmp.Compare(a.Key, b.Key), cmp.Compare(a.Operator, b.Operator))
	})
	return translated
}

// toTaints is the NodeClaim's taints and startup taints, each (key, effect) once (the API refuses
// a repeated pair), a taint winning over a startup taint of the same pair; sorted for replays.
func toTaints(taints, startupTaints []corev1.Taint) []taint {
	type pair struct{ key, effect string }
	seen := map[pair]bool{}
	var translated []taint
	for _, t := range slices.Concat(taints, startupTaints) {
		identity := pair{t.Key, string(t.Effect)}
		if seen[identity] {
			continue
		}
		seen[identity] = true
		translated = append(translated, taint{Key: t.Key, Value: t.Value, Effect: string(t.Effect)})
	}
	slices.SortFunc(translated, func(a, b taint) int {
		return cmp.Or(cmp.Compare(a.Key, b.Key), cmp.Compare(a.Effect, b.Effect))
	})
	return translated
}

// fillFromJSON sets a generated field from a value of the same JSON shape.
func fillFromJSON(field any, value any) error {
	encoded, err := json.Marshal(value)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(encoded, field); err != nil {
		return fmt.Errorf("the generated client's create body no longer matches the driver's: %w", err)
	}
	return nil
}
