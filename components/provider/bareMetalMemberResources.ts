/**
 * The cluster-side resources of one bare-metal pool's members (Hetzner Robot, Scaleway Elastic
 * Metal): Node removal, the drain before an update, the drain before the member's removal, the
 * Node's labels and taints, the node-local PVC removal and the bootstrap token, each in the
 * member's flavour (fleet/memberResources.ts): `plugin-all` and `plugin`, this package's provider
 * with the pool's one ClusterAccessProvider (declared when a member first needs it; `plugin` keeps
 * the BootstrapToken component), or `dynamic`, the `pulumi.dynamic` resources a member created
 * before it keeps until it leaves. Nothing but the token is declared without a kubeconfig (render
 * and simulation), as before.
 */
import * as pulumi from "@pulumi/pulumi";
import type { Taint } from "../fleet/fleetSpec";
import type { InPlaceMemberResources } from "../fleet/memberResources";
import { nodeBootstrapToken } from "../kubernetes/bootstrapToken";
import { type KubernetesNodeUpdateDrain, memberUpdateDrain } from "../kubernetes/kubernetesNodeDrain";
import { KubernetesNodeMetadata } from "../kubernetes/kubernetesNodeMetadata";
import { type KubernetesNodeRemoval, memberNodeRemoval } from "../kubernetes/kubernetesNodeRemoval";
import { NodeLocalPvcRemoval as DynamicNodeLocalPvcRemoval } from "../kubernetes/nodeLocalPvcRemoval";
import { NodeBootstrapToken, nodeBootstrapTokenArgs } from "./bootstrapTokenResource";
import { ClusterAccessProvider, type ClusterAccessProviderArgs } from "./clusterAccessProvider";
import { NodeDrain } from "./nodeDrainResource";
import { NodeLocalPvcRemoval } from "./nodeLocalPvcRemovalResource";
import { NodeMetadata } from "./nodeMetadataResource";
import { NodeRemoval } from "./nodeRemovalResource";
import { NodeUpdateDrain } from "./nodeUpdateDrainResource";

export class BareMetalMemberResources {
  private access: ClusterAccessProvider | undefined;

  /**
   * `name`: the pool component's name (its provider is `<name>-cluster-access`); `parent`: the pool;
   * `robotCredentials`: a Robot pool's webservice credentials, given to the provider (absent: none,
   * the plugin reads its environment).
   */
  constructor(
    private readonly name: string,
    private readonly kubeconfig: pulumi.Input<string> | undefined,
    private readonly parent: pulumi.Resource,
    private readonly robotCredentials?: ClusterAccessProviderArgs["robotCredentials"],
  ) {}

  /** The pool's one provider of the plugin's resources, declared when a member first needs it. */
  provider(): ClusterAccessProvider {
    this.access ??= new ClusterAccessProvider(
      `${this.name}-cluster-access`,
      {
        ...(this.kubeconfig === undefined ? {} : { kubeconfig: this.kubeconfig }),
        ...(this.robotCredentials === undefined ? {} : { robotCredentials: this.robotCredentials }),
      },
      { parent: this.parent },
    );
    return this.access;
  }

  /**
   * `name` (`<member>-<generation>-token`): the bootstrap token of one member generation, fixed at
   * creation with its Secret kept: one NodeBootstrapToken for `plugin-all`, the BootstrapToken
   * component of the members created before it. The token is a secret. `keepTtl`: a token that
   * exists keeps the lifetime it was created with when `bootstrapTokenTtlMinutes` differs (a new
   * lifetime would replace it for nothing: its machine runs).
   */
  bootstrapToken(
    name: string,
    cluster: { readonly kind: "k0s" | "kubeadm"; readonly bootstrapTokenTtlMinutes: number },
    nodeName: string,
    flavour: InPlaceMemberResources,
    keepTtl = false,
  ): { readonly resource: pulumi.Resource; readonly token: pulumi.Output<string> } {
    if (flavour !== "plugin-all") {
      const component = nodeBootstrapToken(name, cluster, nodeName, this.parent);
      return { resource: component, token: component.token };
    }
    const resource = new NodeBootstrapToken(name, nodeBootstrapTokenArgs(cluster, nodeName, { secretObject: true }), {
      parent: this.parent,
      provider: this.provider(),
      ...(keepTtl ? { ignoreChanges: ["ttlMinutes"] } : {}),
    });
    return { resource, token: pulumi.secret(resource.token) };
  }

  /** `<nodeName>-node-removal`: removing the member deletes its Node, after its server (which depends on it). */
  nodeRemoval(nodeName: string, flavour: InPlaceMemberResources): KubernetesNodeRemoval | NodeRemoval | undefined {
    if (flavour === "dynamic") return memberNodeRemoval(nodeName, this.kubeconfig, this.parent);
    if (this.kubeconfig === undefined) return undefined;
    return new NodeRemoval(`${nodeName}-node-removal`, { nodeName }, { parent: this.parent, provider: this.provider() });
  }

  /**
   * `<nodeName>-removal-drain`: removing the member drains its Node (cordon, evictions within
   * PodDisruptionBudgets, at most `timeoutSeconds`, else the run fails and the machine stays) before
   * `machine`, which it depends on, is deleted: the server, or on Robot the `-retire` command, which
   * stops the kubelet (the pods' deletions need it running) before the rescue goes. The Node removal
   * follows the machine. Named by member: a replacement or reinstall keeps it (its inputs hold no
   * output of the machine), and the update drain drains for those. The plugin's NodeDrain, as on
   * Hetzner Cloud. `plugin-all` and `plugin` members get it (for a `plugin` member, created before
   * it, only a create, with the pool's provider it already uses); `dynamic` members none: they keep
   * the dynamic resources they were created with, and leave undrained as before.
   */
  removalDrain(nodeName: string, timeoutSeconds: number, flavour: InPlaceMemberResources, machine: pulumi.Resource): NodeDrain | undefined {
    if (flavour === "dynamic" || this.kubeconfig === undefined) return undefined;
    return new NodeDrain(
      `${nodeName}-removal-drain`,
      { nodeName, timeoutSeconds },
      { parent: this.parent, dependsOn: [machine], provider: this.provider() },
    );
  }

  /** `<nodeName>-<generation>-drain`: drains the Node before the member's update to `generation`. */
  updateDrain(
    nodeName: string,
    generation: string,
    timeoutSeconds: number | undefined,
    flavour: InPlaceMemberResources,
  ): KubernetesNodeUpdateDrain | NodeUpdateDrain | undefined {
    if (flavour === "dynamic") return memberUpdateDrain(nodeName, generation, this.kubeconfig, timeoutSeconds, this.parent);
    if (this.kubeconfig === undefined) return undefined;
    return new NodeUpdateDrain(
      `${nodeName}-${generation}-drain`,
      { nodeName, generation, ...(timeoutSeconds !== undefined ? { timeoutSeconds } : {}) },
      { parent: this.parent, provider: this.provider() },
    );
  }

  /** The Node's labels and taints kept as declared; a moved `generation` uncordons it. */
  nodeMetadata(
    name: string,
    args: {
      readonly nodeName: string;
      readonly labels: Readonly<Record<string, pulumi.Input<string>>>;
      readonly taints: readonly Taint[];
      readonly generation: string;
    },
    flavour: InPlaceMemberResources,
    dependsOn: pulumi.Resource[],
  ): KubernetesNodeMetadata | NodeMetadata | undefined {
    if (this.kubeconfig === undefined) return undefined;
    return flavour === "dynamic"
      ? new KubernetesNodeMetadata(name, { ...args, kubeconfig: this.kubeconfig }, { parent: this.parent, dependsOn })
      : new NodeMetadata(name, args, { parent: this.parent, dependsOn, provider: this.provider() });
  }

  /** Removing or replacing `server` deletes the claims of its node-local PVs (depends on it, so it goes first). */
  localPvcRemoval(
    name: string,
    args: { readonly nodeName: string; readonly storageClass: string; readonly serverId: pulumi.Input<string> },
    flavour: InPlaceMemberResources,
    server: pulumi.Resource,
  ): DynamicNodeLocalPvcRemoval | NodeLocalPvcRemoval | undefined {
    if (this.kubeconfig === undefined) return undefined;
    return flavour === "dynamic"
      ? new DynamicNodeLocalPvcRemoval(name, { ...args, kubeconfig: this.kubeconfig }, { parent: this.parent, dependsOn: [server] })
      : new NodeLocalPvcRemoval(name, args, { parent: this.parent, dependsOn: [server], provider: this.provider() });
  }
}
