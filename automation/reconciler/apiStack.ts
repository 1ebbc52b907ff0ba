/**
 * The API's own stacks of a cluster (one per shard, apiShard.ts): each declares only its autoscaled
 * members (from their frozen snapshots) and looks the shared network and firewall up, so a
 * `pulumi up` from git never touches API-created nodes and these stacks never touch git's resources.
 */
import * as path from "node:path";
import type { HcloudLabelledResource } from "../hcloud/hcloudClient";
import type { StackConfigValue, StackDefinition } from "../engine/stackEngine";
import type { Claim } from "../store/claimStore";
import type { MemberSnapshot } from "../store/claimSnapshot";
import { DEFAULT_SHARD } from "./apiShard";
import { engineStateOf, stackNamesWithState } from "../engine/engineState";

/** The network and firewall every autoscaled member attaches to (git's stack owns them), as looked up by name. */
export interface SharedResources {
  readonly network: HcloudLabelledResource;
  readonly firewall: HcloudLabelledResource;
}

/** The arguments `stacks/autoscaledProgram.ts` receives. */
export interface AutoscaledProgramArgs {
  readonly clusterId: string;
  /**
   * The shared network and firewall, looked up once for the batch by the service: the guard's
   * preview and the up then see the same ones (and spend one look-up each, not two). Without it
   * the program looks them up itself.
   */
  readonly shared?: SharedResources;
  /** Render without a kubeconfig (simulation); otherwise a missing kubeconfig fails the run. */
  readonly allowMissingKubeconfig?: boolean;
  readonly members: ReadonlyArray<{ readonly nodeId: string; readonly pool: string; readonly snapshot: MemberSnapshot }>;
}

const AUTOSCALED_PROGRAM_MODULE = path.resolve(__dirname, "..", "..", "stacks", "autoscaledProgram.js");

/** Shard 0 is today's `<cluster>-api` stack; shard `pool-b` is `<cluster>-api-pool-b` (apiShard.ts). */
export function apiStackName(clusterId: string, shard: string = DEFAULT_SHARD): string {
  return shard === DEFAULT_SHARD ? `${clusterId}-api` : `${clusterId}-api-${shard}`;
}

/** The engine state of every API stack shard of the cluster: the lost-store check's evidence. */
export function apiEngineStateOf(dataDir: string, clusterId: string): string[] {
  const shardPrefix = `${apiStackName(clusterId)}-`;
  const stacks = new Set([apiStackName(clusterId), ...stackNamesWithState(dataDir).filter((name) => name.startsWith(shardPrefix))]);
  return [...stacks].flatMap((stack) => engineStateOf(dataDir, stack));
}

export function apiStackDefinition(input: {
  clusterId: string;
  members: readonly Claim[];
  /** The git stack's config (cluster, network, firewall): the program renders bootstrap and finds shared resources from it. */
  config: Readonly<Record<string, StackConfigValue>>;
  programModule?: string;
  /** The shard these members are (default 0, the `<cluster>-api` stack). */
  shard?: string;
  stackName?: string;
  allowMissingKubeconfig?: boolean;
  shared?: SharedResources;
}): StackDefinition {
  const args: AutoscaledProgramArgs = {
    clusterId: input.clusterId,
    ...(input.shared ? { shared: input.shared } : {}),
    allowMissingKubeconfig: input.allowMissingKubeconfig ?? false,
    members: [...input.members]
      .sort((a, b) => (a.nodeId < b.nodeId ? -1 : 1))
      .map((c) => ({ nodeId: c.nodeId, pool: c.pool, snapshot: c.snapshot })),
  };
  return {
    stackName: input.stackName ?? apiStackName(input.clusterId, input.shard),
    program: { module: input.programModule ?? AUTOSCALED_PROGRAM_MODULE, args },
    config: input.config,
  };
}
