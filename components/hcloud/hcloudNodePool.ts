/**
 * A pool of Hetzner Cloud workers: per member a bootstrap token, the rendered user data and one
 * Server (ownership labels, private network, cluster firewall from first boot, spread placement
 * group). Members are given explicitly so that the git-owned program (static pools, see
 * hcloudServerPlan.ts `staticHcloudMembers`) and the scaling API's stack (autoscaled members rendered from their frozen
 * snapshots) declare servers the same way.
 */
import * as hcloud from "@pulumi/hcloud";
import * as pulumi from "@pulumi/pulumi";
import { nodeBootstrapToken } from "../kubernetes/bootstrapToken";
import { type HcloudPoolCluster, type HcloudPoolMember, type HcloudPoolTemplate, planHcloudServers } from "./hcloudServerPlan";
import { type NodeOutput, OWNERSHIP_LABELS, nodeOutputIdentity } from "../fleet/nodeMember";
import { type KubernetesNodeRemoval, memberNodeRemoval } from "../kubernetes/kubernetesNodeRemoval";
import { chunkIntoSpreadGroups } from "./placementGroups";
import { assertHcloudUserDataSize } from "../bootstrap/userDataLimits";
import { renderWorkerUserData } from "../bootstrap/workerUserData";

export interface HcloudNodePoolArgs {
  /** The cluster the nodes join: id (names, labels), kind (bootstrap flavour), API server, CA, versions, kubelet, token TTL. */
  readonly cluster: HcloudPoolCluster;
  /**
   * The pool template: `name` (labels and placement group names), `image` (default for members),
   * `sshKeys` (default for members, default none), `deleteProtection` (Hetzner delete and rebuild
   * protection on every server, always set equal as Hetzner requires; default false. A protected
   * server may refuse deletion, so turn it off before removing or replacing members).
   */
  readonly pool: HcloudPoolTemplate;
  /** The pool's members, one server each; may be empty. Node ids and placement slots must be unique. */
  readonly members: readonly HcloudPoolMember[];
  /** Id of the cluster's Hetzner network (a number, possibly from a look-up); every server joins it. */
  readonly networkId: pulumi.Input<number>;
  /** The subnet servers get their private address from; when given, servers wait for it. Default: none (it exists already). */
  readonly subnet?: pulumi.Resource;
  /**
   * The cluster network's subnet (`nodefleet:network.subnet`). When given, and the cluster's
   * nodeAddress is private, kubelets register their address in it as InternalIP. Default: none (the
   * kubelet's choice, the public address); the scaling API's stack leaves it out so that running
   * autoscaled members, rendered from frozen snapshots, keep their user data.
   */
  readonly privateSubnet?: string;
  /** Firewalls applied at server creation (`Server.firewallIds`), so they filter from the first boot. */
  readonly firewallIds: pulumi.Input<number>[];
  /**
   * Kubeconfig allowed to delete Nodes (token or client-certificate user); a secret. When given, each
   * server generation gets a KubernetesNodeRemoval, so removing the member, or replacing its server,
   * deletes that generation's Node after its server.
   * Default: none (render, simulation); Nodes of removed members then stay until deleted by hand.
   */
  readonly kubeconfig?: pulumi.Input<string>;
}

/**
 * What the pool reports per node: the common node output plus the Hetzner server name, the
 * Kubernetes Node name and the generation. `hostname` is the member's base name
 * `<clusterId>-<nodeId>` (stable across generations); the machine and its Node are named `nodeName`.
 */
export interface HcloudNodeOutput extends NodeOutput {
  /** `<hostname>-<generation>`, the Hetzner server name. */
  readonly serverName: string;
  /**
   * The Kubernetes Node name (machine hostname, `--hostname-override`): equal to `serverName`, so
   * that the old and new server of a replacement never register as one Node.
   */
  readonly nodeName: string;
  /** The generation suffix (see fleet/generationSuffix.ts). */
  readonly generation: string;
  readonly ipv4: pulumi.Output<string>;
}

/**
 * `nodefleet:hcloud:NodePool`. Bootstrap tokens create Kubernetes Secrets: give the component a
 * Kubernetes provider through `providers` (the Fleet does).
 */
export class HcloudNodePool extends pulumi.ComponentResource {
  readonly servers: hcloud.Server[] = [];
  readonly placementGroups: hcloud.PlacementGroup[] = [];
  readonly nodeRemovals: KubernetesNodeRemoval[] = [];
  readonly nodes: HcloudNodeOutput[] = [];

  constructor(name: string, args: HcloudNodePoolArgs, opts?: pulumi.ComponentResourceOptions) {
    super("nodefleet:hcloud:NodePool", name, {}, opts);
    const { cluster, pool } = args;
    const planned = planHcloudServers(cluster, pool, args.members, args.privateSubnet);
    const poolLabels = { [OWNERSHIP_LABELS.cluster]: cluster.id, [OWNERSHIP_LABELS.pool]: pool.name };
    const deleteProtection = pool.deleteProtection ?? false;
    const keyless = planned.filter((p) => p.sshKeys.length === 0).map((p) => p.member.hostname);
    if (keyless.length > 0) {
      // Hetzner sets a root password on a server created without SSH keys and e-mails it.
      void pulumi.log.warn(
        `pool ${pool.name}: ${keyless.join(", ")} get no SSH key, so Hetzner sets a root password and e-mails it to the project owner; set sshKeys on the pool`,
        this,
      );
    }

    for (const group of chunkIntoSpreadGroups(planned, (p) => p.placementSlot)) {
      const placementGroup = new hcloud.PlacementGroup(
        `${name}-pg-${group.index}`,
        { name: `${cluster.id}-${pool.name}-pg-${group.index}`, type: "spread", labels: poolLabels },
        { parent: this },
      );
      this.placementGroups.push(placementGroup);
      const placementGroupId = placementGroup.id.apply((id) => Number(id));

      for (const plan of group.members) {
        const { member, render } = plan;
        // Named by generation: a replacement gets a fresh token, and the new server is created before the old one goes.
        const token = nodeBootstrapToken(`${plan.serverName}-token`, plan.cluster, plan.nodeName, this);
        // Named by generation like the Node it deletes (`<serverName>-node-removal`): a replacement
        // deletes the old generation's Node after the old server, and removing the member deletes its Node.
        const nodeRemoval = memberNodeRemoval(plan.nodeName, args.kubeconfig, this);
        if (nodeRemoval) this.nodeRemovals.push(nodeRemoval);
        const userData = pulumi.secret(
          token.token.apply((secret) => {
            const text = renderWorkerUserData(plan.cluster, render, secret);
            assertHcloudUserDataSize(member.hostname, text);
            return text;
          }),
        );
        const server = new hcloud.Server(
          plan.serverName,
          {
            name: plan.serverName,
            serverType: member.serverType,
            image: plan.image,
            location: member.location,
            sshKeys: [...plan.sshKeys],
            userData,
            labels: { ...poolLabels, [OWNERSHIP_LABELS.node]: member.nodeId },
            firewallIds: args.firewallIds,
            placementGroupId,
            // aliasIps: [] avoids a detach/attach on every update (terraform-provider-hcloud #650).
            networks: [{ networkId: args.networkId, aliasIps: [] }],
            publicNets: [{ ipv4Enabled: true, ipv6Enabled: true }],
            deleteProtection,
            rebuildProtection: deleteProtection,
          },
          // The token Secret must exist in the cluster before the node boots and joins; the Node is
          // deleted only after the server (dependents are deleted first).
          { parent: this, dependsOn: [token, ...(args.subnet ? [args.subnet] : []), ...(nodeRemoval ? [nodeRemoval] : [])] },
        );
        this.servers.push(server);
        this.nodes.push({
          ...nodeOutputIdentity(member),
          serverName: plan.serverName,
          nodeName: plan.nodeName,
          generation: plan.generation,
          serverId: server.id,
          ipv4: server.ipv4Address,
          privateIpv4: pulumi
            .all([server.networks, args.networkId])
            .apply(([networks, networkId]) => (networks ?? []).find((n) => Number(n.networkId) === Number(networkId))?.ip),
        });
      }
    }
    this.registerOutputs({ nodes: this.nodes });
  }
}
