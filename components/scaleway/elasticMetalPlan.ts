/**
 * The pure part of an Elastic Metal pool: its members, how each is bootstrapped (cloud-init or SSH
 * self-join), the generation that names a member's bootstrap token (fresh when the server is
 * replaced), and the label carrying the private IPv4.
 */
import type { ClusterSpec, ScalewayElasticMetalPool } from "../fleet/fleetSpec";
import { elasticMetalOs } from "./elasticMetalOs";
import { offerRunsCloudInit } from "./elasticMetalOffers";
import { generationHash } from "../fleet/generationSuffix";
import { type CurrentInPlaceMember, currentInPlaceMembers } from "../fleet/inPlaceMembers";
import { canonicalHash } from "../shared/canonicalJson";
import { type WorkerCluster, joinConvergedInputs, workerUserDataInputs } from "../bootstrap/workerUserDataInputs";
import { staticNodeIds } from "../fleet/naming";
import { type NodeMember, nodeMember } from "../fleet/nodeMember";

/** The label carrying the node's private-network IPv4 (known from IPAM before the server exists). */
export const PRIVATE_IPV4_LABEL = "nodefleet.io/private-ipv4";

/**
 * Server properties whose change replaces the server. offer and zone are ForceNew in the provider.
 * An os change would be reinstalled in place by the provider, but everything nodefleet bound to the
 * install goes stale with it: the pinned host key, the cloud-init user data with its bootstrap token
 * (the provider updates user data and reinstalls in one update with no order nodefleet can rely on),
 * and the kubelet's state. Replacing makes the new OS a new machine generation: a fresh token, a
 * host key read from the new install, a join that runs once against it. deleteBeforeReplace (set by
 * the pool) because the IPAM address is held by the old server until it is gone; the cost is a new
 * order, which fails while the offer is out of stock (the member is then missing until it is back).
 */
export const ELASTIC_METAL_REPLACE_ON_CHANGES = ["offer", "os", "zone"] as const;

/**
 * IPAM address properties whose change replaces the address. The provider does not replace on a
 * source change and its update ignores it, so an address would stay on the old network.
 */
export const IPAM_IP_REPLACE_ON_CHANGES = ["sources"] as const;

export type BootstrapMethod = "cloud-init" | "ssh";

/**
 * The bootstrap, decided by the offer: `auto` takes cloud-init where the offer runs it (its
 * `cloud-init` tag, elasticMetalOffers.ts), else the SSH self-join; an explicit choice wins if it
 * fits. Both paths log in over SSH (host key, VLAN id delivery or join), so with no SSH key neither
 * fits; cloud-init on an offer without the tag would never run the join.
 */
export function bootstrapMethod(
  pool: Pick<ScalewayElasticMetalPool, "name" | "bootstrap" | "os" | "offer" | "sshKeyIds">,
  offerTags?: Readonly<Record<string, readonly string[]>>,
): BootstrapMethod {
  elasticMetalOs(pool.os);
  const cloudInit = offerRunsCloudInit(pool.offer, offerTags);
  if (pool.sshKeyIds.length === 0) {
    throw new Error(
      `pool ${pool.name}: sshKeyIds is empty, so no bootstrap fits: every path logs in over SSH (the SSH self-join${cloudInit ? ", and the VLAN id delivery cloud-init waits for" : ""}); add a Scaleway IAM SSH key id`,
    );
  }
  if (pool.bootstrap === "cloud-init" && !cloudInit) {
    throw new Error(
      `pool ${pool.name}: bootstrap is cloud-init, but offer ${pool.offer} has no cloud-init tag (Scaleway runs cloud-init only on offers tagged cloud-init), so the join would never run; use bootstrap: ssh or auto, or an offer with the tag`,
    );
  }
  if (pool.bootstrap === "cloud-init" || pool.bootstrap === "ssh") return pool.bootstrap;
  return cloudInit ? "cloud-init" : "ssh";
}

/** `fr-par-2` -> `fr-par`: private networks and IPAM are regional. */
export function scalewayRegion(zone: string): string {
  const match = /^([a-z]{2}-[a-z]{3})-\d$/.exec(zone);
  if (!match) throw new Error(`zone ${JSON.stringify(zone)} is not a Scaleway zone such as fr-par-2`);
  return match[1];
}

/** `[a-z0-9]{6}` from the inputs that replace the server: a replacement gets a fresh bootstrap token. */
export function elasticMetalGeneration(pool: Pick<ScalewayElasticMetalPool, "zone" | "offer" | "os">): string {
  return generationHash({ zone: pool.zone, offer: pool.offer, os: pool.os });
}

export function elasticMetalMembers(cluster: Pick<ClusterSpec, "id" | "providerIdScheme">, pool: ScalewayElasticMetalPool): NodeMember[] {
  const template = { pool: pool.name, serverType: pool.offer, location: pool.zone, labels: pool.labels, taints: pool.taints };
  return staticNodeIds(pool).map((nodeId) => nodeMember(cluster, template, nodeId));
}

/**
 * `172.16.0.5/22` from the IPAM address: its own prefix when IPAM gives one (the network's real
 * subnet), else the configured subnet's.
 */
export function privateAddressCidr(address: string, subnet: string): { ipv4: string; cidr: string } {
  const [ipv4, ownPrefix] = address.split("/");
  const prefix = ownPrefix ?? subnet.split("/")[1];
  if (!/^\d{1,3}(\.\d{1,3}){3}$/.test(ipv4 ?? "") || !/^\d{1,2}$/.test(prefix ?? "")) {
    throw new Error(`cannot build a private address from ${JSON.stringify(address)} in ${JSON.stringify(subnet)}`);
  }
  return { ipv4, cidr: `${ipv4}/${prefix}` };
}

/**
 * What a re-run of the (idempotent) self-join converges on a joined server: everything its script
 * renders from but the labels and taints (a Node patch), the firewall rules (the host-firewall
 * command), the token and, on kubeadm clusters, the kubelet settings (the kubelet-config re-push).
 * The `-join` command re-runs when it changes, upgrading k0s or the kubelet in place; whether the
 * kubelet binds the private address (`nodeAddress`) stands for the address itself, known only once
 * IPAM has it.
 */
export function elasticMetalJoinInputs(
  cluster: WorkerCluster & Pick<ClusterSpec, "nodeAddress">,
  member: Pick<NodeMember, "hostname" | "providerID">,
): string {
  const converged = joinConvergedInputs(
    workerUserDataInputs(cluster, { hostname: member.hostname, providerID: member.providerID, labels: {}, taints: [] }),
  );
  const { kubelet: _repushed, ...withoutKubelet } = converged;
  return canonicalHash({ ...(cluster.kind === "kubeadm" ? withoutKubelet : converged), nodeAddress: cluster.nodeAddress });
}

/** An Elastic Metal member as the previous run left it, with the server it actually runs. */
export interface CurrentElasticMetalMember extends CurrentInPlaceMember {
  /** The offer its server runs (the node output's serverType). */
  readonly offer: string;
  /** The zone its server runs in (the node output's location). */
  readonly zone: string;
}

/**
 * The previous run's node outputs of one Elastic Metal pool plus Node readiness: the next run's
 * `current`. Undefined when a node of the pool was recorded by a nodefleet without bare-metal
 * rollouts (no generation or joinInputs): that run declares the pool as before.
 */
export function currentElasticMetalMembers(
  previousNodes: ReadonlyArray<Record<string, unknown>>,
  pool: string,
  readyNodeNames: ReadonlySet<string>,
): CurrentElasticMetalMember[] | undefined {
  return currentInPlaceMembers(previousNodes, pool, readyNodeNames, {
    fields: ["serverType", "location"],
    read: (n) => ({ offer: n.serverType!, zone: n.location! }),
  });
}
