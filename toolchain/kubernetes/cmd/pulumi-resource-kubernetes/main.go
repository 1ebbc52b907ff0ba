// Command pulumi-resource-kubernetes serves the upstream Kubernetes provider. Upstream's own main
// embeds copies of its schema that are generated at build time and not part of the module, so
// the toolchain build copies the module's committed schema.json and terraform-mapping.json next
// to this file (gitignored) before compiling.
package main

import (
	_ "embed"

	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/provider"
	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version"
)

//go:embed schema-embed.json
var pulumiSchema []byte

//go:embed terraform-mapping-embed.json
var terraformMapping []byte

func main() {
	provider.Serve("kubernetes", version.Version, pulumiSchema, terraformMapping)
}
