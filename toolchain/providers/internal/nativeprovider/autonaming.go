package nativeprovider

import "github.com/pulumi/pulumi/sdk/v3/go/common/resource"

// Named is a Resource whose `name` upstream fills in when the program leaves it out (autonaming,
// pulumi-terraform-bridge info/autonaming.go SetAutonaming, which pulumi-hcloud turns on for every
// resource with a `name` input).
type Named interface {
	Resource
	// NameKey is the input holding the object's name.
	NameKey() string
}

// deleteBeforeReplace is the bridge's rule (pkg/tfbridge/schema.go nameRequiresDeleteBeforeReplace,
// applied by the Diff in provider.go): a replacement of an object whose name the program gave
// explicitly deletes the old object first, because the new one asks the cloud for the same name.
// The doubles never autoname, so a name present in the inputs is always explicit.
func deleteBeforeReplace(r Resource, news resource.PropertyMap) bool {
	named, ok := r.(Named)
	return ok && Has(news, named.NameKey())
}
