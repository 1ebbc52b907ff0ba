/**
 * The program's side of nodefleet's provider plugin: `pulumi:providers:nodefleet`, configured once
 * per pool with the cluster credentials (a secret in the provider's state), which the pool's node
 * drains, Node removals and bootstrap tokens use, and on bare metal its Node metadata and local PVC
 * removals; a Robot pool's also with the Robot webservice credentials its rescues use. The plugin
 * ships in this package (bin/, docs/own-project.md says how a project names it).
 */
import * as pulumi from "@pulumi/pulumi";
import { secretCredentialsJson } from "../kubernetes/kubernetesApiClient";
import { packageVersion } from "../shared/packageVersion";

export interface ClusterAccessProviderArgs {
  /**
   * Kubeconfig allowed to manage Nodes, evict pods and manage bootstrap token Secrets (bare metal
   * with local storage: list PVs and delete PVCs; token or client certificate user); a secret. None: render and simulation, where nothing reaches a cluster.
   */
  readonly kubeconfig?: pulumi.Input<string>;
  /**
   * A Robot pool's webservice credentials, kept as a secret in the provider's state. Absent (every
   * other pool, and a Robot pool given none): the plugin reads HROBOT_USER and HROBOT_PASSWORD from
   * its environment when a rescue needs them.
   */
  readonly robotCredentials?: pulumi.Input<{ readonly user: string; readonly password: string } | undefined>;
}

export class ClusterAccessProvider extends pulumi.ProviderResource {
  constructor(name: string, args: ClusterAccessProviderArgs, opts?: pulumi.ResourceOptions) {
    const credentials =
      args.kubeconfig === undefined
        ? pulumi.secret("")
        : secretCredentialsJson(
            args.kubeconfig,
            `${name}: nodes of this pool cannot be drained, their Nodes are not deleted on removal or labelled, and no bootstrap token can be created`,
          );
    // The plugin of this package's version: the engine's Pulumi home has it (automation/engine/nodefleetPlugin.ts).
    // Only when given, so the inputs of the providers of other pools stay as they were.
    const robot =
      args.robotCredentials === undefined
        ? {}
        : {
            robotCredentials: pulumi.secret(
              pulumi.output(args.robotCredentials).apply((c) => (c ? JSON.stringify({ user: c.user, password: c.password }) : "")),
            ),
          };
    super("nodefleet", name, { credentials, ...robot }, { ...opts, version: packageVersion(__dirname) });
  }
}
