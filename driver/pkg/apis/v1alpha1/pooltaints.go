package v1alpha1

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// ReasonNodePoolTaintsNotCovered is the Ready condition's reason while a NodePool using the
// NodeClass does not carry every taint of the pool.
const ReasonNodePoolTaintsNotCovered = "NodePoolTaintsNotCovered"

// UncoveredPoolTaints is the part of poolTaints that neither taints nor startupTaints carry with
// the same key, value and effect, in poolTaints' order.
//
// The API puts the pool's taints on every node and merges a create's taints over them by (key,
// effect). Karpenter decides which pods a NodePool's nodes can take from the NodePool's taints
// alone, and pods need not tolerate its startup taints (something else removes those). A pool
// taint the NodePool lacks therefore lands on nodes whose pods do not tolerate it, and Karpenter
// launches again for the same pods. A taint of the same key and effect but another value would
// replace the pool's value on its nodes, silently changing what the fleet declares, so it does not
// cover it either.
func UncoveredPoolTaints(poolTaints, taints, startupTaints []corev1.Taint) []corev1.Taint {
	var uncovered []corev1.Taint
	for _, poolTaint := range poolTaints {
		same := func(t corev1.Taint) bool {
			return t.Key == poolTaint.Key && t.Value == poolTaint.Value && t.Effect == poolTaint.Effect
		}
		if !slices.ContainsFunc(taints, same) && !slices.ContainsFunc(startupTaints, same) {
			uncovered = append(uncovered, poolTaint)
		}
	}
	return uncovered
}

// FormatTaints writes taints as kubectl does, key=value:Effect (key:Effect without a value),
// separated by commas.
func FormatTaints(taints []corev1.Taint) string {
	formatted := make([]string, 0, len(taints))
	for _, t := range taints {
		if t.Value == "" {
			formatted = append(formatted, t.Key+":"+string(t.Effect))
		} else {
			formatted = append(formatted, t.Key+"="+t.Value+":"+string(t.Effect))
		}
	}
	return strings.Join(formatted, ", ")
}
