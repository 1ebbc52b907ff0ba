// Package apis holds the driver's API group and its CustomResourceDefinitions.
package apis

import (
	_ "embed"

	"github.com/awslabs/operatorpkg/object"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

//go:generate go tool -modfile=../../go.tools.mod controller-gen crd object:headerFile="../../hack/boilerplate.go.txt" paths="./..." output:crd:artifacts:config=crds
//go:generate go run ../../hack/chart ../../charts

// Group is the API group of the NodefleetNodeClass.
const Group = "karpenter.nodefleet.io"

var (
	//go:embed crds/karpenter.nodefleet.io_nodefleetnodeclasses.yaml
	NodefleetNodeClassCRD []byte
	// CRDs are the driver's CustomResourceDefinitions, as tests install them.
	CRDs = []*apiextensionsv1.CustomResourceDefinition{
		object.Unmarshal[apiextensionsv1.CustomResourceDefinition](NodefleetNodeClassCRD),
	}
)
