/**
 * What a burst of creates costs as the fleet grows, on the real engine and the local cloud (boot
 * delay 0), for the release before nodefleet's provider plugin and this checkout side by side in one
 * run, each on a fresh local cloud: before each measured burst of `--burst` (default 40) creates, an
 * unmeasured fill brings the pool to N members (`--at`, default 0,100,300 for this checkout, whose
 * pool is off the private network; `--previous-at`, default 0,60: the previous release's pool shares
 * Hetzner's 100-server network; `--one-stack-at`, default none: this checkout with every member in
 * one API stack, as before shards, on a cloud of its own). Per burst: seconds to every `POST /servers`, to every Node Ready
 * and to the whole batch RUNNING, the API stacks' state bytes per member (every shard's checkpoint),
 * their checkpoint writes per created member (inotify renames of a checkpoint file, how the file
 * backend replaces it), and Hetzner requests per created node. `--static-to` (default none): a
 * static pool of that many members brought up from 0 by one documented `pulumi up` of the git
 * stack, on a cloud of its own: the up's seconds, seconds to every Node Ready, and the same state,
 * write and request figures for the git stack. `--scale-out-at` (default none): this checkout in the
 * scale-out mode, on a cloud of its own: two `serve` replicas sharing a throwaway PostgreSQL
 * database, the API stacks' state in an S3 bucket (gofakes3), their engine runs as workflows of a
 * Temporal development server, each burst's creates spread over both replicas (state and write
 * figures are the file backend's, so none there); `--scale-out-without-temporal-at` (default none):
 * the same without Temporal (the runs batched in process, one at a time by PostgreSQL's run lock).
 */
import { type FSWatcher, mkdtempSync, readdirSync, rmSync, statSync, watch } from "node:fs";
import { cpus, tmpdir, totalmem } from "node:os";
import { basename, dirname, join } from "node:path";
import { performance } from "node:perf_hooks";
import { type LocalCloud, startLocalCloud } from "../automation/local/localCloud";
import { stackCheckpointFiles } from "../automation/engine/fileBackendState";
import { stackNamesWithState } from "../automation/engine/engineState";
import { apiStackName } from "../automation/reconciler/apiStack";
import { runPulumi } from "../automation/local/localStack";
import { UP, editLocalPool, editLocalPools, isReady, poolNodes, setLocalPublicAddresses } from "../test/support/localFleet";
import { localStackProject } from "../test/support/localStackProject";
import { startScaleOutBackends } from "../test/support/scaleOutBackends";
import { type ServeProcess, serveOnLocalCloud, stopServe } from "../test/support/serveProcess";
import { until } from "../test/support/until";
import { arg, percentile } from "./benchSetup";
import { processMemoryMiB, processesIn } from "./processMemory";
import { BEFORE_PROVIDER_PLUGIN, buildRelease } from "./previousRelease";

const POOL = "local-burst";
const BURST = Number(arg("burst", "40"));
const sizes = (text: string) => (text === "none" ? [] : text.split(",").map(Number));
const AT = sizes(arg("at", "0,100,300"));
const PREVIOUS_AT = sizes(arg("previous-at", "0,60"));
/** This checkout with every member in one API stack, as before shards (NODEFLEET_SHARD_SIZE far above the fleet). */
const ONE_STACK_AT = sizes(arg("one-stack-at", "none"));
const ONE_STACK = { NODEFLEET_SHARD_SIZE: "100000" };
/** This checkout in the scale-out mode (scaleOutBackends.ts): two replicas, PostgreSQL, state in S3, Temporal (or not). */
const SCALE_OUT_AT = sizes(arg("scale-out-at", "none"));
const SCALE_OUT_WITHOUT_TEMPORAL_AT = sizes(arg("scale-out-without-temporal-at", "none"));
const REPLICAS = 2;
/** Static pools brought up from 0 by one `pulumi up` of the git stack (this checkout; off the private network). */
const STATIC_TO = sizes(arg("static-to", "none"));
const STATIC_POOL = "local-general";
const GIT_STACK = "local";
/**
 * Variables for the static rounds' pulumi CLI, `KEY=VALUE,KEY=VALUE` (default none, as a user runs it),
 * for example Go's soft memory limit `GOMEMLIMIT=2GiB` or upstream's `PULUMI_DISABLE_SECRET_CACHE=true`.
 */
const CLI_ENV: Record<string, string> = Object.fromEntries(
  arg("cli-env", "")
    .split(",")
    .filter(Boolean)
    .map((pair) => [pair.slice(0, pair.indexOf("=")), pair.slice(pair.indexOf("=") + 1)]),
);
/** A file prefix for the static rounds' measured up to write the CLI's CPU and heap profiles to (its `--profiling`); default none. */
const CLI_PROFILE = arg("cli-profile", "");

interface Round extends Timings {
  readonly before: number;
  readonly stateBytesPerMember: number;
  readonly writesPerCreated: number;
  readonly requestsPerNode: number;
  /** Scale-out: the API stacks' checkpoints in the bucket after the burst (their state is there, not in a data directory). */
  readonly checkpointsInS3?: number;
  /** Scale-out with Temporal: the workflow executions its namespace holds after the burst (one per API stack shard run on it). */
  readonly temporalWorkflows?: number;
}

const totalRequests = (cloud: LocalCloud) => [...cloud.hcloud.requestCounts.values()].reduce((a, b) => a + b, 0);

/** A checkpoint file of one of the cluster's API stack shards (apiStack.ts apiStackName). */
const isApiCheckpoint = (clusterId: string, name: string) =>
  name === `${apiStackName(clusterId)}.json` || (name.startsWith(`${apiStackName(clusterId)}-`) && name.endsWith(".json"));

/** The bytes of every API stack shard's checkpoint of the cluster. */
function apiStateBytes(stateDir: string, clusterId: string): number {
  const stacks = stackNamesWithState(dirname(stateDir)).filter((name) => isApiCheckpoint(clusterId, `${name}.json`));
  return stacks.flatMap((stack) => stackCheckpointFiles(stateDir, stack)).reduce((sum, file) => sum + statSync(file).size, 0);
}

/**
 * Counts the file backend's replacements of a checkpoint `counted` names (it writes a temporary file
 * and renames it over), watching the stacks folder and each project folder in it without recursion
 * (Node 20's recursive watch misses events on Linux).
 */
function countWrites(counted: (fileName: string) => boolean, stacksDir: string): { count: () => number; close: () => void } {
  let writes = 0;
  const watchers = new Map<string, FSWatcher>();
  const watchFolder = (folder: string) => {
    if (watchers.has(folder) || !statSync(folder, { throwIfNoEntry: false })?.isDirectory()) return;
    watchers.set(
      folder,
      watch(folder, (event, name) => {
        if (event === "rename" && name && folder !== stacksDir && counted(basename(String(name)))) writes++;
        if (folder === stacksDir && name) watchFolder(join(stacksDir, String(name)));
      }),
    );
  };
  watchFolder(stacksDir);
  for (const entry of readdirSync(stacksDir)) watchFolder(join(stacksDir, entry));
  return { count: () => writes, close: () => watchers.forEach((w) => w.close()) };
}

interface Timings {
  readonly toServers: number;
  readonly toReady: number;
  readonly toRunning: number;
}

/**
 * Sends `count` creates at once, spread over the replicas in turn; seconds until every server exists,
 * every Node is Ready and every member RUNNING.
 */
async function burst(serves: readonly ServeProcess[], cloud: LocalCloud, tag: string, count: number): Promise<Timings> {
  const [serve] = serves as [ServeProcess];
  const started = performance.now();
  const seconds = () => (performance.now() - started) / 1000;
  const answers = await Promise.all(
    Array.from({ length: count }, (_, i) =>
      serves[i % serves.length]!.client.createNode({ uniqueID: `${tag}-${i}`, pool: POOL, instanceType: "cpx31" }),
    ),
  );
  const ids = new Set(answers.map((a) => a.node.nodeID));
  const providerIds = new Set(answers.map((a) => a.node.providerID));
  let toServers = NaN;
  let toReady = NaN;
  let toRunning = NaN;
  await until(
    `${tag}: every milestone of ${count} creates`,
    async () => {
      if (Number.isNaN(toServers)) {
        const created = cloud.hcloud.state.servers.filter((s) => ids.has(s.labels["nodefleet.io/node"] ?? "")).length;
        if (created === ids.size) toServers = seconds();
      }
      if (Number.isNaN(toReady)) {
        const ready = (await poolNodes(cloud, POOL)).filter((n) => isReady(n) && providerIds.has(n.spec.providerID ?? "")).length;
        if (ready === ids.size) toReady = seconds();
      }
      if (Number.isNaN(toRunning)) {
        const running = (await serve.client.listNodes()).filter((n) => ids.has(n.nodeID) && n.status === "RUNNING").length;
        if (running === ids.size) toRunning = seconds();
      }
      return [toServers, toReady, toRunning].every((v) => !Number.isNaN(v)) ? true : undefined;
    },
    1_800_000,
    () => serves.map((s) => s.stderr().slice(-2000)).join("\n"),
    200,
  );
  // Runs still finishing (the batch's last up) write too: wait until the service is idle.
  await until(
    "no run in flight",
    async () => ((await serve.client.operations()).some((o) => o.result === "running") ? undefined : true),
    600_000,
  );
  return { toServers, toReady, toRunning };
}

/** A fresh local cloud whose servers boot at once. */
function startBenchCloud(dir: string, project: string): Promise<LocalCloud> {
  return startLocalCloud({
    dataDir: join(dir, "data"),
    hcloudPort: 0,
    agentIntervalMs: 1000,
    logger: { info() {}, warn() {} },
    projectDir: project,
    env: { ...process.env, NODEFLEET_SIM_BOOT_DELAY_MS: "0" },
  });
}

interface StaticRound {
  readonly members: number;
  /** The shared resources' first up, before the measured one. */
  readonly emptyUpSeconds: number;
  readonly upSeconds: number;
  /** From the measured up's start. */
  readonly toReady: number;
  readonly stateBytesPerMember: number;
  readonly writesPerMember: number;
  readonly requestsPerMember: number;
  /** The measured up's pulumi CLI: its resident peak (VmHWM), in MiB. */
  readonly cliPeakMiB: number;
}

/**
 * The git stack's static pool taken from 0 to `members` by one `pulumi up` (the documented command),
 * on a fresh local cloud, off the private network (a Hetzner network holds 100 servers).
 */
async function staticRound(dir: string, members: number): Promise<StaticRound> {
  const project = localStackProject(join(dir, "project"));
  const cloud = await startBenchCloud(dir, project);
  try {
    editLocalPools(cloud, (pools) => pools.filter((p) => p.name === STATIC_POOL));
    setLocalPublicAddresses(cloud);
    const size = (replicas: number) =>
      editLocalPool(cloud, STATIC_POOL, (pool) => Object.assign(pool, { replicas, network: "public", placement: "none" }));
    size(0);
    const emptyStarted = performance.now();
    await runPulumi(UP, project, cloud.env);
    const emptyUpSeconds = (performance.now() - emptyStarted) / 1000;
    size(members);
    const backendDir = join(dir, "data", "local", "pulumi-state");
    const writes = countWrites((name) => name === `${GIT_STACK}.json`, join(backendDir, ".pulumi", "stacks"));
    const requestsBefore = totalRequests(cloud);
    const started = performance.now();
    const seconds = () => (performance.now() - started) / 1000;
    const cliEnv = { ...cloud.env, ...CLI_ENV };
    let cliPeakMiB = NaN;
    const sampleCli = () => {
      for (const pid of processesIn("pulumi", project)) cliPeakMiB = Math.max(processMemoryMiB(pid, "VmHWM"), cliPeakMiB || 0);
    };
    const cliSampler = setInterval(sampleCli, 1000);
    const up = runPulumi(CLI_PROFILE ? [...UP, "--profiling", CLI_PROFILE] : UP, project, cliEnv).then(seconds);
    // Nodes are counted while the up runs: the last ones join before it ends.
    const ready = until(
      `every Node of ${members} static members Ready`,
      async () => ((await poolNodes(cloud, STATIC_POOL)).filter(isReady).length >= members ? true : undefined),
      7_200_000,
      undefined,
      2000,
    ).then(seconds);
    let upSeconds: number;
    let toReady: number;
    try {
      await Promise.race([ready, up]); // a failed up ends the round at once
      toReady = await ready;
      upSeconds = await up;
    } finally {
      clearInterval(cliSampler);
    }
    writes.close();
    const stateBytes = stackCheckpointFiles(backendDir, GIT_STACK).reduce((sum, file) => sum + statSync(file).size, 0);
    const result: StaticRound = {
      members,
      emptyUpSeconds,
      upSeconds,
      toReady,
      stateBytesPerMember: Math.round(stateBytes / members),
      writesPerMember: writes.count() / members,
      requestsPerMember: (totalRequests(cloud) - requestsBefore) / members,
      cliPeakMiB,
    };
    process.stderr.write(`static: ${JSON.stringify(result)}\n`);
    return result;
  } finally {
    await cloud.stop();
  }
}

/**
 * One release's bursts at each size of `at`; `bin` none: this checkout, whose pool is off the private
 * network. `scaleOut`: two replicas on the scale-out mode's shared backends instead of one service.
 */
async function rounds(
  label: string,
  bin: string | undefined,
  dir: string,
  at: readonly number[],
  env: Record<string, string> = {},
  scaleOut?: { readonly temporal: boolean },
): Promise<Round[]> {
  const project = localStackProject(join(dir, "project"));
  const cloud = await startBenchCloud(dir, project);
  const serves: ServeProcess[] = [];
  const backends = scaleOut
    ? await startScaleOutBackends("the scale-out bursts", scaleOut).catch(async (error: unknown) => {
        await cloud.stop();
        throw error;
      })
    : undefined;
  try {
    const maxNodes = Math.max(...at) + BURST;
    editLocalPools(cloud, (pools) => pools.filter((p) => p.name === POOL));
    if (bin === undefined) setLocalPublicAddresses(cloud);
    editLocalPool(cloud, POOL, (pool) => {
      pool.limits = { maxNodes, cpu: 4 * maxNodes, memoryGiB: 8 * maxNodes };
      if (bin === undefined) Object.assign(pool, { network: "public", placement: "none" });
    });
    await runPulumi(UP, project, cloud.env);
    const dataDir = join(dir, "serve");
    // One at a time: each start checks the cloud and the shared database before it listens.
    for (let replica = 0; replica < (scaleOut ? REPLICAS : 1); replica++)
      serves.push(
        await serveOnLocalCloud(
          replica === 0 ? dataDir : `${dataDir}-${replica}`,
          cloud.env,
          project,
          { NODEFLEET_BATCH_MAX_MS: "3000", ...backends?.env, ...env },
          bin,
        ),
      );
    const stateDir = join(dataDir, "state");
    const results: Round[] = [];
    let members = 0;
    for (const [round, before] of at.entries()) {
      if (before > members) {
        await burst(serves, cloud, `${label}-fill-${round}`, before - members);
        members = before;
      }
      const requestsBefore = totalRequests(cloud);
      // The file backend's checkpoints are counted and measured; in S3 (scale-out) they are not.
      const stacksDir = join(stateDir, ".pulumi", "stacks");
      if (!backends)
        await until("the stacks folder", async () => (statSync(stacksDir, { throwIfNoEntry: false }) ? true : undefined), 60_000);
      const writes = backends ? undefined : countWrites((name) => isApiCheckpoint("local", name), stacksDir);
      const timings = await burst(serves, cloud, `${label}-${round}`, BURST);
      writes?.close();
      members += BURST;
      const stateBytes = backends ? NaN : apiStateBytes(stateDir, "local");
      results.push({
        before,
        ...timings,
        stateBytesPerMember: stateBytes > 0 ? Math.round(stateBytes / members) : NaN,
        writesPerCreated: writes ? writes.count() / BURST : NaN,
        requestsPerNode: (totalRequests(cloud) - requestsBefore) / BURST,
        ...(backends?.workflowExecutions ? { temporalWorkflows: await backends.workflowExecutions() } : {}),
        ...(backends ? { checkpointsInS3: (await backends.stateKeys()).filter((key) => /\/stacks\/.*\.json$/.test(key)).length } : {}),
      });
      process.stderr.write(`${label}: ${JSON.stringify(results.at(-1))}\n`);
    }
    return results;
  } finally {
    await Promise.all(serves.map((serve) => stopServe(serve)));
    await backends?.stop();
    await cloud.stop();
  }
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "nodefleet-fleet-scale-bench-"));
  try {
    let previous: Round[] = [];
    if (PREVIOUS_AT.length > 0) {
      process.stderr.write(`building ${BEFORE_PROVIDER_PLUGIN.slice(0, 12)} (the release before the provider plugin)\n`);
      const previousBin = buildRelease(BEFORE_PROVIDER_PLUGIN, join(dir, "previous"));
      previous = await rounds("previous", previousBin, join(dir, "previous-run"), PREVIOUS_AT);
    }
    const oneStack = ONE_STACK_AT.length > 0 ? await rounds("1-stack", undefined, join(dir, "one-stack-run"), ONE_STACK_AT, ONE_STACK) : [];
    const current = AT.length > 0 ? await rounds("this", undefined, join(dir, "this-run"), AT) : [];
    const scaleOutWithoutTemporal =
      SCALE_OUT_WITHOUT_TEMPORAL_AT.length > 0
        ? await rounds(
            "scale-out-no-temporal",
            undefined,
            join(dir, "scale-out-pg-run"),
            SCALE_OUT_WITHOUT_TEMPORAL_AT,
            {},
            { temporal: false },
          )
        : [];
    const scaleOut =
      SCALE_OUT_AT.length > 0 ? await rounds("scale-out", undefined, join(dir, "scale-out-run"), SCALE_OUT_AT, {}, { temporal: true }) : [];
    const statics: StaticRound[] = [];
    for (const members of STATIC_TO) statics.push(await staticRound(join(dir, `static-${members}`), members));
    const row = (label: string, r: Round) =>
      `${label.padEnd(9)} N=${String(r.before).padStart(3)}: every POST /servers ${r.toServers.toFixed(1)} s, every Node Ready ${r.toReady.toFixed(1)} s, batch RUNNING ${r.toRunning.toFixed(1)} s; ${Number.isNaN(r.stateBytesPerMember) ? "" : `${(r.stateBytesPerMember / 1024).toFixed(1)} KiB state/member, `}${Number.isNaN(r.writesPerCreated) ? "" : `${r.writesPerCreated.toFixed(1)} writes/created member, `}${r.requestsPerNode.toFixed(1)} Hetzner requests/node${r.checkpointsInS3 === undefined ? "" : `; ${r.checkpointsInS3} API stack checkpoints in S3`}${r.temporalWorkflows === undefined ? "" : `, ${r.temporalWorkflows} Temporal workflows`}`;
    const lines = [
      `machine: ${cpus().length} cores, ${Math.round(totalmem() / 2 ** 30)} GiB; bursts of ${BURST}, boot delay 0; previous = ${BEFORE_PROVIDER_PLUGIN.slice(0, 12)}`,
      ...[
        ...previous.map((r) => row("previous", r)),
        ...oneStack.map((r) => row("1-stack", r)),
        ...current.map((r) => row("this", r)),
        ...scaleOutWithoutTemporal.map((r) => row("scale-out, no Temporal", r)),
        ...scaleOut.map((r) => row("scale-out", r)),
      ].sort((a, b) => Number(/N= *(\d+)/.exec(a)![1]) - Number(/N= *(\d+)/.exec(b)![1])),
      ...(current.length > 0
        ? [
            `median of this release's rounds, every POST /servers: ${percentile(
              current.map((r) => r.toServers),
              50,
            ).toFixed(1)} s`,
          ]
        : []),
      ...statics.map(
        (r) =>
          `static 0 -> ${r.members}: pulumi up ${r.upSeconds.toFixed(0)} s (the empty stack's first up ${r.emptyUpSeconds.toFixed(0)} s), every Node Ready ${r.toReady.toFixed(0)} s; ${(r.stateBytesPerMember / 1024).toFixed(1)} KiB state/member, ${r.writesPerMember.toFixed(1)} writes/member, ${r.requestsPerMember.toFixed(1)} Hetzner requests/member, the CLI's peak ${r.cliPeakMiB} MiB resident${Object.keys(CLI_ENV).length > 0 ? ` (CLI with ${JSON.stringify(CLI_ENV)})` : ""}`,
      ),
    ];
    process.stdout.write(
      `${JSON.stringify({ benchmark: "fleetScale", previous, oneStack, current, scaleOutWithoutTemporal, scaleOut, statics, lines }, null, 2)}\n`,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
