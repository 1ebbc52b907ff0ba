package v1alpha1

import (
	"github.com/awslabs/operatorpkg/status"
	corev1 "k8s.io/api/core/v1"
)

// NodefleetNodeClassStatus is the observed state of a NodefleetNodeClass.
type NodefleetNodeClassStatus struct {
	// Conditions: Ready is True when the API answers GET /clusters/{clusterID} with the token,
	// lists the pool among the cluster's autoscaled pools, and every NodePool using this NodeClass
	// carries the pool's taints (reason NodePoolTaintsNotCovered otherwise). While the NodeClass is
	// deleted but NodeClaims still use it, it is False with reason WaitingOnNodeClaimTermination,
	// naming them. Karpenter's NodePool readiness reads it. OfferingsAvailable is False, with
	// reason LaunchBackoff, while failed launches (sold out, quota, unusable image, full pool) keep
	// offerings of the pool unavailable, naming each with its reason and until when; it is not
	// part of Ready, as Karpenter launches the other offerings meanwhile.
	// +optional
	Conditions []status.Condition `json:"conditions,omitempty"`
	// PoolTemplateHash is the pool's templateHash as the API last described it. A pool template
	// changed in the stack changes it, and Karpenter, which watches NodeClasses, then re-checks
	// every NodeClaim of this NodeClass for drift at once instead of at its periodic re-check.
	// +optional
	PoolTemplateHash string `json:"poolTemplateHash,omitempty"`
	// PoolTaints are the taints the pool's template puts on every node, as the API last described
	// them. Every NodePool using this NodeClass must carry each of them, with the same key, value
	// and effect, in spec.template.spec.taints or spec.template.spec.startupTaints: Karpenter
	// schedules pods by the NodePool's taints, so a node carrying one more would take none of the
	// pods it was launched for. Absent: the pool has no taints.
	// +optional
	PoolTaints []corev1.Taint `json:"poolTaints,omitempty"`
	// PoolLabels are the labels the pool's template puts on every node, as the API last described
	// them; a NodePool's template labels may repeat them so Karpenter knows them before a node
	// exists. Absent: the pool has no labels.
	// +optional
	PoolLabels map[string]string `json:"poolLabels,omitempty"`
}

// StatusConditions has a single root condition, Ready.
func (in *NodefleetNodeClass) StatusConditions(opts ...status.ForOption) status.ConditionSet {
	return status.NewReadyConditions().For(in, opts...)
}

func (in *NodefleetNodeClass) GetConditions() []status.Condition {
	return in.Status.Conditions
}

func (in *NodefleetNodeClass) SetConditions(conditions []status.Condition) {
	in.Status.Conditions = conditions
}

// ConditionOfferingsAvailable and its False reason (see NodefleetNodeClassStatus.Conditions).
const (
	ConditionOfferingsAvailable = "OfferingsAvailable"
	ReasonLaunchBackoff         = "LaunchBackoff"
)
