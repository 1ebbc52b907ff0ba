package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodefleetNodeClassSpec says which scaling API serves a NodePool's nodes and how to reach it.
type NodefleetNodeClassSpec struct {
	// Endpoint is the scaling API's base URL, without the /api/v1 path (e.g. https://nodefleet.example:8080).
	// Immutable: the nodes already launched are known only to the API at this endpoint, so another
	// endpoint would orphan them; move to another one with a new NodeClass.
	// +kubebuilder:validation:Pattern=`^https?://[^\s/?#]+(/[^\s?#]*)?$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="endpoint is immutable: create another NodefleetNodeClass and move the NodePools to it"
	// +required
	Endpoint string `json:"endpoint"`
	// ClusterID is the id of the cluster in the scaling API (GET /api/v1/clusters/{clusterID}).
	// Immutable: the nodes already launched belong to this cluster.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="clusterID is immutable: create another NodefleetNodeClass and move the NodePools to it"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +required
	ClusterID string `json:"clusterID"`
	// Pool is the autoscaled pool of that cluster the nodes are created in. Immutable: the nodes
	// already launched are in this pool. Point a NodePool at a NodeClass of another pool instead,
	// which drifts its nodes (Karpenter replaces them by nodes of that pool).
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="pool is immutable: create another NodefleetNodeClass and move the NodePools to it"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +required
	Pool string `json:"pool"`
	// TokenSecretRef names the Secret key holding a static API token of this cluster. The driver
	// reads it on every request through a watch, so rotating the Secret takes effect without a
	// restart. Without it the driver presents its projected ServiceAccount token (audience
	// nodefleet, the file NODEFLEET_TOKEN_FILE names), which the API checks with a TokenReview.
	// +optional
	TokenSecretRef *SecretKeyReference `json:"tokenSecretRef,omitempty"`
	// CABundle is a PEM bundle of the certificate authorities the API's TLS certificate is checked
	// against; the system roots when empty.
	// +optional
	CABundle []byte `json:"caBundle,omitempty"`
}

// SecretKeyReference is one key of a Secret in a namespace.
type SecretKeyReference struct {
	// Name of the Secret.
	// +kubebuilder:validation:MinLength=1
	// +required
	Name string `json:"name"`
	// Namespace of the Secret; it must be the namespace the driver watches Secrets in (its own).
	// +kubebuilder:validation:MinLength=1
	// +required
	Namespace string `json:"namespace"`
	// Key in the Secret's data holding the token.
	// +kubebuilder:default=token
	// +optional
	Key string `json:"key,omitempty"`
}

// NodefleetNodeClass is the Schema for the NodefleetNodeClass API.
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=nodefleetnodeclasses,scope=Cluster,categories=karpenter,shortName={nfnc,nfncs}
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Cluster",type="string",JSONPath=".spec.clusterID"
// +kubebuilder:printcolumn:name="Pool",type="string",JSONPath=".spec.pool"
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
type NodefleetNodeClass struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   NodefleetNodeClassSpec   `json:"spec,omitempty"`
	Status NodefleetNodeClassStatus `json:"status,omitempty"`
}

// NodefleetNodeClassList contains a list of NodefleetNodeClass.
// +kubebuilder:object:root=true
type NodefleetNodeClassList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodefleetNodeClass `json:"items"`
}

// TerminationFinalizer holds a NodefleetNodeClass that is being deleted until no NodeClaim uses
// it: Karpenter needs its endpoint and token to delete those NodeClaims' nodes.
const TerminationFinalizer = "karpenter.nodefleet.io/termination"

// ReasonWaitingOnNodeClaimTermination is the Ready condition's reason, and the Event's, while a
// deleted NodeClass waits for its NodeClaims to terminate.
const ReasonWaitingOnNodeClaimTermination = "WaitingOnNodeClaimTermination"

// TokenKey is the Secret key holding the token (the default when none is given).
func (in *NodefleetNodeClass) TokenKey() string {
	if in.Spec.TokenSecretRef == nil || in.Spec.TokenSecretRef.Key == "" {
		return "token"
	}
	return in.Spec.TokenSecretRef.Key
}
