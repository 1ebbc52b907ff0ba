/**
 * The Pulumi program of a git-owned fleet stack: read the raw `nodefleet:*` config, validate all of
 * it before declaring anything, then declare the Fleet. Shared by `stacks/index.ts` (pulumi up),
 * the automation engine (inline program), render and the simulated engine (mock runtime).
 */
import * as hcloud from "@pulumi/hcloud";
import * as pulumi from "@pulumi/pulumi";
import { clusterKubeconfig } from "../components/fleet/clusterKubeconfig";
import { Fleet, type FleetArgs } from "../components";
import { type FleetSpec, FleetSpecError, parseFleetSpec } from "../components/fleet/fleetSpec";
import { type CurrentHcloudServer, type HcloudNodeOutputValues, currentHcloudServers } from "../components/hcloud/hcloudNodePool";
import { networkOutput, networkRangeChangeProblem } from "../components/hcloud/clusterNetwork";
import { readyClusterNodeNames } from "../components/kubernetes/nodeReadiness";
import { type CurrentInPlaceMember, currentInPlaceMembers } from "../components/fleet/inPlaceMembers";
import { type CurrentElasticMetalMember, currentElasticMetalMembers } from "../components/scaleway/elasticMetalPlan";
import { NON_SPEC_CONFIG_KEYS, isNodefleetKey } from "../components/fleet/configKeys";
import { emptyFleetProblem } from "../components/fleet/emptyFleetGuard";
import { type ImageLookupAnswer, type PoolImages, poolImageLookups, resolvePoolImages } from "../components/fleet/poolImages";

/**
 * The raw config values of every `nodefleet:` key the stack sets, JSON-decoded where Pulumi stored
 * an object or list. Every key, not only the spec's: a misspelt one (`nodefleet:pool`) must reach
 * the spec's check to be refused, instead of going unread while the fleet it was meant to declare
 * is taken as empty. The keys read elsewhere (secrets among them) are left out.
 */
export function readRawFleetConfig(): Record<string, unknown> {
  const raw: Record<string, unknown> = {};
  for (const [key, text] of Object.entries(pulumi.runtime.allConfig())) {
    if (!isNodefleetKey(key) || key in NON_SPEC_CONFIG_KEYS) continue;
    try {
      raw[key] = JSON.parse(text);
    } catch {
      raw[key] = text; // a plain string: the schema reports it as the wrong type
    }
  }
  return raw;
}

/** What a run reads of the previous one: its `nodes` and `network` outputs, as stored. */
export interface PreviousRunOutputs {
  readonly nodes?: unknown;
  readonly network?: unknown;
}

export interface RunProgramOptions {
  /** Declare the fleet without a kubeconfig (render, simulation). Default false: a missing kubeconfig is an error. */
  readonly allowMissingKubeconfig?: boolean;
  /** Per static Hetzner Cloud pool, its servers at the start of the run (see FleetArgs.currentHcloudServers). Overrides `previousNodes`. */
  readonly currentHcloudServers?: FleetArgs["currentHcloudServers"];
  /**
   * The stack's `nodes` output of the previous run, which the engine passes in: with it, static
   * Hetzner Cloud, Robot and Elastic Metal pools roll a fleet-wide change step by step (each Node's readiness is read from
   * the cluster; without a kubeconfig, in simulation, every previous server counts as Ready).
   * Default none: pools are declared as new.
   */
  readonly previousNodes?: unknown;
  /** The stack's `network` output of the previous run: a changed ipRange is refused (see networkRangeChangeProblem). */
  readonly previousNetwork?: unknown;
  /** Reads the previous run's outputs once the config is valid (a plain `pulumi up` reads its own stack's). */
  readonly readPreviousOutputs?: () => Promise<PreviousRunOutputs>;
}

/**
 * Per static pool, its machines at the start of this run, from the previous `nodes` and the
 * cluster's Ready Nodes (Hetzner Cloud Nodes are named by server, bare-metal ones by hostname).
 */
async function currentMachinesOf(
  spec: FleetSpec,
  previousNodes: unknown,
  kubeconfig: string | undefined,
): Promise<
  Required<
    Pick<
      FleetArgs,
      "currentHcloudServers" | "currentRobotMembers" | "currentElasticMetalMembers" | "earlierTokenPools" | "unrecordedBareMetalPools"
    >
  >
> {
  const nodes = (Array.isArray(previousNodes) ? previousNodes : []) as Array<HcloudNodeOutputValues & Record<string, unknown>>;
  const ready =
    kubeconfig === undefined
      ? new Set(nodes.flatMap((n) => [n.nodeName, n.hostname]))
      : await readyClusterNodeNames(kubeconfig, spec.cluster.id);
  const current = {
    currentHcloudServers: {},
    currentRobotMembers: {},
    currentElasticMetalMembers: {},
    earlierTokenPools: [],
    unrecordedBareMetalPools: [],
  } as {
    currentHcloudServers: Record<string, CurrentHcloudServer[]>;
    earlierTokenPools: string[];
    unrecordedBareMetalPools: string[];
    currentRobotMembers: Record<string, CurrentInPlaceMember[]>;
    currentElasticMetalMembers: Record<string, CurrentElasticMetalMember[]>;
  };
  for (const pool of spec.pools) {
    if (pool.provider === "hcloud" && pool.mode === "static") {
      const servers = currentHcloudServers(nodes, pool.name, ready);
      if (servers) current.currentHcloudServers[pool.name] = servers;
      else if (nodes.some((n) => n.pool === pool.name)) current.earlierTokenPools.push(pool.name);
    } else if (pool.provider === "hetzner-robot") {
      const members = currentInPlaceMembers(nodes, pool.name, ready);
      if (members) current.currentRobotMembers[pool.name] = members;
      else if (nodes.some((n) => n.pool === pool.name)) current.unrecordedBareMetalPools.push(pool.name);
    } else if (pool.provider === "scaleway-elastic-metal") {
      const members = currentElasticMetalMembers(nodes, pool.name, ready);
      if (members) current.currentElasticMetalMembers[pool.name] = members;
      else if (nodes.some((n) => n.pool === pool.name)) current.unrecordedBareMetalPools.push(pool.name);
    }
  }
  return current;
}

/**
 * Looks up the images of pools with `imageSelector` or an image id (fleet/poolImages.ts) through the
 * hcloud plugin's getImage, at preview as at up; refuses, naming the field and the rule, a selector
 * with no match for a listed type's architecture and an id of another architecture.
 */
async function resolveImages(spec: FleetSpec): Promise<PoolImages> {
  const lookups = poolImageLookups(spec.pools);
  if (lookups.length === 0) return {};
  const answers = await Promise.all(
    lookups.map((lookup) =>
      hcloud.getImage(lookup.args).then(
        (image): ImageLookupAnswer => ({ id: Number(image.id), architecture: image.architecture }),
        (error: unknown): ImageLookupAnswer => ({ error: error instanceof Error ? error.message : String(error) }),
      ),
    ),
  );
  const { images, problems } = resolvePoolImages(lookups, answers);
  if (problems.length > 0) throw new FleetSpecError([...problems]);
  return images;
}

export async function runProgram(args: RunProgramOptions = {}): Promise<Record<string, unknown>> {
  const spec = parseFleetSpec(readRawFleetConfig());
  const clusterCredentials = clusterKubeconfig(spec.cluster, { optional: args.allowMissingKubeconfig === true });
  if (clusterCredentials === undefined && !args.allowMissingKubeconfig) {
    throw new FleetSpecError([
      "nodefleet:cluster.kubeconfig: is required to mint bootstrap tokens; set it with `pulumi config set --secret --path 'nodefleet:cluster.kubeconfig' \"$(cat kubeconfig)\"` (or set cluster.kubeconfigFromEnvironment)",
    ]);
  }
  const kubeconfig = clusterCredentials === undefined ? undefined : pulumi.secret(clusterCredentials);
  const previous = (await args.readPreviousOutputs?.()) ?? {};
  const previousNodes = args.previousNodes ?? previous.nodes;
  // Both refused before anything is declared: a changed network range, and an empty fleet over a stack holding members.
  const refusals = [
    networkRangeChangeProblem(spec, args.previousNetwork ?? previous.network),
    emptyFleetProblem(spec, previousNodes),
  ].filter((p): p is string => p !== undefined);
  if (refusals.length > 0) throw new FleetSpecError(refusals);
  const current = previousNodes !== undefined ? await currentMachinesOf(spec, previousNodes, clusterCredentials) : {};
  const hcloudImages = await resolveImages(spec);
  const fleet = new Fleet(spec.cluster.id, {
    spec,
    kubeconfig,
    hcloudImages,
    ...current,
    ...(args.currentHcloudServers ? { currentHcloudServers: args.currentHcloudServers } : {}),
  });
  return {
    clusterId: spec.cluster.id,
    nodes: fleet.nodes,
    networkId: fleet.networkId,
    network: networkOutput(spec),
    firewallId: fleet.firewallId,
    rollout: fleet.rollout,
  };
}
