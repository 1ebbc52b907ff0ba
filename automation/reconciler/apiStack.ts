/**
 * The API's own stack of a cluster: it declares only the autoscaled members (from their frozen
 * snapshots) and looks the shared network and firewall up, so a `pulumi up` from git never
 * touches API-created nodes and this stack never touches git's resources.
 */
import * as path from "node:path";
import type { HcloudLabelledResource } from "../hcloud/hcloudClient";
import type { StackConfigValue, StackDefinition } from "../engine/stackEngine";
import type { Claim } from "../store/claimStore";
import type { MemberSnapshot } from "../store/claimSnapshot";

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

export function apiStackName(clusterId: string): string {
  return `${clusterId}-api`;
}

export function apiStackDefinition(input: {
  clusterId: string;
  members: readonly Claim[];
  /** The git stack's config (cluster, network, firewall): the program renders bootstrap and finds shared resources from it. */
  config: Readonly<Record<string, StackConfigValue>>;
  programModule?: string;
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
    stackName: input.stackName ?? apiStackName(input.clusterId),
    program: { module: input.programModule ?? AUTOSCALED_PROGRAM_MODULE, args },
    config: input.config,
  };
}
