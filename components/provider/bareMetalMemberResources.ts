/**
 * The cluster-side resources of one bare-metal pool's members (Hetzner Robot, Scaleway Elastic
 * Metal): Node removal, the drain before an update, the Node's labels and taints, the node-local
 * PVC removal, each in the member's flavour (fleet/memberResources.ts): `plugin`, this package's
 * provider with the pool's one ClusterAccessProvider (declared when a member first needs it), or
 * `dynamic`, the `pulumi.dynamic` resources a member created before it keeps until it leaves.
 * Nothing is declared without a kubeconfig (render and simulation), as before.
 */
import type * as pulumi from "@pulumi/pulumi";
import type { Taint } from "../fleet/fleetSpec";
import type { MemberResources } from "../fleet/memberResources";
import { type KubernetesNodeUpdateDrain, memberUpdateDrain } from "../kubernetes/kubernetesNodeDrain";
import { KubernetesNodeMetadata } from "../kubernetes/kubernetesNodeMetadata";
import { type KubernetesNodeRemoval, memberNodeRemoval } from "../kubernetes/kubernetesNodeRemoval";
import { NodeLocalPvcRemoval as DynamicNodeLocalPvcRemoval } from "../kubernetes/nodeLocalPvcRemoval";
import { ClusterAccessProvider } from "./clusterAccessProvider";
import { NodeLocalPvcRemoval } from "./nodeLocalPvcRemovalResource";
import { NodeMetadata } from "./nodeMetadataResource";
import { NodeRemoval } from "./nodeRemovalResource";
import { NodeUpdateDrain } from "./nodeUpdateDrainResource";

export class BareMetalMemberResources {
  private access: ClusterAccessProvider | undefined;

  /** `name`: the pool component's name (its provider is `<name>-cluster-access`); `parent`: the pool. */
  constructor(
    private readonly name: string,
    private readonly kubeconfig: pulumi.Input<string> | undefined,
    private readonly parent: pulumi.Resource,
  ) {}

  private provider(): ClusterAccessProvider {
    this.access ??= new ClusterAccessProvider(
      `${this.name}-cluster-access`,
      this.kubeconfig === undefined ? {} : { kubeconfig: this.kubeconfig },
      { parent: this.parent },
    );
    return this.access;
  }

  /** `<nodeName>-node-removal`: removing the member deletes its Node, after its server (which depends on it). */
  nodeRemoval(nodeName: string, flavour: MemberResources): KubernetesNodeRemoval | NodeRemoval | undefined {
    if (flavour === "dynamic") return memberNodeRemoval(nodeName, this.kubeconfig, this.parent);
    if (this.kubeconfig === undefined) return undefined;
    return new NodeRemoval(`${nodeName}-node-removal`, { nodeName }, { parent: this.parent, provider: this.provider() });
  }

  /** `<nodeName>-<generation>-drain`: drains the Node before the member's update to `generation`. */
  updateDrain(
    nodeName: string,
    generation: string,
    timeoutSeconds: number | undefined,
    flavour: MemberResources,
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
    flavour: MemberResources,
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
    flavour: MemberResources,
    server: pulumi.Resource,
  ): DynamicNodeLocalPvcRemoval | NodeLocalPvcRemoval | undefined {
    if (this.kubeconfig === undefined) return undefined;
    return flavour === "dynamic"
      ? new DynamicNodeLocalPvcRemoval(name, { ...args, kubeconfig: this.kubeconfig }, { parent: this.parent, dependsOn: [server] })
      : new NodeLocalPvcRemoval(name, args, { parent: this.parent, dependsOn: [server], provider: this.provider() });
  }
}
