package cloudprovider

import (
	"fmt"
	"regexp"
	"strings"
)

// nodeRef is what a providerID names. `<scheme>:///<clusterId>/<nodeID>` (docs/design.md §5.3)
// names the node itself. `hcloud://<server id>`, the hcloud cloud controller manager's convention
// (github.com/hetznercloud/hcloud-cloud-controller-manager, internal/providerid/providerid.go),
// which a cluster with hcloudProviderIds: hcloud registers (docs/hcloud-ccm.md), names only the
// server: ServerID is set, and the node is the NodeClaim's (refOf).
type nodeRef struct {
	ClusterID string
	NodeID    string
	ServerID  string
}

// hcloudProviderID is `hcloud://` and a Hetzner Cloud server id (a positive decimal number).
var hcloudProviderID = regexp.MustCompile(`^hcloud://([1-9][0-9]*)$`)

func parseProviderID(providerID string) (nodeRef, error) {
	if match := hcloudProviderID.FindStringSubmatch(providerID); match != nil {
		return nodeRef{ServerID: match[1]}, nil
	}
	scheme, rest, found := strings.Cut(providerID, ":///")
	if !found || scheme == "" {
		return nodeRef{}, fmt.Errorf("providerID %q is not <scheme>:///<clusterId>/<nodeID> or hcloud://<server id>", providerID)
	}
	clusterID, nodeID, found := strings.Cut(rest, "/")
	if !found || clusterID == "" || nodeID == "" || strings.Contains(nodeID, "/") {
		return nodeRef{}, fmt.Errorf("providerID %q is not <scheme>:///<clusterId>/<nodeID> or hcloud://<server id>", providerID)
	}
	return nodeRef{ClusterID: clusterID, NodeID: nodeID}, nil
}
