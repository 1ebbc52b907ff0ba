/**
 * The VLAN tag of an Elastic Metal server's attachment to the pool's private network, and how long
 * a member may take to be installed and joined.
 *
 * The tag is what the join configures the interface with. Scaleway can report an attachment as
 * `attached` before it reports its VLAN (the local cloud's NODEFLEET_SIM_SCW_VLAN_DELAY_MS). The
 * provider's create waits for `attached` only, then reads, and records a missing VLAN as 0
 * (terraform-provider-scaleway `internal/services/baremetal/types.go` `flattenPrivateNetworks`
 * flattens the SDK's nil `*uint32`, and the integer attribute reads back 0; the double does the
 * same, toolchain/providers/FIDELITY.md SC7). That 0 stays in the state until a refresh, since
 * nothing changes the server. So 0 means "not reported": the pool then reads the server live
 * through the `getServer` data source (upstream `baremetal/server_data_source.go`, which reads as
 * the resource does; FIDELITY.md SC17), waiting for the tag within a bound during `up`, and the next
 * run's live read finds a tag the previous run gave up on, with no `--refresh`.
 */
import { unknown } from "@pulumi/pulumi/output";
import { bootstrapTokenJoinMargin } from "../kubernetes/bootstrapToken";

/** The VLAN ids a tag can have (IEEE 802.1Q: 0 and 4095 are reserved). */
const VLAN_ID_RANGE = { min: 1, max: 4094 } as const;

/**
 * The tag as the provider reports it: undefined while it reports none (absent, null or 0). Any other
 * value outside 1-4094 is refused, naming the node: the script could not configure it.
 */
export function reportedVlan(hostname: string, vlan: number | null | undefined): number | undefined {
  if (vlan === undefined || vlan === null || vlan === 0) return undefined;
  if (!Number.isInteger(vlan) || vlan < VLAN_ID_RANGE.min || vlan > VLAN_ID_RANGE.max) {
    throw new Error(
      `node ${hostname}: the server reports VLAN ${vlan} for the private network, not a VLAN id (${VLAN_ID_RANGE.min}-${VLAN_ID_RANGE.max})`,
    );
  }
  return vlan;
}

/** An attachment as the provider reports it (the resource's `privateNetworks[]`, the data source's too). */
interface Attachment {
  readonly id: string;
  readonly vlan?: number | null;
}

/** The UUID part of a Scaleway id (`fr-par/<uuid>` or `<uuid>`). */
const uuidOf = (id: string) => id.split("/").pop() ?? id;

/** The tag of the attachment to `privateNetworkId` (or of the only attachment), undefined while not reported. */
export function attachmentVlan(
  hostname: string,
  attached: readonly Attachment[] | undefined,
  privateNetworkId: string,
): number | undefined {
  const list = attached ?? [];
  const match = list.find((pn) => uuidOf(pn.id) === uuidOf(privateNetworkId)) ?? (list.length === 1 ? list[0] : undefined);
  return reportedVlan(hostname, match?.vlan);
}

/** NODEFLEET_SCW_VLAN_WAIT_SECONDS: how long `up` waits for a tag Scaleway has not reported yet. */
export const VLAN_WAIT_ENV = "NODEFLEET_SCW_VLAN_WAIT_SECONDS";
export const DEFAULT_VLAN_WAIT_SECONDS = 300;
const MAX_VLAN_WAIT_SECONDS = 3600;
/** How often the wait reads the server: upstream's poll interval for every Elastic Metal wait (`baremetal/helpers.go` `retryInterval`). */
const VLAN_POLL_SECONDS = 5;

/** The wait's bound in seconds, from NODEFLEET_SCW_VLAN_WAIT_SECONDS (0 to 3600; default 300). */
export function vlanWaitSeconds(env: Readonly<Record<string, string | undefined>> = process.env): number {
  const raw = env[VLAN_WAIT_ENV];
  if (raw === undefined || raw.trim() === "") return DEFAULT_VLAN_WAIT_SECONDS;
  const seconds = Number(raw);
  if (!Number.isInteger(seconds) || seconds < 0 || seconds > MAX_VLAN_WAIT_SECONDS) {
    throw new Error(`${VLAN_WAIT_ENV} must be a whole number of seconds from 0 to ${MAX_VLAN_WAIT_SECONDS}, got ${JSON.stringify(raw)}`);
  }
  return seconds;
}

export interface VlanResolution {
  /** The node, for the messages. */
  readonly hostname: string;
  /** The server's zoned id, for the messages. */
  readonly serverId: string;
  /** The tag the state holds (undefined while it holds none or 0). */
  readonly recorded: number | undefined;
  /** One live read of the server's tag (the getServer data source). */
  readonly readLive: () => Promise<number | undefined>;
  /** A preview: read once and never wait or fail. */
  readonly dryRun: boolean;
  readonly waitSeconds: number;
  readonly sleep?: (ms: number) => Promise<void>;
  readonly now?: () => number;
}

/**
 * The tag the join uses: the state's when it holds one; else read live, and during `up` read again
 * every 5 s until the bound. A preview reads once and, still without a tag, answers Pulumi's unknown
 * (the join shows as to be computed; a preview never fails on it). An `up` that runs out of time
 * fails naming the server, and says that the next `pulumi up` reads the tag again by itself.
 */
export async function resolveVlan(r: VlanResolution): Promise<number | undefined> {
  if (r.recorded !== undefined) return r.recorded;
  const now = r.now ?? Date.now;
  const sleep = r.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const deadline = now() + (r.dryRun ? 0 : r.waitSeconds * 1000);
  for (;;) {
    const live = await r.readLive();
    if (live !== undefined) return live;
    const left = deadline - now();
    if (left <= 0) break;
    await sleep(Math.min(VLAN_POLL_SECONDS * 1000, left));
  }
  if (r.dryRun) return unknown as unknown as undefined;
  throw new Error(
    `node ${r.hostname}: server ${r.serverId} still reports no VLAN tag for the pool's private network after ${r.waitSeconds} s ` +
      `(${VLAN_WAIT_ENV}); Scaleway reports it late at times. The server is kept: run \`pulumi up\` again, ` +
      `which reads the tag live and joins the node (no --refresh needed)`,
  );
}

/**
 * customTimeouts of an Elastic Metal server's create, update (an OS reinstall) and delete: a real
 * install takes 30-60 minutes, and the create also adds the Private Network option and waits for the
 * attachment. Upstream's default is 82 minutes (`baremetal/helpers.go`: ServerTimeout 80 minutes plus
 * two of retry) since terraform-provider-scaleway v2.5x; older releases had 60 + 2, which a 60-minute
 * install outlives. Set explicitly, so the bound does not hang on the provider's version.
 */
export const ELASTIC_METAL_SERVER_TIMEOUT_MINUTES = 90;
export const ELASTIC_METAL_CUSTOM_TIMEOUTS = {
  create: `${ELASTIC_METAL_SERVER_TIMEOUT_MINUTES}m`,
  update: `${ELASTIC_METAL_SERVER_TIMEOUT_MINUTES}m`,
  delete: `${ELASTIC_METAL_SERVER_TIMEOUT_MINUTES}m`,
} as const;

/**
 * The lifetime of an Elastic Metal member's bootstrap token, in minutes. The token is created before
 * its server (cloud-init offers carry it in their user data) and used by the join after the install:
 * it must outlive the server's create timeout, the VLAN wait and the join margin
 * (`bootstrapTokenJoinMarginMinutes`, default 20), so by default 90 + 5 + 20 = 115 minutes, or the
 * cluster's `bootstrapTokenTtlMinutes` when that is longer.
 */
export function elasticMetalTokenTtlMinutes(
  cluster: { readonly bootstrapTokenTtlMinutes: number; readonly bootstrapTokenJoinMarginMinutes?: number },
  waitSeconds: number,
): number {
  const needed = ELASTIC_METAL_SERVER_TIMEOUT_MINUTES + Math.ceil(waitSeconds / 60) + bootstrapTokenJoinMargin(cluster);
  return Math.max(cluster.bootstrapTokenTtlMinutes, needed);
}
