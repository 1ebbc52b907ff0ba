/**
 * `nodefleet:scaleway:ElasticMetalNodePool`: Scaleway Elastic Metal workers joining an existing
 * cluster (k0s or kubeadm). Per pool: offer/OS/option look-ups and the private network (adopted by
 * name, or created). Per member: an IPAM address on the private network, a bootstrap token, the
 * server (with the "Private Network" option and `privateNetworks`), and the bootstrap:
 *
 * - cloud-init, where the OS runs it: the self-join script as `cloudInit`. The VLAN id exists only
 *   once the server does, so it is delivered afterwards over SSH (no secret in it) and the script
 *   waits for it before it starts the kubelet;
 * - otherwise the SSH self-join: `remote.Command` pipes the script to `bash` on the server.
 *
 * Elastic Metal has no provider firewall: the join loads the cluster firewall's public rules as an
 * nftables host firewall (bootstrap/hostFirewall.ts) before the kubelet starts.
 *
 * Every SSH connection but the first pins the host key: a first command reads the server's ed25519
 * host key (trust on first use), its output is kept in state, and every later command passes it
 * as `connection.hostKey`, so the provider verifies it (ssh.FixedHostKey). On kubeadm clusters a
 * re-push command keyed on the kubelet-config hash rewrites the config and CA on existing nodes.
 * Given a kubeconfig, removing a member deletes its Node, and with `localStorageClass` removing or
 * replacing a server deletes the PVCs bound to its local PVs.
 */
import * as command from "@pulumi/command";
import * as pulumi from "@pulumi/pulumi";
import * as scaleway from "@pulumiverse/scaleway";
import { nodeBootstrapToken } from "../kubernetes/bootstrapToken";
import { elasticMetalOs } from "./elasticMetalOs";
import {
  type BootstrapMethod,
  ELASTIC_METAL_REPLACE_ON_CHANGES,
  PRIVATE_IPV4_LABEL,
  bootstrapMethod,
  elasticMetalGeneration,
  elasticMetalMembers,
  privateAddressCidr,
  scalewayRegion,
} from "./elasticMetalPlan";
import { type ClusterSpec, type FirewallSpec, type ScalewayElasticMetalPool, firewallSchema } from "../fleet/fleetSpec";
import { clusterFirewallRules } from "../fleet/firewallRules";
import { canonicalHash } from "../shared/canonicalJson";
import { assertElasticMetalCloudInitSize, renderSelfJoinCloudConfig } from "../bootstrap/kubeadmWorkerCloudConfig";
import { kubeletConfigHash, renderKubeletConfig } from "../bootstrap/kubeletConfig";
import { renderKubeletConfigRepush } from "../bootstrap/kubeletConfigRepush";
import { type NodeMember, type NodeOutput, OWNERSHIP_LABELS, nodeOutputIdentity } from "../fleet/nodeMember";
import { type KubernetesNodeRemoval, memberNodeRemoval } from "../kubernetes/kubernetesNodeRemoval";
import { NodeLocalPvcRemoval } from "../kubernetes/nodeLocalPvcRemoval";
import { type PrivateNetworkJoin, renderVlanIdDelivery, renderWorkerSelfJoinScript } from "../bootstrap/selfJoinScript";
import { workerUserDataInputs } from "../bootstrap/workerUserDataInputs";
import { READ_HOST_KEY_COMMAND, UNREAD_HOST_KEY, parseHostKeyLine, sshAuth } from "../bootstrap/sshConnection";

export interface ElasticMetalNodePoolArgs {
  /** The cluster the nodes join: id, kind, apiServer, CA, versions, kubelet settings, token TTL. */
  readonly cluster: Omit<ClusterSpec, "kubeconfig">;
  /** The parsed pool (`scalewayElasticMetalPoolSchema`): zone, offer, os, privateNetwork, members, bootstrap, ssh. */
  readonly pool: ScalewayElasticMetalPool;
  /**
   * Id of the private network to attach, e.g. one shared by several pools. Default: the network named
   * `pool.privateNetwork.name` in the zone's region, adopted when it exists and created (tagged with
   * the cluster and pool) when it does not.
   */
  readonly privateNetworkId?: pulumi.Input<string>;
  /**
   * SSH private key (OpenSSH PEM) for the self-join, the VLAN delivery and re-pushes; a secret.
   * Default: secret config `nodefleet:sshPrivateKey`, then NODEFLEET_SSH_PRIVATE_KEY, then the
   * ssh-agent at SSH_AUTH_SOCK.
   */
  readonly sshPrivateKey?: pulumi.Input<string>;
  /**
   * Kubeconfig allowed to delete Nodes, list PVs and delete PVCs (token or client-certificate user);
   * a secret. Without it (render, simulation) nothing is removed from the cluster on deletion.
   */
  readonly kubeconfig?: pulumi.Input<string>;
  /**
   * `nodefleet:firewall`: its public rules (kubelet from the control plane, WireGuard, ICMP,
   * NodePorts, extra rules) become each server's host firewall, loaded before the kubelet starts.
   * Default: the defaults (no NodePorts, no extra rules).
   */
  readonly firewall?: FirewallSpec;
}

/** What the pool reports per node: serverType is the offer name, location the Scaleway zone. */
export interface ElasticMetalNodeOutput extends NodeOutput {
  readonly bootstrap: BootstrapMethod;
  /** Always set: Elastic Metal nodes join over the private network. */
  readonly privateIpv4: pulumi.Output<string>;
  readonly vlan: pulumi.Output<number | undefined>;
  /** The pinned SSH host key (authorized_keys format). */
  readonly hostKey: pulumi.Output<string>;
  /** sha256 of the rendered kubelet config (kubeadm clusters). */
  readonly kubeletConfigHash?: string;
}

/** The UUID part of a Scaleway id (`fr-par/<uuid>` or `<uuid>`), to compare ids across id formats. */
function uuidOf(id: string): string {
  return id.split("/").pop() ?? id;
}

/**
 * What to do with the network a look-up found: adopt one this pool did not create (its subnet must
 * be the configured one), or keep declaring the one it created (tagged with the cluster and pool).
 */
export function privateNetworkDecision(
  pool: Pick<ScalewayElasticMetalPool, "name" | "privateNetwork">,
  poolTags: readonly string[],
  found: { tags?: readonly string[]; ipv4Subnets?: ReadonlyArray<{ subnet: string }> },
): "adopt" | "declare" {
  if (poolTags.every((tag) => (found.tags ?? []).includes(tag))) return "declare";
  const subnets = (found.ipv4Subnets ?? []).map((s) => s.subnet);
  if (subnets.length > 0 && !subnets.includes(pool.privateNetwork.subnet)) {
    throw new Error(
      `pool ${pool.name}: the existing private network ${pool.privateNetwork.name} has subnet ${subnets.join(", ")}, not privateNetwork.subnet ${pool.privateNetwork.subnet}`,
    );
  }
  return "adopt";
}

export class ElasticMetalNodePool extends pulumi.ComponentResource {
  readonly privateNetworkId: pulumi.Output<string>;
  readonly servers: scaleway.elasticmetal.Server[] = [];
  readonly nodeRemovals: KubernetesNodeRemoval[] = [];
  readonly nodes: ElasticMetalNodeOutput[] = [];

  constructor(name: string, args: ElasticMetalNodePoolArgs, opts?: pulumi.ComponentResourceOptions) {
    super("nodefleet:scaleway:ElasticMetalNodePool", name, {}, opts);
    const { cluster, pool } = args;
    // Everything decidable without the cloud is checked before any child is declared.
    const os = elasticMetalOs(pool.os);
    const method = bootstrapMethod(pool);
    const region = scalewayRegion(pool.zone);
    const generation = elasticMetalGeneration(pool);
    const members = elasticMetalMembers(cluster, pool);
    if (cluster.kind === "k0s" && !cluster.k0sVersion) throw new Error(`pool ${pool.name}: k0sVersion is required for k0s clusters`);
    if (cluster.kind === "kubeadm" && !cluster.kubernetesVersion) throw new Error(`pool ${pool.name}: kubernetesVersion is required for kubeadm clusters`);
    const poolTags = [`${OWNERSHIP_LABELS.cluster}=${cluster.id}`, `${OWNERSHIP_LABELS.pool}=${pool.name}`];

    const offer = scaleway.elasticmetal.getOfferOutput({ zone: pool.zone, name: pool.offer }, { parent: this });
    const osImage = scaleway.elasticmetal.getOsOutput({ zone: pool.zone, name: os.name, version: os.version }, { parent: this });
    const privateNetworkOption = scaleway.elasticmetal.getOptionOutput({ zone: pool.zone, name: "Private Network" }, { parent: this });
    this.privateNetworkId =
      args.privateNetworkId !== undefined ? pulumi.output(args.privateNetworkId) : this.adoptOrCreatePrivateNetwork(name, pool, region, poolTags);

    if (pool.sshKeyIds.length === 0 && members.length > 0) {
      // Every path needs SSH (host key read, join or VLAN delivery, re-push); declaring still works.
      void pulumi.log.warn(
        `pool ${pool.name}: sshKeyIds is empty, so the OS installer puts no SSH key on the servers and the self-join cannot log in`,
        this,
      );
    }
    const auth = sshAuth(args);
    const sshUser = pool.ssh.user ?? os.sshUser;
    // stdin carries the script, so no secret is ever on a command line (visible in the process list).
    const runScript = sshUser === "root" ? "bash -s" : "sudo -n bash -s";

    for (const member of members) {
      this.nodes.push(this.declareMember(name, args, member, {
        method,
        region,
        generation,
        poolTags,
        offerId: offer.apply((o) => o.offerId ?? uuidOf(o.id)),
        osId: osImage.apply((o) => o.osId ?? uuidOf(o.id)),
        optionId: privateNetworkOption.apply((o) => o.optionId ?? uuidOf(o.id)),
        connection: { user: sshUser, port: pool.ssh.port, dialErrorLimit: 60, perDialTimeout: 30, ...auth },
        runScript,
      }));
    }
    this.registerOutputs({ privateNetworkId: this.privateNetworkId, nodes: this.nodes });
  }

  /**
   * A network of that name that this pool did not create is adopted; otherwise the pool declares it
   * (again, on later runs: it then finds its own tagged network, which is already in state).
   */
  private adoptOrCreatePrivateNetwork(
    name: string,
    pool: ScalewayElasticMetalPool,
    region: string,
    poolTags: string[],
  ): pulumi.Output<string> {
    const lookup = scaleway.network
      .getPrivateNetwork({ name: pool.privateNetwork.name, region }, { parent: this })
      .then(
        (found) => found,
        () => undefined,
      );
    return pulumi.output(lookup).apply((found): pulumi.Output<string> => {
      if (found !== undefined && privateNetworkDecision(pool, poolTags, found) === "adopt") return pulumi.output(found.id);
      const created = new scaleway.network.PrivateNetwork(
        `${name}-pn`,
        { name: pool.privateNetwork.name, region, ipv4Subnet: { subnet: pool.privateNetwork.subnet }, tags: poolTags },
        { parent: this },
      );
      return created.id;
    });
  }

  private declareMember(
    name: string,
    args: ElasticMetalNodePoolArgs,
    member: NodeMember,
    ctx: {
      method: BootstrapMethod;
      region: string;
      generation: string;
      poolTags: string[];
      offerId: pulumi.Output<string>;
      osId: pulumi.Output<string>;
      optionId: pulumi.Output<string>;
      connection: {
        user: string;
        port: number;
        dialErrorLimit: number;
        perDialTimeout: number;
        privateKey?: pulumi.Input<string>;
        agentSocketPath?: string;
      };
      runScript: string;
    },
  ): ElasticMetalNodeOutput {
    const { cluster, pool } = args;
    const prefix = `${name}-${member.nodeId}`;
    const nodeTags = [...ctx.poolTags, `${OWNERSHIP_LABELS.node}=${member.nodeId}`];

    // The address is known before the server exists: it goes into the kubelet's --node-labels.
    const ip = new scaleway.ipam.Ip(
      `${prefix}-ip`,
      { region: ctx.region, sources: [{ privateNetworkId: this.privateNetworkId }], tags: nodeTags },
      { parent: this },
    );
    const privateAddress = pulumi
      .all([ip.address, ip.addressCidr])
      .apply(([address, addressCidr]) => privateAddressCidr(addressCidr || address, pool.privateNetwork.subnet));

    // Named by generation: a replaced server (offer/OS/zone) gets a fresh token.
    const token = nodeBootstrapToken(`${prefix}-${ctx.generation}-token`, cluster, member.hostname, this);

    const kubeletConfig =
      cluster.kind === "kubeadm" ? renderKubeletConfig({ kubelet: cluster.kubelet, providerID: member.providerID }) : undefined;
    // The node registers with its private IPv4 as a label, next to the member's own labels.
    const renderJoin = (secret: string, address: { ipv4: string; cidr: string }, vlanId: PrivateNetworkJoin["vlanId"]): string =>
      renderWorkerSelfJoinScript(
        workerUserDataInputs(cluster, {
          hostname: member.hostname,
          providerID: member.providerID,
          labels: { ...member.labels, [PRIVATE_IPV4_LABEL]: address.ipv4 },
          taints: member.taints,
          // The IPAM address, up on the VLAN before the kubelet starts, is the node's InternalIP.
          ...(cluster.nodeAddress !== "public" ? { nodeIp: { address: address.ipv4 } } : {}),
        }),
        secret,
        { vlanId, addressCidr: address.cidr },
        { rules: clusterFirewallRules(cluster, args.firewall ?? firewallSchema.parse({})), sshPort: pool.ssh.port },
      );

    const cloudInit =
      ctx.method === "cloud-init"
        ? pulumi.secret(
            pulumi.all([token.token, privateAddress]).apply(([secret, address]) => {
              const text = renderSelfJoinCloudConfig(renderJoin(secret, address, "wait"));
              assertElasticMetalCloudInitSize(member.hostname, text);
              return text;
            }),
          )
        : undefined;

    // Named by member, not generation: a replacement keeps it; removing the member deletes the Node.
    const nodeRemoval = memberNodeRemoval(member.hostname, args.kubeconfig, this);
    if (nodeRemoval) this.nodeRemovals.push(nodeRemoval);

    const server = new scaleway.elasticmetal.Server(
      prefix,
      {
        name: member.hostname,
        hostname: member.hostname,
        zone: pool.zone,
        offer: ctx.offerId,
        os: ctx.osId,
        sshKeyIds: [...pool.sshKeyIds],
        options: [{ id: ctx.optionId }],
        privateNetworks: [{ id: this.privateNetworkId, ipamIpIds: [ip.id] }],
        ...(cloudInit !== undefined ? { cloudInit } : {}),
        tags: nodeTags,
      },
      {
        parent: this,
        // The token Secret must exist before the node joins; the Node is deleted only after the server.
        dependsOn: [token, ...(nodeRemoval ? [nodeRemoval] : [])],
        replaceOnChanges: [...ELASTIC_METAL_REPLACE_ON_CHANGES],
        // The IPAM address is held by the old server until it is gone.
        deleteBeforeReplace: true,
      },
    );
    this.servers.push(server);

    const vlan = pulumi.all([server.privateNetworks, this.privateNetworkId]).apply(([attached, pnId]) => {
      const list = attached ?? [];
      const match = list.find((pn) => uuidOf(pn.id) === uuidOf(pnId)) ?? (list.length === 1 ? list[0] : undefined);
      return match?.vlan;
    });
    const knownVlan = (vlanId: number | undefined): number => {
      if (vlanId === undefined) throw new Error(`node ${member.hostname}: the server reports no VLAN for the private network yet`);
      return vlanId;
    };
    const host = server.ipv4s.apply((ips) => ips?.[0]?.address ?? "");

    // Trust on first use: the only connection without a pinned host key. Later commands verify it.
    const readHostKey = new command.remote.Command(
      `${prefix}-hostkey`,
      { connection: { host, ...ctx.connection }, create: READ_HOST_KEY_COMMAND, triggers: [server.id], logging: "stdout" },
      { parent: this, dependsOn: [server], ignoreChanges: ["connection"] },
    );
    // stdout is always a string from the provider; only a mock runtime without host-key outputs
    // leaves it undefined, and then the pin is a value ssh rejects: fail closed, never unverified.
    const hostKey = readHostKey.stdout.apply((stdout) => (stdout === undefined ? UNREAD_HOST_KEY : parseHostKeyLine(stdout)));
    const pinned = { host, hostKey, ...ctx.connection };

    let joined: pulumi.Resource;
    if (ctx.method === "ssh") {
      const staticJoinInputs = canonicalHash({
        kind: cluster.kind,
        version: cluster.kind === "kubeadm" ? cluster.kubernetesVersion : cluster.k0sVersion,
        hostname: member.hostname,
        providerID: member.providerID,
        labels: member.labels,
        taints: member.taints,
      });
      joined = new command.remote.Command(
        `${prefix}-join`,
        {
          connection: pinned,
          create: ctx.runScript,
          stdin: pulumi.secret(
            pulumi.all([token.token, privateAddress, vlan]).apply(([secret, address, vlanId]) => renderJoin(secret, address, knownVlan(vlanId))),
          ),
          // Re-run on a new server or a changed node identity; the kubelet config has its own re-push.
          triggers: [server.id, staticJoinInputs],
          logging: "stderr",
        },
        { parent: this, dependsOn: [token, readHostKey], ignoreChanges: ["stdin", "connection"] },
      );
    } else {
      joined = new command.remote.Command(
        `${prefix}-vlan`,
        {
          connection: pinned,
          create: ctx.runScript,
          stdin: vlan.apply((vlanId) => renderVlanIdDelivery(knownVlan(vlanId))),
          triggers: [server.id],
          logging: "stderr",
        },
        { parent: this, dependsOn: [readHostKey], ignoreChanges: ["connection"] },
      );
    }

    let configHash: string | undefined;
    if (kubeletConfig !== undefined) {
      configHash = kubeletConfigHash(kubeletConfig);
      new command.remote.Command(
        `${prefix}-kubelet-config`,
        {
          connection: pinned,
          create: ctx.runScript,
          stdin: renderKubeletConfigRepush({ hostname: member.hostname, caCertificate: cluster.caCertificate, kubeletConfig }),
          // A changed config replaces this command, which runs the re-push; the server stays.
          triggers: [configHash],
          logging: "stderr",
        },
        { parent: this, dependsOn: [joined], ignoreChanges: ["connection"] },
      );
    }

    if (pool.localStorageClass !== undefined && args.kubeconfig !== undefined) {
      // Depends on the server, so it is deleted (and reaps the claims) before the server goes.
      new NodeLocalPvcRemoval(
        `${prefix}-local-pvcs`,
        { nodeName: member.hostname, storageClass: pool.localStorageClass, serverId: server.id, kubeconfig: args.kubeconfig },
        { parent: this, dependsOn: [server] },
      );
    }

    return {
      ...nodeOutputIdentity(member),
      bootstrap: ctx.method,
      serverId: server.id,
      ipv4: host.apply((h) => h || undefined),
      privateIpv4: privateAddress.apply((a) => a.ipv4),
      vlan,
      hostKey,
      ...(configHash !== undefined ? { kubeletConfigHash: configHash } : {}),
    };
  }
}
