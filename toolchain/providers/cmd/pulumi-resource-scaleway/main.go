// Command pulumi-resource-scaleway is nodefleet's stand-in for the Pulumi Scaleway provider plugin
// (github.com/pulumiverse/pulumi-scaleway/provider is not served by the Go module proxy). It
// implements what nodefleet's Elastic Metal pool declares (elasticmetal Server, ipam Ip, network
// PrivateNetwork; getOffer, getOs, getOption, getServer, getPrivateNetwork) with @pulumiverse/scaleway's type
// tokens and property names and terraform-provider-scaleway's replacement rules, waits and delete
// semantics, on Scaleway's own Go SDK, so it runs against the real API or, through `apiUrl`/
// SCW_API_URL, the local cloud's fake. Loaded only with NODEFLEET_PLUGINS=toolchain.
//
// With --dump-schema it prints each resource's replace keys and required inputs and exits.
package main

import (
	"fmt"
	"os"

	"nodefleet.dev/toolchain/providers/internal/nativeprovider"
)

// version is the @pulumiverse/scaleway version in package-lock.json (set by the toolchain build).
var version = "1.54.0"

func main() {
	api := &cloud{}
	resources := map[string]nativeprovider.Resource{
		"scaleway:elasticmetal/server:Server":            server{api},
		"scaleway:ipam/ip:Ip":                            ip{api},
		"scaleway:network/privateNetwork:PrivateNetwork": privateNetwork{api},
	}
	if len(os.Args) == 2 && os.Args[1] == "--dump-schema" {
		if err := nativeprovider.DumpSchema(os.Stdout, resources); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	nativeprovider.Serve(nativeprovider.Provider{
		Name:      "scaleway",
		Version:   version,
		Configure: api.configure,
		Resources: resources,
		Invokes: map[string]nativeprovider.Invoke{
			"scaleway:elasticmetal/getOffer:getOffer":              api.getOffer,
			"scaleway:elasticmetal/getOs:getOs":                    api.getOs,
			"scaleway:elasticmetal/getOption:getOption":            api.getOption,
			"scaleway:elasticmetal/getServer:getServer":            api.getServer,
			"scaleway:network/getPrivateNetwork:getPrivateNetwork": api.getPrivateNetwork,
		},
	})
}
