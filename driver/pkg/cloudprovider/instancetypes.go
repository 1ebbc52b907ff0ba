package cloudprovider

import (
	"fmt"
	"strconv"
	"time"

	"github.com/samber/lo"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"nodefleet.dev/driver/pkg/apis/v1alpha1"
	"nodefleet.dev/driver/pkg/nodefleetapi"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
	"sigs.k8s.io/karpenter/pkg/cloudprovider"
	"sigs.k8s.io/karpenter/pkg/scheduling"
)

// toInstanceType translates one of the API's instance types. Its requirements define every label
// Karpenter calls well known (zone, region, instance-type, arch, os, capacity-type, windows-build,
// nodepool) plus the API's own nodefleet.io labels; an offering is available only when the API says
// so and it has not just failed as sold out.
func toInstanceType(clusterID, nodePoolName string, apiType nodefleetapi.InstanceType, asked time.Time, soldOut *SoldOutOfferings) (*cloudprovider.InstanceType, error) {
	capacity, err := toResourceList(apiType.Capacity)
	if err != nil {
		return nil, fmt.Errorf("instance type %s capacity: %w", apiType.Name, err)
	}
	overhead, err := toResourceList(apiType.Overhead)
	if err != nil {
		return nil, fmt.Errorf("instance type %s overhead: %w", apiType.Name, err)
	}
	var zones []string
	capacityTypes := map[string]bool{}
	offerings := make(cloudprovider.Offerings, 0, len(apiType.Offerings))
	for _, offering := range apiType.Offerings {
		zones = append(zones, offering.Zone)
		capacityType := string(offering.CapacityType)
		capacityTypes[capacityType] = true
		offerings = append(offerings, &cloudprovider.Offering{
			Requirements: scheduling.NewRequirements(
				scheduling.NewRequirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, offering.Zone),
				scheduling.NewRequirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, capacityType),
			),
			Price:     float64(offering.Price),
			Available: offering.Available && !soldOut.MarkedAfter(clusterID, apiType.Name, offering.Zone, asked),
		})
	}
	requirements := scheduling.NewRequirements(
		scheduling.NewRequirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, apiType.Name),
		scheduling.NewRequirement(corev1.LabelArchStable, corev1.NodeSelectorOpIn, string(apiType.Arch)),
		scheduling.NewRequirement(corev1.LabelOSStable, corev1.NodeSelectorOpIn, string(apiType.Os)),
		scheduling.NewRequirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, zones...),
		scheduling.NewRequirement(corev1.LabelTopologyRegion, corev1.NodeSelectorOpIn, apiType.Region),
		scheduling.NewRequirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, lo.Keys(capacityTypes)...),
		// Linux only: no Windows build exists on these nodes.
		scheduling.NewRequirement(corev1.LabelWindowsBuild, corev1.NodeSelectorOpDoesNotExist),
		scheduling.NewRequirement(karpv1.NodePoolLabelKey, corev1.NodeSelectorOpIn, nodePoolName),
		scheduling.NewRequirement(v1alpha1.PoolLabelKey, corev1.NodeSelectorOpIn, apiType.Pool),
		scheduling.NewRequirement(v1alpha1.InstanceCPULabelKey, corev1.NodeSelectorOpIn, formatNumber(apiType.Cpu)),
		scheduling.NewRequirement(v1alpha1.InstanceMemoryLabelKey, corev1.NodeSelectorOpIn, formatNumber(apiType.MemoryMiB)),
	)
	return &cloudprovider.InstanceType{
		Name:         apiType.Name,
		Requirements: requirements,
		Offerings:    offerings,
		Capacity:     capacity,
		// The API gives the kubelet's whole reservation (kube and system reserved plus the eviction
		// threshold) as one list, from the function that writes the kubelet's flags; Karpenter
		// only ever uses the total.
		Overhead: &cloudprovider.InstanceTypeOverhead{
			KubeReserved:      overhead,
			SystemReserved:    corev1.ResourceList{},
			EvictionThreshold: corev1.ResourceList{},
		},
	}, nil
}

// toResourceList parses the API's resource quantities.
func toResourceList(list nodefleetapi.ResourceList) (corev1.ResourceList, error) {
	parsed := corev1.ResourceList{}
	for name, text := range map[corev1.ResourceName]string{
		corev1.ResourceCPU:              list.Cpu,
		corev1.ResourceMemory:           list.Memory,
		corev1.ResourcePods:             list.Pods,
		corev1.ResourceEphemeralStorage: list.EphemeralStorage,
	} {
		quantity, err := resource.ParseQuantity(text)
		if err != nil {
			return nil, fmt.Errorf("%s %q is not a quantity", name, text)
		}
		parsed[name] = quantity
	}
	return parsed, nil
}

func formatNumber[N float32 | float64 | int](value N) string {
	return strconv.FormatFloat(float64(value), 'f', -1, 64)
}
