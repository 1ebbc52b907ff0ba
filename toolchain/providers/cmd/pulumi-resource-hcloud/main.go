// Command pulumi-resource-hcloud is nodefleet's stand-in for the Pulumi hcloud provider plugin (its
// module and the Terraform provider it bridges are not served by the Go module proxy). It implements
// the resources and look-ups nodefleet's programs declare (Network, NetworkSubnet, NetworkRoute, Firewall,
// PlacementGroup, Server; getNetwork, getFirewall, getImage) with @pulumi/hcloud's type tokens and property
// names and terraform-provider-hcloud's replacement rules, on Hetzner's own Go client, so it runs
// against the real API or, through `endpoint`/HCLOUD_ENDPOINT, the local cloud's fake.
//
// With --dump-schema it prints each resource's replace keys and required inputs and exits.
package main

import (
	"fmt"
	"os"

	"nodefleet.dev/toolchain/providers/internal/nativeprovider"
)

// version is the @pulumi/hcloud version in package-lock.json (set by the toolchain build).
var version = "1.41.0"

func main() {
	api := &cloud{}
	resources := map[string]nativeprovider.Resource{
		"hcloud:index/network:Network":               network{api},
		"hcloud:index/networkSubnet:NetworkSubnet":   networkSubnet{api},
		"hcloud:index/networkRoute:NetworkRoute":     networkRoute{api},
		"hcloud:index/firewall:Firewall":             firewall{api},
		"hcloud:index/placementGroup:PlacementGroup": placementGroup{api},
		"hcloud:index/server:Server":                 server{api},
	}
	if len(os.Args) == 2 && os.Args[1] == "--dump-schema" {
		if err := dumpSchema(os.Stdout, resources); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	nativeprovider.Serve(nativeprovider.Provider{
		Name:      "hcloud",
		Version:   version,
		Configure: api.configure,
		Resources: resources,
		Invokes: map[string]nativeprovider.Invoke{
			"hcloud:index/getNetwork:getNetwork":   api.getNetwork,
			"hcloud:index/getFirewall:getFirewall": api.getFirewall,
			"hcloud:index/getImage:getImage":       api.getImage,
		},
	})
}
