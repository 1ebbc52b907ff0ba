// Package v1alpha1 is the NodefleetNodeClass API: where the driver finds the scaling API and which
// cluster and pool a NodePool's nodes come from.
// +k8s:deepcopy-gen=package
// +groupName=karpenter.nodefleet.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"

	"nodefleet.dev/driver/pkg/apis"
)

// SchemeGroupVersion is the group and version of the types in this package.
var SchemeGroupVersion = schema.GroupVersion{Group: apis.Group, Version: "v1alpha1"}

// Registered in client-go's scheme, which Karpenter's operator uses for its clients (as kwok does).
func init() {
	metav1.AddToGroupVersion(scheme.Scheme, SchemeGroupVersion)
	scheme.Scheme.AddKnownTypes(SchemeGroupVersion, &NodefleetNodeClass{}, &NodefleetNodeClassList{})
}
