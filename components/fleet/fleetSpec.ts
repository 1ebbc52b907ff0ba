/**
 * The fleet spec: one zod schema for the whole stack config, shared by the Pulumi program, the
 * scaling API and the CLI. Parsing fails with every problem listed as `path: message`.
 */
import { z } from "zod";
import { cidrContains, ipv6HostBitsBlock, isIpv6Cidr, parseIpv4Cidr } from "../shared/cidr";
import { HCLOUD_LOCATION_ZONES, HCLOUD_MAX_POOL_SERVERS, HCLOUD_NETWORK_ZONES } from "./hcloudLocations";
import { CNI_ENCRYPTIONS, type HcloudPoolSize, hcloudCapacityProblems, publicNetworkProblems } from "./publicNetwork";
import { type PoolPublicAddresses, natGatewayProblem, privateEgressProblems } from "./privateEgress";
import { GENERATION_SUFFIX_LENGTH, MAX_SERVER_NAME_LENGTH } from "./generationSuffix";
import { reservedLabels } from "./reservedLabels";
import { hostnameFor, staticNodeIds } from "./naming";
import { repeatedTaintPairs } from "./taints";
import { DEFAULT_DRAIN_TIMEOUT_SECONDS, DEFAULT_IN_PLACE_MAX_UNAVAILABLE, DEFAULT_ROLLOUT } from "./rolloutPlan";
import { unknownConfigKeyProblems } from "./configKeys";
import { ALLOW_EMPTY_FLEET_KEY } from "./emptyFleetGuard";
import { plainIssueMessage } from "./plainIssueMessages";

/** An RFC 1123 label: cluster ids, pool and node names, hostnames (length is checked separately). */
export const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
/** An RFC 1123 subdomain: DNS labels joined by '.' (Kubernetes object names, label key prefixes; at most 253 characters). */
export const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
export const DNS_SUBDOMAIN_MAX = 253;
const dnsLabel = (what: string, max: number) =>
  z
    .string({ error: `${what} is required and must be a string` })
    .max(max, { error: `${what} must be at most ${max} characters` })
    .regex(DNS_LABEL, { error: `${what} must be lower-case letters, digits and '-', starting and ending with a letter or digit` });

const cidr = (what: string) =>
  z.string({ error: `${what} must be a string` }).refine((v) => parseIpv4Cidr(v) !== undefined, {
    error: `${what} must be an IPv4 CIDR with host bits cleared, such as 10.0.0.0/16`,
  });

// Label keys and values as Kubernetes validates them (apimachinery validation.IsQualifiedName / IsValidLabelValue).
const QUALIFIED_NAME = new RegExp(`^(${DNS_SUBDOMAIN.source.slice(1, -1)}\\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$`);
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$/;

/** The DNS-subdomain prefix of a qualified name (before '/') is at most 253 characters. */
const LABEL_KEY_PREFIX_MAX = DNS_SUBDOMAIN_MAX;
/** A label key as Kubernetes validates it (also a node selector requirement's key). */
export const labelKey = z
  .string()
  // A regex (not a refinement) so that the OpenAPI document states the rule: clients and schemathesis generate keys by it.
  .regex(QUALIFIED_NAME, {
    error: "label keys must be a qualified name: an optional DNS-subdomain prefix and '/', then at most 63 alphanumerics, '-', '_' or '.'",
  })
  .refine((k) => !k.includes("/") || k.indexOf("/") <= LABEL_KEY_PREFIX_MAX, {
    error: `label key prefixes (the DNS subdomain before '/') must be at most ${LABEL_KEY_PREFIX_MAX} characters`,
  });
const labelValue = z.string().regex(LABEL_VALUE, {
  error: "label values must be at most 63 alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric",
});
export const labelsSchema = z.record(labelKey, labelValue);

export const TAINT_EFFECTS = ["NoSchedule", "PreferNoSchedule", "NoExecute"] as const;
export const taintSchema = z.strictObject({
  key: labelKey,
  value: labelValue.optional(),
  effect: z.enum(TAINT_EFFECTS, { error: `taint effect must be one of ${TAINT_EFFECTS.join(", ")}` }),
});
export type Taint = z.infer<typeof taintSchema>;
/** A list of taints in which no (key, effect) pair repeats: a Node repeating one fails validation. */
export const taintListSchema = z.array(taintSchema).superRefine((taints, ctx) => {
  for (const index of repeatedTaintPairs(taints)) {
    const { key, effect } = taints[index]!;
    ctx.addIssue({
      code: "custom",
      path: [index],
      message: `taint ${key}:${effect} repeats the (key, effect) of an earlier taint; a Node may carry each pair once`,
    });
  }
});

const K0S_VERSION = /^v\d+\.\d+\.\d+\+k0s\.\d+$/;
const KUBERNETES_VERSION = /^v1\.\d+\.\d+$/;

export const kubeletSchema = z.strictObject({
  /** Pods per node (kubelet maxPods). */
  maxPods: z.number().int().min(10).max(500).default(110),
  /** CPU reserved for system and Kubernetes daemons, in millicores (systemReserved + kubeReserved). */
  reservedCpuMillis: z.number().int().min(0).default(100),
  /** Memory reserved for system and Kubernetes daemons, in MiB. */
  reservedMemoryMiB: z.number().int().min(0).default(512),
  /** Hard eviction threshold for memory.available, in MiB. */
  evictionHardMemoryMiB: z.number().int().min(0).default(100),
  /** Ephemeral storage reserved, in GiB. */
  reservedEphemeralStorageGiB: z.number().int().min(0).default(1),
  /** kubeadm clusters: cluster DNS service addresses for the KubeletConfiguration (default 10.96.0.10). */
  clusterDNS: z
    .array(z.string().regex(/^\d{1,3}(\.\d{1,3}){3}$/, { error: "clusterDNS entries must be IPv4 addresses" }))
    .min(1)
    .optional(),
  /** kubeadm clusters: the cluster domain for the KubeletConfiguration (default cluster.local). */
  clusterDomain: z
    .string()
    .regex(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/, { error: "clusterDomain must be a DNS name such as cluster.local" })
    .optional(),
});
export type KubeletSettings = z.infer<typeof kubeletSchema>;

export const clusterSchema = z
  .strictObject({
    /** Used in names, labels and providerIDs. */
    id: dnsLabel("id", 20),
    kind: z.enum(["k0s", "kubeadm"], { error: "kind must be k0s or kubeadm" }),
    apiServer: z
      .string()
      .regex(/^https:\/\/[^\s/]+(:\d+)?\/?$/, { error: "apiServer must be an https:// URL such as https://203.0.113.10:6443" }),
    caCertificate: z.string().regex(/-----BEGIN CERTIFICATE-----[\s\S]+-----END CERTIFICATE-----/, {
      error: "caCertificate must be a PEM certificate (-----BEGIN CERTIFICATE----- ... -----END CERTIFICATE-----)",
    }),
    /** Kubeconfig with rights to create bootstrap-token Secrets; a secret. Optional for render and simulation. */
    kubeconfig: z.string().min(1).optional(),
    /**
     * Instead of `kubeconfig`: read the kubeconfig from the file the KUBECONFIG environment variable
     * names when the program runs (a local cluster whose credentials belong to the machine, not to
     * the stack file: `nodefleet local up` prints that environment).
     */
    kubeconfigFromEnvironment: z.boolean({ error: "kubeconfigFromEnvironment must be true or false" }).optional(),
    providerIdScheme: z
      .string()
      .regex(/^[a-z][a-z0-9+.-]*$/, { error: "providerIdScheme must be a URI scheme (lower-case letters, digits, '+', '.', '-')" })
      .default("nodefleet"),
    /**
     * The providerIDs of Hetzner Cloud nodes. `nodefleet` (default): `<providerIdScheme>:///<id>/<node id>`,
     * like every other pool, known before the server exists. `hcloud`: `hcloud://<server id>`, the
     * hcloud cloud controller manager's convention (docs/hcloud-ccm.md), which the node reads at boot
     * from Hetzner's metadata service. Changing it changes the nodes' user data, so it rolls every
     * Hetzner Cloud server through its pool's rollout settings; Robot and Elastic Metal nodes keep theirs.
     */
    hcloudProviderIds: z.enum(["nodefleet", "hcloud"], { error: "hcloudProviderIds must be nodefleet or hcloud" }).optional(),
    k0sVersion: z.string().regex(K0S_VERSION, { error: "k0sVersion must look like v1.33.4+k0s.0" }).optional(),
    /**
     * Pinned sha256 of the k0s binary `k0s-<k0sVersion>-<arch>` per architecture, checked on every
     * node before the binary is installed; required for k0s clusters unless `k0sChecksums: release`.
     * To update with k0sVersion: take the lines for the new version's `k0s-<version>-amd64` (and
     * `-arm64`) from the release's `sha256sums.txt`, verified the way you trust (e.g. the release's
     * cosign signature), and set them here. An architecture without a pin is checked against the
     * release's sha256sums.txt.
     */
    k0sSha256: z
      .partialRecord(z.enum(["amd64", "arm64"]), z.string().regex(/^[a-f0-9]{64}$/, { error: "k0sSha256 values must be 64 hex digits" }))
      .optional(),
    /**
     * `pinned` (default): k0sSha256 is required. `release`: no pin needed; nodes check the binary
     * against the release's own sha256sums.txt, downloaded from the same place as the binary (this
     * guards against a damaged download, not against a tampered release).
     */
    k0sChecksums: z.enum(["pinned", "release"], { error: "k0sChecksums must be pinned or release" }).default("pinned"),
    kubernetesVersion: z.string().regex(KUBERNETES_VERSION, { error: "kubernetesVersion must look like v1.33.4" }).optional(),
    controlPlaneAddresses: z
      .array(cidr("controlPlaneAddresses entries"))
      .min(1, { error: "controlPlaneAddresses needs at least one CIDR" }),
    /** Bootstrap token lifetime in minutes (default 60). */
    bootstrapTokenTtlMinutes: z
      .number()
      .int()
      .min(10)
      .max(24 * 60)
      .default(60),
    /**
     * Minutes of lifetime a bootstrap token must have left when a new machine gets it: the install
     * and join time, longer for bare metal. A token that would have less is replaced before the
     * machine is created. Below bootstrapTokenTtlMinutes. Default 20, or half the TTL when that is less
     * (kubernetes/bootstrapToken.ts `bootstrapTokenJoinMargin`).
     */
    bootstrapTokenJoinMarginMinutes: z.number().int().min(1).optional(),
    kubelet: kubeletSchema.default(() => kubeletSchema.parse({})),
    /**
     * The address a node registers as its InternalIP: `private` (default) passes the kubelet the
     * node's private-network address (Hetzner Cloud network, Elastic Metal IPAM; Robot nodes have no
     * private network and keep their public one), so node-to-node and CNI traffic stays private and
     * the control plane must reach those addresses for logs/exec; `public` leaves the kubelet's
     * default, the address of the default route.
     */
    nodeAddress: z.enum(["private", "public"], { error: "nodeAddress must be private or public" }).default("private"),
    /**
     * How the cluster's CNI encrypts pod traffic between nodes, as you configured it in the cluster
     * (nodefleet installs no CNI): `cilium-wireguard` or `flannel-wireguard`. Required by pools with
     * `network: public`, whose node-to-node traffic crosses the internet; the firewall opens that
     * WireGuard port to every address (WireGuard answers only its peers' keys). Default: unset.
     */
    cniEncryption: z.enum(CNI_ENCRYPTIONS, { error: `cniEncryption must be one of ${CNI_ENCRYPTIONS.join(", ")}` }).optional(),
  })
  .superRefine((cluster, ctx) => {
    if (cluster.kubeconfig !== undefined && cluster.kubeconfigFromEnvironment === true) {
      ctx.addIssue({
        code: "custom",
        path: ["kubeconfigFromEnvironment"],
        message: "kubeconfigFromEnvironment and kubeconfig exclude each other: the kubeconfig comes from one place",
      });
    }
    if (cluster.kind === "k0s" && !cluster.k0sVersion) {
      ctx.addIssue({ code: "custom", path: ["k0sVersion"], message: "k0sVersion is required when kind is k0s" });
    }
    if (cluster.kind === "k0s" && cluster.k0sChecksums === "pinned" && Object.keys(cluster.k0sSha256 ?? {}).length === 0) {
      ctx.addIssue({
        code: "custom",
        path: ["k0sSha256"],
        message: `k0sSha256 is required when kind is k0s: the sha256 of k0s-${cluster.k0sVersion ?? "<k0sVersion>"}-amd64 (and -arm64 if used) from that release's sha256sums.txt, so nodes verify the binary against a value you pinned; or set k0sChecksums: release to check against the release's own file`,
      });
    }
    if (
      cluster.bootstrapTokenJoinMarginMinutes !== undefined &&
      cluster.bootstrapTokenJoinMarginMinutes >= cluster.bootstrapTokenTtlMinutes
    ) {
      ctx.addIssue({
        code: "custom",
        path: ["bootstrapTokenJoinMarginMinutes"],
        message: `bootstrapTokenJoinMarginMinutes must be below bootstrapTokenTtlMinutes (${cluster.bootstrapTokenTtlMinutes})`,
      });
    }
    if (cluster.kind === "kubeadm" && !cluster.kubernetesVersion) {
      ctx.addIssue({ code: "custom", path: ["kubernetesVersion"], message: "kubernetesVersion is required when kind is kubeadm" });
    }
  });
export type ClusterSpec = z.infer<typeof clusterSchema>;

export const networkSchema = z
  .strictObject({
    /** Hetzner network name; defaults to `<clusterId>-network`. */
    name: dnsLabel("name", 63).optional(),
    ipRange: cidr("ipRange"),
    subnet: cidr("subnet"),
    zone: z.enum(HCLOUD_NETWORK_ZONES, { error: `zone must be one of ${HCLOUD_NETWORK_ZONES.join(", ")}` }),
    /**
     * The private IP of a NAT server of yours on this network (it masquerades what it forwards to
     * the internet). nodefleet adds the network route 0.0.0.0/0 via it, and the nodes of pools with
     * `publicIpv4: false` route their default via the network's gateway, so they reach the internet
     * through it (fleet/privateEgress.ts, docs/networking.md). Required by such pools. Default: unset.
     */
    natGateway: z.string({ error: "natGateway must be a string such as 10.0.1.2" }).optional(),
  })
  .superRefine((network, ctx) => {
    const range = parseIpv4Cidr(network.ipRange);
    const subnet = parseIpv4Cidr(network.subnet);
    if (range && subnet && !cidrContains(range, subnet)) {
      ctx.addIssue({ code: "custom", path: ["subnet"], message: `subnet ${network.subnet} must lie inside ipRange ${network.ipRange}` });
    }
    const gatewayProblem = network.natGateway === undefined ? undefined : natGatewayProblem(network.natGateway, network.ipRange);
    if (gatewayProblem) ctx.addIssue({ code: "custom", path: ["natGateway"], message: gatewayProblem });
  });
export type NetworkSpec = z.infer<typeof networkSchema>;

/** Hetzner firewall sources are IPv4 or IPv6 networks, each written from the start of its block. */
const firewallSource = (what: string) =>
  z
    .string({ error: `${what} must be a string` })
    .refine((v) => parseIpv4Cidr(v) !== undefined || isIpv6Cidr(v), {
      error: `${what} must be an IPv4 CIDR with host bits cleared (203.0.113.0/24) or an IPv6 CIDR (2001:db8::/32)`,
    })
    .superRefine((v, ctx) => {
      const block = ipv6HostBitsBlock(v);
      if (block)
        ctx.addIssue({
          code: "custom",
          message: `${what} must be an IPv6 CIDR with host bits cleared: ${v} has bits set past /${v.split("/")[1]} (Hetzner's provider refuses it); write ${block}, or the address as /128`,
        });
    });

/** `any`, a port 1-65535, or an ascending range `30000-32767`, as Hetzner takes it. */
function isFirewallPort(text: string): boolean {
  if (text === "any") return true;
  const match = /^(\d{1,5})(?:-(\d{1,5}))?$/.exec(text);
  if (!match) return false;
  const from = Number(match[1]);
  const to = match[2] === undefined ? from : Number(match[2]);
  return from >= 1 && to <= 65535 && from <= to;
}

const PORT_PROTOCOLS: readonly string[] = ["tcp", "udp"];

const firewallRuleSchema = z
  .strictObject({
    /** Shown in the Hetzner console; default `extra rule <n> from nodefleet:firewall`. */
    description: z.string().max(255).optional(),
    protocol: z.enum(["tcp", "udp", "icmp", "esp", "gre"], { error: "protocol must be tcp, udp, icmp, esp or gre" }),
    /** A port, a range "30000-32767" or "any"; required for tcp and udp, refused for the others (Hetzner's rule). */
    port: z
      .string({ error: 'port must be a string such as "443"' })
      .refine(isFirewallPort, { error: "port must be a number from 1 to 65535, an ascending range like 30000-32767, or any" })
      .optional(),
    /** Inbound sources, IPv4 or IPv6 CIDRs; at least one. */
    sourceIps: z.array(firewallSource("sourceIps entries")).min(1, { error: "sourceIps needs at least one CIDR" }),
  })
  .superRefine((rule, ctx) => {
    const takesPort = PORT_PROTOCOLS.includes(rule.protocol);
    if (takesPort && rule.port === undefined) {
      ctx.addIssue({
        code: "custom",
        path: ["port"],
        message: `port is required for protocol ${rule.protocol} (a number, a range like 30000-32767, or any)`,
      });
    } else if (!takesPort && rule.port !== undefined) {
      ctx.addIssue({ code: "custom", path: ["port"], message: `port is only allowed for tcp and udp, not for ${rule.protocol}` });
    }
  });

export const firewallSchema = z.strictObject({
  /** Sources allowed to reach NodePorts 30000-32767/tcp (IPv4 or IPv6 CIDRs); none by default. */
  nodePortSources: z.array(firewallSource("nodePortSources entries")).default([]),
  /** Extra inbound rules. */
  extraRules: z.array(firewallRuleSchema).default([]),
});
export type FirewallSpec = z.infer<typeof firewallSchema>;

/** The same rule as a create request's labels (reservedLabels.ts). */
const poolLabels = labelsSchema.superRefine((labels, ctx) => {
  for (const { key, message } of reservedLabels(labels)) ctx.addIssue({ code: "custom", path: [key], message });
});

const poolBase = {
  name: dnsLabel("name", 30),
  labels: poolLabels.default({}),
  taints: taintListSchema.default([]),
};

// Per pool; the private network's 100 across pools is checked in crossFieldProblems (publicNetwork.ts).
const replicas = z
  .number()
  .int()
  .min(0, { error: "replicas must be 0 or more" })
  .max(HCLOUD_MAX_POOL_SERVERS, { error: `replicas must be at most ${HCLOUD_MAX_POOL_SERVERS}` });
const nodeNames = z
  .array(dnsLabel("nodes entries", 20))
  .refine((names) => new Set(names).size === names.length, { error: "nodes entries must be unique" });

const serverTypes = z
  .array(z.string().regex(/^[a-z0-9-]+$/, { error: "server types are names like cpx31" }))
  .min(1, { error: "serverTypes needs at least one server type" })
  .refine((types) => new Set(types).size === types.length, { error: "serverTypes entries must be unique" });

const hcloudLocation = (field: string) =>
  z.string().refine((l) => l in HCLOUD_LOCATION_ZONES, {
    error: `${field} must be a Hetzner Cloud location (${Object.keys(HCLOUD_LOCATION_ZONES).join(", ")})`,
  });

/**
 * `location` or `locations`, exactly one; the parsed pool always has `location` (the only one, or
 * the first of `locations`), so code that reads one location is unchanged, and `locations` only when
 * it was given, so a pool written with `location` parses exactly as before.
 */
function withOneLocationField<T extends { location?: string; locations?: string[] }>(
  pool: T,
  ctx: z.RefinementCtx,
): T & { location: string } {
  if (pool.location !== undefined && pool.locations !== undefined) {
    ctx.addIssue({ code: "custom", path: ["locations"], message: "set either location or locations, not both" });
    return z.NEVER;
  }
  const location = pool.location ?? pool.locations?.[0];
  if (location === undefined) {
    ctx.addIssue({ code: "custom", path: ["location"], message: "location is required (or locations, a list in one network zone)" });
    return z.NEVER;
  }
  return { ...pool, location };
}

/** Hetzner's Ubuntu LTS, the image of a pool that names none. */
const DEFAULT_HCLOUD_IMAGE = "ubuntu-24.04";

/**
 * `image` or `imageSelector`, at most one; the parsed pool always has `image` (the default name when
 * neither is given), so code that reads one image is unchanged, and `imageSelector` only when given,
 * so a pool without it parses exactly as before. With a selector, members' images come from the
 * selector (fleet/poolImages.ts) and `image` is not used.
 */
function withOneImageField<T extends { image?: string; imageSelector?: string }>(pool: T, ctx: z.RefinementCtx): T & { image: string } {
  if (pool.image !== undefined && pool.imageSelector !== undefined) {
    ctx.addIssue({ code: "custom", path: ["imageSelector"], message: "set either image or imageSelector, not both" });
    return z.NEVER;
  }
  return { ...pool, image: pool.image ?? DEFAULT_HCLOUD_IMAGE };
}

const hcloudCommon = {
  ...poolBase,
  provider: z.literal("hcloud"),
  /** The pool's one location; or give `locations` instead (exactly one of the two). */
  location: hcloudLocation("location").optional(),
  /**
   * Several locations of one network zone, instead of `location`: a static pool's members are spread
   * across them (fleet/locationSpread.ts); the scaling API offers each server type once per location.
   */
  locations: z
    .array(hcloudLocation("locations entries"))
    .min(1, { error: "locations needs at least one location" })
    .refine((list) => new Set(list).size === list.length, { error: "locations entries must be unique" })
    .optional(),
  serverTypes,
  /**
   * A Hetzner image name (`ubuntu-24.04`, resolved by Hetzner for each server type's architecture)
   * or an image id (digits; one architecture, checked against every listed server type at preview).
   * Default `ubuntu-24.04`. Give `imageSelector` instead to boot the newest matching snapshot.
   */
  image: z.string().min(1).optional(),
  /**
   * A Hetzner label selector (`role=k8s-node,os=ubuntu`) for snapshots, instead of `image`: each
   * member boots the newest image that matches it among those of its server type's architecture
   * (fleet/poolImages.ts), looked up at every preview and up; none matching for a listed type's
   * architecture is refused at preview. A new matching snapshot is a new generation: it rolls the
   * pool through `rollout`. An autoscaled pool's scaling API resolves it at each admission (the
   * member keeps the image it was admitted with) and reports a newer snapshot as the drift
   * (`ImageDrift`) of the members of its architecture (automation/catalog/poolImageSource.ts).
   */
  imageSelector: z.string().trim().min(1, { error: "imageSelector must be a Hetzner label selector such as role=k8s-node" }).optional(),
  /** Names or ids of Hetzner SSH keys to install; changing them replaces servers. */
  sshKeys: z.array(z.string().min(1)).default([]),
  /** Hetzner delete/rebuild protection on every server of the pool. */
  deleteProtection: z.boolean().default(false),
  /**
   * `private` (default): every server joins the cluster's Hetzner network, which holds 100 servers
   * across all such pools. `public`: servers join no network, so the pool is not held to that 100;
   * nodes talk over their public addresses, which needs `cluster.nodeAddress: public` and
   * `cluster.cniEncryption` (fleet/publicNetwork.ts, docs/networking.md). Changing it rolls the
   * pool to new servers (it is part of the generation); an autoscaled member keeps the one it was
   * admitted with.
   */
  network: z.enum(["private", "public"], { error: "network must be private or public" }).default("private"),
  /**
   * `spread` (default): servers go to spread placement groups of 10 (different hosts); a Hetzner
   * project holds 50 such groups, so at most 500 spread servers. `none`: no placement group, for
   * pools past that. Changing it rolls the pool to new servers; an autoscaled member keeps its own.
   */
  placement: z.enum(["spread", "none"], { error: "placement must be spread or none" }).default("spread"),
  /**
   * Whether each server gets a public IPv4 (a billed primary IP). `false`: the node reaches the
   * internet through `nodefleet:network.natGateway` on the private network (fleet/privateEgress.ts,
   * docs/networking.md); autoscaled members keep what they were admitted with. Part of the
   * generation: changing it rolls a static pool.
   */
  publicIpv4: z.boolean({ error: "publicIpv4 must be true or false" }).default(true),
  /** Whether each server gets a public IPv6 /64. Part of the generation: changing it rolls the pool. */
  publicIpv6: z.boolean({ error: "publicIpv6 must be true or false" }).default(true),
};

const rolloutCount = (field: string) =>
  z
    .number({ error: `${field} must be a whole number of 0 or more` })
    .int({ error: `${field} must be a whole number of 0 or more` })
    .min(0, { error: `${field} must be a whole number of 0 or more` });

/** Seconds a departing server's drain may take (evictions a PodDisruptionBudget refuses are retried) before the run fails and keeps the server. Default 600. */
const drainTimeoutSeconds = z
  .number()
  .int({ error: "drainTimeoutSeconds must be a whole number of seconds" })
  .min(1, { error: "drainTimeoutSeconds must be at least 1" })
  .max(3600, { error: "drainTimeoutSeconds must be at most 3600" })
  .default(DEFAULT_DRAIN_TIMEOUT_SECONDS);

/**
 * How a fleet-wide change rolls through a static Hetzner Cloud pool (fleet/rolloutPlan.ts): at most
 * `maxSurge` servers above the member count (default 1) and at most `maxUnavailable` members without
 * a Ready server (default 0), like a MachineDeployment; each `pulumi up` moves the rollout one step.
 * A departing server is drained for at most `drainTimeoutSeconds` (default 600).
 */
const rolloutSchema = z
  .strictObject({
    maxSurge: rolloutCount("maxSurge").default(DEFAULT_ROLLOUT.maxSurge),
    maxUnavailable: rolloutCount("maxUnavailable").default(DEFAULT_ROLLOUT.maxUnavailable),
    drainTimeoutSeconds,
  })
  .refine((r) => r.maxSurge + r.maxUnavailable > 0, {
    error: "maxSurge and maxUnavailable cannot both be 0 (no member could ever be replaced)",
  });

/**
 * How a change that reinstalls, replaces or re-joins members rolls through a bare-metal pool
 * (fleet/rolloutPlan.ts `planInPlaceRollout`): nothing surges, and at most `maxUnavailable` members
 * (default 1) are without a Ready Node, each drained for at most `drainTimeoutSeconds` (default 600)
 * before its update; each `pulumi up` moves the rollout one step. `maxSurge` may only be 0, for `why`.
 */
function inPlaceRolloutSchema(why: string) {
  return z
    .strictObject({
      maxSurge: z.literal(0, { error: `maxSurge must be 0 (or left out): ${why}` }).optional(),
      maxUnavailable: rolloutCount("maxUnavailable")
        .min(1, { error: "maxUnavailable must be at least 1: members are updated in place, each down while it is" })
        .default(DEFAULT_IN_PLACE_MAX_UNAVAILABLE),
      drainTimeoutSeconds,
    })
    .default(() => ({ maxUnavailable: DEFAULT_IN_PLACE_MAX_UNAVAILABLE, drainTimeoutSeconds: DEFAULT_DRAIN_TIMEOUT_SECONDS }));
}

export const hcloudStaticPoolSchema = z
  .strictObject({
    ...hcloudCommon,
    mode: z.literal("static"),
    replicas: replicas.optional(),
    nodes: nodeNames.optional(),
    rollout: rolloutSchema.default(() => ({ ...DEFAULT_ROLLOUT, drainTimeoutSeconds: DEFAULT_DRAIN_TIMEOUT_SECONDS })),
  })
  .transform(withOneLocationField)
  .transform(withOneImageField);

const poolLimitsSchema = z.strictObject({
  maxNodes: z
    .number()
    .int()
    .min(1, { error: "maxNodes must be at least 1" })
    .max(HCLOUD_MAX_POOL_SERVERS, {
      error: `maxNodes must be at most ${HCLOUD_MAX_POOL_SERVERS}`,
    }),
  cpu: z.number().int().positive().optional(),
  memoryGiB: z.number().positive().optional(),
});

export const hcloudAutoscaledPoolSchema = z
  .strictObject({
    ...hcloudCommon,
    mode: z.literal("autoscaled"),
    limits: poolLimitsSchema,
  })
  .transform(withOneLocationField)
  .transform(withOneImageField);

const SCALEWAY_BOOTSTRAP_METHODS = ["auto", "cloud-init", "ssh"] as const;
export const scalewayElasticMetalPoolSchema = z.strictObject({
  ...poolBase,
  provider: z.literal("scaleway-elastic-metal"),
  mode: z.literal("static", {
    error:
      "mode must be static: autoscaled pools are only supported for provider hcloud (bare-metal installs take longer than Karpenter's 15-minute registration timeout)",
  }),
  zone: z.string().regex(/^[a-z]{2}-[a-z]{3}-\d$/, { error: "zone must be a Scaleway zone such as fr-par-2" }),
  offer: z.string().min(1, { error: "offer is required (an Elastic Metal offer name such as EM-B220E-NVME)" }),
  os: z.string().min(1, { error: "os is required (an Elastic Metal OS name such as ubuntu_jammy)" }),
  privateNetwork: z.strictObject({
    name: dnsLabel("privateNetwork.name", 63),
    subnet: cidr("privateNetwork.subnet"),
    /**
     * Id of an existing private network to attach (e.g. shared by several pools), whose subnet is
     * `subnet`. Without it the pool attaches to the network `name` when another fleet created one
     * (read-only; its subnet must be `subnet`), else creates it.
     */
    id: z
      .string()
      .regex(/^([a-z]{2}-[a-z]{3}\/)?[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/, {
        error: "privateNetwork.id must be a Scaleway private network id such as fr-par/11111111-2222-4333-a444-555555555555",
      })
      .optional(),
  }),
  replicas: replicas.optional(),
  nodes: nodeNames.optional(),
  /** Scaleway IAM SSH key ids to install. */
  sshKeyIds: z.array(z.string().min(1)).default([]),
  /** auto: cloud-init where the offer runs it (its cloud-init tag), else the SSH self-join. */
  bootstrap: z.enum(SCALEWAY_BOOTSTRAP_METHODS).default("auto"),
  /** Node-local storage class whose PVCs are removed with the node. */
  localStorageClass: z.string().min(1).optional(),
  /** How offer, OS, zone and version changes roll: one member at a time by default (see inPlaceRolloutSchema). */
  rollout: inPlaceRolloutSchema(
    "an Elastic Metal member keeps its private address and Node name, so its new server is ordered only once the old one is released",
  ),
  /**
   * SSH for the self-join, the VLAN id delivery and kubelet-config re-pushes. The private key comes
   * from secret config `nodefleet:sshPrivateKey` or NODEFLEET_SSH_PRIVATE_KEY (else ssh-agent).
   * `user` defaults to the OS's install user (ubuntu on Ubuntu).
   */
  ssh: z
    .strictObject({
      user: z
        .string()
        .regex(/^[a-z_][a-z0-9_-]{0,31}$/, { error: "ssh.user must be a Unix user name" })
        .optional(),
      port: z.number().int().min(1).max(65535).default(22),
    })
    .default(() => ({ port: 22 })),
});

export const hetznerRobotPoolSchema = z
  .strictObject({
    ...poolBase,
    provider: z.literal("hetzner-robot"),
    mode: z.literal("static", {
      error:
        "mode must be static: autoscaled pools are only supported for provider hcloud (bare-metal installs take longer than Karpenter's 15-minute registration timeout)",
    }),
    servers: z
      .array(z.strictObject({ serverNumber: z.number().int().positive(), name: dnsLabel("servers[].name", 20) }))
      .min(1)
      .refine((servers) => new Set(servers.map((s) => s.serverNumber)).size === servers.length, {
        error: "servers[].serverNumber entries must be unique",
      })
      .refine((servers) => new Set(servers.map((s) => s.name)).size === servers.length, { error: "servers[].name entries must be unique" }),
    /**
     * MD5 fingerprints (`15:28:b0:...`) of SSH keys deposited in Robot: the rescue system and the
     * installed system accept them. The matching private key comes from secret config
     * `nodefleet:sshPrivateKey` or NODEFLEET_SSH_PRIVATE_KEY (else ssh-agent). Default none, when
     * `sshPublicKeys` names at least one key.
     */
    sshKeyFingerprints: z
      .array(
        z.string().regex(/^[0-9a-f]{2}(:[0-9a-f]{2}){15}$/, {
          error: "sshKeyFingerprints entries must be MD5 fingerprints such as 15:28:b0:03:95:f0:77:b3:10:56:15:6b:77:22:a5:bb",
        }),
      )
      .default([]),
    /**
     * Public keys (OpenSSH lines, `ssh-ed25519 AAAA... comment`) the rescue and installed systems
     * accept besides `sshKeyFingerprints`: uploaded to the Robot account (`POST /key`) when it has none
     * by the key's fingerprint. Default none.
     */
    sshPublicKeys: z
      .array(
        z.string().regex(/^(ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp(256|384|521)) [A-Za-z0-9+/]+=*( [^\n]*)?$/, {
          error:
            "sshPublicKeys entries must be OpenSSH public key lines such as `ssh-ed25519 AAAAC3Nza... me@laptop` (ed25519, rsa or ecdsa)",
        }),
      )
      .default([]),
    /** The Ubuntu image installimage installs. */
    image: z.enum(["ubuntu-24.04", "ubuntu-22.04"]).default("ubuntu-24.04"),
    /** The nodes' topology.kubernetes.io/zone label, e.g. the data centre (fsn1). */
    location: z
      .string()
      .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, { error: "location must be a lowercase label such as fsn1" })
      .default("hetzner-robot"),
    /** The nodes' node.kubernetes.io/instance-type label, e.g. the Robot product (AX41-NVMe). */
    serverType: z
      .string()
      .regex(/^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/, { error: "serverType must be a label value such as AX41-NVMe" })
      .max(63)
      .default("dedicated"),
    /** How reinstalls and version re-joins roll: one server at a time by default (see inPlaceRolloutSchema). */
    rollout: inPlaceRolloutSchema("Robot servers are fixed machines, so nothing can be added beside them"),
  })
  .refine((pool) => pool.sshKeyFingerprints.length + pool.sshPublicKeys.length > 0, {
    path: ["sshKeyFingerprints"],
    error: "sshKeyFingerprints needs at least one Robot SSH key fingerprint, unless sshPublicKeys names a key to upload",
  });

const POOL_PROVIDERS = ["hcloud", "scaleway-elastic-metal", "hetzner-robot"] as const;

function selectPoolSchema(raw: unknown) {
  const pool = (raw ?? {}) as { provider?: unknown; mode?: unknown };
  switch (pool.provider) {
    case "hcloud":
      return pool.mode === "autoscaled" ? hcloudAutoscaledPoolSchema : hcloudStaticPoolSchema;
    case "scaleway-elastic-metal":
      return scalewayElasticMetalPoolSchema;
    case "hetzner-robot":
      return hetznerRobotPoolSchema;
    default:
      return undefined;
  }
}

/** What a pool of each kind is called in messages ("required for an autoscaled pool"). */
function poolKindText(raw: unknown): string {
  const pool = (raw ?? {}) as { provider?: unknown; mode?: unknown };
  if (pool.provider === "hcloud") return pool.mode === "autoscaled" ? "an autoscaled pool" : "a static hcloud pool";
  return `a ${String(pool.provider)} pool`;
}

export type HcloudStaticPool = z.infer<typeof hcloudStaticPoolSchema>;
export type HcloudAutoscaledPool = z.infer<typeof hcloudAutoscaledPoolSchema>;
export type HcloudPool = HcloudStaticPool | HcloudAutoscaledPool;
export type ScalewayElasticMetalPool = z.infer<typeof scalewayElasticMetalPoolSchema>;
export type HetznerRobotPool = z.infer<typeof hetznerRobotPoolSchema>;
export type PoolSpec = HcloudPool | ScalewayElasticMetalPool | HetznerRobotPool;

/**
 * A pool is dispatched on `provider` (then `mode`) so that its errors name its own fields rather
 * than listing every alternative of a union.
 */
const anyPoolSchema = z.custom<PoolSpec>().transform((raw, ctx) => {
  const schema = selectPoolSchema(raw);
  if (!schema) {
    const provider = (raw as { provider?: unknown } | undefined)?.provider;
    ctx.addIssue({
      code: "custom",
      path: ["provider"],
      message:
        provider === undefined
          ? `provider is required (one of ${POOL_PROVIDERS.join(", ")})`
          : `provider ${JSON.stringify(provider)} is not known; use one of ${POOL_PROVIDERS.join(", ")}`,
    });
    return z.NEVER;
  }
  const mode = (raw as { mode?: unknown }).mode;
  if ((raw as { provider?: unknown }).provider === "hcloud" && mode !== "static" && mode !== "autoscaled") {
    // Said here: the static schema chosen for it would only name "static" and refuse the autoscaled fields.
    ctx.addIssue({
      code: "custom",
      path: ["mode"],
      message:
        mode === undefined
          ? "mode is required for an hcloud pool: static or autoscaled"
          : `mode must be static or autoscaled, not ${JSON.stringify(mode)}`,
    });
    return z.NEVER;
  }
  const kind = poolKindText(raw);
  const result = schema.safeParse(raw, { error: (issue) => plainIssueMessage(issue, kind) });
  if (!result.success) {
    for (const issue of result.error.issues) ctx.addIssue({ ...issue, code: "custom", path: issue.path, message: issue.message });
    return z.NEVER;
  }
  return result.data as PoolSpec;
});

/**
 * `nodefleet:allowEmptyFleet`: a config that declares no pools may delete the members the stack
 * holds (emptyFleetGuard.ts). `true`, or the string "true" that `pulumi config set` writes.
 */
const allowEmptyFleet = z
  .union([z.boolean(), z.enum(["true", "false"]).transform((text) => text === "true")], { error: "allowEmptyFleet must be true or false" })
  .default(false);

/** The stack config's keys: one per top-level setting of the `nodefleet:` namespace. */
const fleetConfigKeysSchema = z.object({
  "nodefleet:cluster": clusterSchema,
  "nodefleet:network": networkSchema,
  "nodefleet:firewall": firewallSchema.default(() => firewallSchema.parse({})),
  "nodefleet:pools": z.array(anyPoolSchema).default([]),
  [ALLOW_EMPTY_FLEET_KEY]: allowEmptyFleet,
});

/** The keys of the fleet spec (full keys, `nodefleet:pools`); the namespace's other keys are in configKeys.ts. */
export const FLEET_SPEC_KEYS: readonly string[] = Object.keys(fleetConfigKeysSchema.shape);

export const fleetConfigSchema = fleetConfigKeysSchema.transform((config) => ({
  cluster: config["nodefleet:cluster"],
  network: config["nodefleet:network"],
  firewall: config["nodefleet:firewall"],
  pools: config["nodefleet:pools"],
  allowEmptyFleet: config[ALLOW_EMPTY_FLEET_KEY],
}));

interface RawPool {
  name?: unknown;
  provider?: unknown;
  mode?: unknown;
  location?: unknown;
  locations?: unknown;
  network?: unknown;
  placement?: unknown;
  replicas?: unknown;
  nodes?: unknown;
  limits?: { maxNodes?: unknown };
  servers?: unknown[];
  publicIpv4?: unknown;
  publicIpv6?: unknown;
}

/**
 * A static member's hostname `<clusterId>-<pool>-<node>` is a DNS label (at most 63 characters), and
 * a Hetzner server name adds `-<generation>`; checked here so the config is refused up front, not
 * halfway through declaring servers.
 */
function longestNameProblem(clusterId: string, poolName: string, pool: RawPool): string | undefined {
  const nodes = Array.isArray(pool.nodes) && pool.nodes.every((n) => typeof n === "string") ? (pool.nodes as string[]) : undefined;
  const replicas =
    typeof pool.replicas === "number" && Number.isInteger(pool.replicas) && pool.replicas > 0 ? Math.min(pool.replicas, 1000) : 0;
  const nodeIds = nodes ? staticNodeIds({ name: poolName, nodes }) : staticNodeIds({ name: poolName, replicas });
  const longest = nodeIds.map((nodeId) => hostnameFor({ id: clusterId }, nodeId)).sort((a, b) => b.length - a.length)[0];
  if (longest === undefined) return undefined;
  const shorten = "shorten the cluster id, the pool name or the node names";
  if (pool.provider === "hcloud" && longest.length + 1 + GENERATION_SUFFIX_LENGTH > MAX_SERVER_NAME_LENGTH) {
    return `node ${longest} is ${longest.length} characters: with the -<${GENERATION_SUFFIX_LENGTH}-character generation> suffix its Hetzner server name would be longer than ${MAX_SERVER_NAME_LENGTH}; ${shorten}`;
  }
  if (longest.length > MAX_SERVER_NAME_LENGTH) {
    return `node ${longest} is ${longest.length} characters, more than the ${MAX_SERVER_NAME_LENGTH} a hostname allows; ${shorten}`;
  }
  return undefined;
}

/**
 * A pool's `locations`: one network zone (a server joins only a subnet of its own zone, and the
 * cluster network's subnet has one), and the network's zone.
 */
function poolLocationsProblems(pool: RawPool, path: PropertyKey[], networkZone: string | undefined) {
  const problems: Array<{ path: PropertyKey[]; message: string }> = [];
  if (!Array.isArray(pool.locations) || pool.locations.length === 0) return problems;
  const here = [...path, "locations"];
  const known = pool.locations.filter((l): l is string => typeof l === "string" && l in HCLOUD_LOCATION_ZONES);
  const zones = [...new Set(known.map((l) => HCLOUD_LOCATION_ZONES[l]))];
  if (zones.length > 1) {
    const byZone = known.map((l) => `${l} (${HCLOUD_LOCATION_ZONES[l]})`).join(", ");
    problems.push({ path: here, message: `locations must all be in one network zone, but ${byZone} are not` });
  } else if (zones.length === 1 && networkZone !== undefined && zones[0] !== networkZone) {
    problems.push({ path: here, message: `locations are in network zone ${zones[0]}, outside the network's zone ${networkZone}` });
  }
  return problems;
}

/**
 * Rules that span several fields or pools. They read the raw config defensively so that they are
 * reported together with the per-field problems, not only once everything else is valid.
 */
function crossFieldProblems(rawConfig: Readonly<Record<string, unknown>>): Array<{ path: PropertyKey[]; message: string }> {
  const problems: Array<{ path: PropertyKey[]; message: string }> = [];
  const pools = Array.isArray(rawConfig["nodefleet:pools"]) ? (rawConfig["nodefleet:pools"] as RawPool[]) : [];
  const network = rawConfig["nodefleet:network"] as { zone?: unknown } | undefined;
  const clusterId = (rawConfig["nodefleet:cluster"] as { id?: unknown } | undefined)?.id;
  const zone = typeof network?.zone === "string" ? network.zone : undefined;
  const seen = new Map<string, number>();
  const hcloudPools: HcloudPoolSize[] = [];
  const publicAddresses: PoolPublicAddresses[] = [];
  pools.forEach((pool, index) => {
    if (typeof pool !== "object" || pool === null) return;
    const path = ["nodefleet:pools", index];
    if (typeof pool.name === "string") {
      const first = seen.get(pool.name);
      if (first !== undefined) {
        problems.push({
          path: [...path, "name"],
          message: `pool name ${pool.name} is already used by nodefleet:pools[${first}]; pool names must be unique`,
        });
      } else {
        seen.set(pool.name, index);
      }
    }
    const isStaticWithMembers = pool.mode === "static" && (pool.provider === "hcloud" || pool.provider === "scaleway-elastic-metal");
    if (isStaticWithMembers && pool.replicas === undefined && pool.nodes === undefined) {
      problems.push({ path: [...path, "replicas"], message: "a static pool needs replicas or an explicit nodes list" });
    } else if (isStaticWithMembers && pool.replicas !== undefined && pool.nodes !== undefined) {
      problems.push({ path: [...path, "nodes"], message: "set either replicas or nodes, not both" });
    }
    if (isStaticWithMembers && typeof clusterId === "string" && typeof pool.name === "string") {
      const problem = longestNameProblem(clusterId, pool.name, pool);
      if (problem) problems.push({ path: [...path, "name"], message: problem });
    }
    if (pool.provider === "hcloud" && typeof pool.location === "string" && zone !== undefined) {
      const poolZone = HCLOUD_LOCATION_ZONES[pool.location];
      if (poolZone !== undefined && poolZone !== zone) {
        problems.push({
          path: [...path, "location"],
          message: `location ${pool.location} is in network zone ${poolZone}, outside the network's zone ${zone}`,
        });
      }
    }
    if (pool.provider === "hcloud") problems.push(...poolLocationsProblems(pool, path, zone));
    if (
      pool.provider === "hetzner-robot" &&
      typeof clusterId === "string" &&
      typeof pool.name === "string" &&
      Array.isArray(pool.servers)
    ) {
      const nodes = pool.servers.map((s) => (s as { name?: unknown } | null)?.name).filter((n): n is string => typeof n === "string");
      const problem = longestNameProblem(clusterId, pool.name, { ...pool, nodes });
      if (problem) problems.push({ path: [...path, "servers"], message: problem });
    }
    if (pool.provider === "hcloud") {
      const autoscaled = pool.mode === "autoscaled";
      const servers =
        autoscaled && typeof pool.limits?.maxNodes === "number"
          ? pool.limits.maxNodes
          : !autoscaled && Array.isArray(pool.nodes)
            ? pool.nodes.length
            : !autoscaled && typeof pool.replicas === "number"
              ? pool.replicas
              : 0;
      hcloudPools.push({
        index,
        name: typeof pool.name === "string" ? pool.name : `nodefleet:pools[${index}]`,
        network: pool.network === "public" ? "public" : "private",
        spread: pool.placement !== "none",
        locations: Array.isArray(pool.locations) && pool.locations.length > 0 ? pool.locations.length : 1,
        servers: Number.isFinite(servers) && servers > 0 ? servers : 0,
        mode: autoscaled ? "autoscaled" : "static",
      });
      publicAddresses.push({
        index,
        network: pool.network === "public" ? "public" : "private",
        mode: autoscaled ? "autoscaled" : "static",
        publicIpv4: pool.publicIpv4 !== false,
        publicIpv6: pool.publicIpv6 !== false,
      });
    }
  });
  problems.push(
    ...hcloudCapacityProblems(hcloudPools),
    ...publicNetworkProblems(hcloudPools, rawConfig["nodefleet:cluster"]),
    ...privateEgressProblems(publicAddresses, rawConfig["nodefleet:network"], rawConfig["nodefleet:cluster"]),
  );
  return problems;
}

export type FleetSpec = z.output<typeof fleetConfigSchema>;

/** The fleet's autoscaled pools (Hetzner Cloud only): the pools whose members the scaling API declares. */
export function autoscaledPools(fleet: FleetSpec): HcloudAutoscaledPool[] {
  return fleet.pools.filter((p): p is HcloudAutoscaledPool => p.provider === "hcloud" && p.mode === "autoscaled");
}

/** Every problem in an invalid stack config, one `path: message` each. */
export class FleetSpecError extends Error {
  override readonly name = "FleetSpecError";
  constructor(readonly problems: string[]) {
    super(`invalid nodefleet stack config:\n${problems.map((p) => `  - ${p}`).join("\n")}`);
  }
}

export function formatIssuePath(path: readonly PropertyKey[]): string {
  let text = "";
  for (const part of path) {
    if (typeof part === "number") text += `[${part}]`;
    else if (typeof part === "string" && /^[A-Za-z0-9_:-]+$/.test(part)) text += text ? `.${part}` : part;
    else text += `[${JSON.stringify(String(part))}]`;
  }
  return text || "(config)";
}

/**
 * Validates raw stack config values (keyed `nodefleet:cluster`, ...; keys of other namespaces are
 * ignored, unknown keys of `nodefleet:` refused); throws FleetSpecError listing every problem.
 */
export function parseFleetSpec(rawConfig: Readonly<Record<string, unknown>>): FleetSpec {
  const result = fleetConfigSchema.safeParse(rawConfig, { error: (issue) => plainIssueMessage(issue) });
  const problems = [
    ...unknownConfigKeyProblems(Object.keys(rawConfig), FLEET_SPEC_KEYS),
    ...(result.success ? [] : result.error.issues),
    ...crossFieldProblems(rawConfig),
  ];
  if (problems.length > 0) {
    throw new FleetSpecError(problems.map((issue) => `${formatIssuePath(issue.path)}: ${issue.message}`));
  }
  return (result as { data: FleetSpec }).data;
}
