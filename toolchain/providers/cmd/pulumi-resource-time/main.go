// Command pulumi-resource-time is nodefleet's stand-in for the pulumiverse time provider plugin
// (its module is not served by the Go module proxy). It implements Offset with upstream's token
// and properties: the base time is fixed at create (or given), `triggers` replace, a new
// `baseRfc3339` or offset recomputes in place.
package main

import "nodefleet.dev/toolchain/providers/internal/nativeprovider"

// version is the @pulumiverse/time version in package-lock.json (set by the toolchain build).
var version = "0.1.1"

func main() {
	nativeprovider.Serve(nativeprovider.Provider{
		Name:    "time",
		Version: version,
		Resources: map[string]nativeprovider.Resource{
			"time:index/offset:Offset": offset{},
		},
	})
}
