// Command pulumi-resource-random is nodefleet's stand-in for the random provider plugin (the
// upstream provider module is not served by the Go module proxy). It implements RandomString and
// RandomPassword with upstream's tokens, properties and rule that every input change replaces the resource.
package main

import (
	"nodefleet.dev/toolchain/providers/internal/nativeprovider"
)

// version is the @pulumi/random version in package-lock.json (set by the toolchain build).
var version = "4.21.2"

func main() {
	nativeprovider.Serve(nativeprovider.Provider{
		Name:    "random",
		Version: version,
		Resources: map[string]nativeprovider.Resource{
			"random:index/randomString:RandomString":     randomString{},
			"random:index/randomPassword:RandomPassword": randomPassword{},
		},
	})
}
