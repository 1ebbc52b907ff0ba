package v1alpha1

import (
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
)

// Labels the scaling API gives every node (automation/catalog/requirements.ts offeringLabels), so
// NodePools and pods may select on them.
const (
	LabelDomain            = "nodefleet.io"
	PoolLabelKey           = LabelDomain + "/pool"
	InstanceCPULabelKey    = LabelDomain + "/instance-cpu"
	InstanceMemoryLabelKey = LabelDomain + "/instance-memory"
)

func init() {
	karpv1.RestrictedLabelDomains = karpv1.RestrictedLabelDomains.Insert(LabelDomain)
	karpv1.WellKnownLabels = karpv1.WellKnownLabels.Insert(PoolLabelKey, InstanceCPULabelKey, InstanceMemoryLabelKey)
}
