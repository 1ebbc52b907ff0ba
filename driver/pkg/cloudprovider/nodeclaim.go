package cloudprovider

import (
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"nodefleet.dev/driver/pkg/nodefleetapi"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
)

// Node statuses of the API (docs/design.md §5.3).
const (
	statusFailed      = "FAILED"
	statusTerminating = "TERMINATING"
)

// toNodeClaim is what Karpenter needs of an API node: providerID, capacity, allocatable, imageID
// and the labels of the well-known keys. A TERMINATING node carries a deletion timestamp, as a
// shutting-down instance does in other providers, so garbage collection leaves it alone.
func toNodeClaim(node *nodefleetapi.Node) (*karpv1.NodeClaim, error) {
	capacity, err := toResourceList(node.Capacity)
	if err != nil {
		return nil, err
	}
	allocatable, err := toResourceList(node.Allocatable)
	if err != nil {
		return nil, err
	}
	labels := map[string]string{}
	maps.Copy(labels, node.Labels)
	labels[corev1.LabelInstanceTypeStable] = node.InstanceType
	labels[corev1.LabelTopologyZone] = node.Zone
	if labels[karpv1.CapacityTypeLabelKey] == "" {
		labels[karpv1.CapacityTypeLabelKey] = karpv1.CapacityTypeOnDemand
	}
	nodeClaim := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Status: karpv1.NodeClaimStatus{
			ProviderID:  node.ProviderID,
			ImageID:     node.ImageID,
			Capacity:    capacity,
			Allocatable: allocatable,
		},
	}
	if created, err := time.Parse(time.RFC3339Nano, node.CreatedAt); err == nil {
		nodeClaim.CreationTimestamp = metav1.NewTime(created)
	}
	if string(node.Status) == statusTerminating {
		updated, err := time.Parse(time.RFC3339Nano, node.UpdatedAt)
		if err != nil {
			updated = time.Now()
		}
		nodeClaim.DeletionTimestamp = &metav1.Time{Time: updated}
	}
	return nodeClaim, nil
}
