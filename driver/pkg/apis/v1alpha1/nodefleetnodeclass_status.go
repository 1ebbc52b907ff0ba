package v1alpha1

import (
	"github.com/awslabs/operatorpkg/status"
)

// NodefleetNodeClassStatus is the observed state of a NodefleetNodeClass.
type NodefleetNodeClassStatus struct {
	// Conditions: Ready is True when the API answers GET /clusters/{clusterID} with the token and
	// lists the pool among the cluster's autoscaled pools. Karpenter's NodePool readiness reads it.
	// +optional
	Conditions []status.Condition `json:"conditions,omitempty"`
	// PoolTemplateHash is the pool's templateHash as the API last described it. A pool template
	// changed in the stack changes it, and Karpenter, which watches NodeClasses, then re-checks
	// every NodeClaim of this NodeClass for drift at once instead of at its periodic re-check.
	// +optional
	PoolTemplateHash string `json:"poolTemplateHash,omitempty"`
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
