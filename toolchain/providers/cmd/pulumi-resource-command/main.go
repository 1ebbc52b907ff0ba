// Command pulumi-resource-command is nodefleet's stand-in for the Pulumi command provider plugin (its
// module, github.com/pulumi/pulumi-command/provider, is not served by the Go module proxy). It
// implements remote.Command (over SSH, on golang.org/x/crypto/ssh) and local.Command with
// @pulumi/command's type tokens, property names and rules: `triggers` replace, any other change runs
// `update` (else `create`), a delete runs `delete`, and each run sees the previous stdout and stderr
// as PULUMI_COMMAND_STDOUT and PULUMI_COMMAND_STDERR.
package main

import "nodefleet.dev/toolchain/providers/internal/nativeprovider"

// version is the @pulumi/command version in package-lock.json (set by the toolchain build).
var version = "1.2.1"

func main() {
	nativeprovider.Serve(nativeprovider.Provider{
		Name:    "command",
		Version: version,
		Resources: map[string]nativeprovider.Resource{
			"command:remote:Command": command{runner: remoteRunner{}},
			"command:local:Command":  command{runner: localRunner{}},
		},
	})
}
