package cloudprovider

import (
	"fmt"
	"strings"
)

// nodeRef is what a providerID names: `<scheme>:///<clusterId>/<nodeID>` (docs/design.md §5.3).
type nodeRef struct {
	ClusterID string
	NodeID    string
}

func parseProviderID(providerID string) (nodeRef, error) {
	scheme, rest, found := strings.Cut(providerID, ":///")
	if !found || scheme == "" {
		return nodeRef{}, fmt.Errorf("providerID %q is not <scheme>:///<clusterId>/<nodeID>", providerID)
	}
	clusterID, nodeID, found := strings.Cut(rest, "/")
	if !found || clusterID == "" || nodeID == "" || strings.Contains(nodeID, "/") {
		return nodeRef{}, fmt.Errorf("providerID %q is not <scheme>:///<clusterId>/<nodeID>", providerID)
	}
	return nodeRef{ClusterID: clusterID, NodeID: nodeID}, nil
}
