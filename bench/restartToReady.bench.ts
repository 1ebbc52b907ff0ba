/**
 * Restart-to-ready of `nodefleet serve --engine automation` after a SIGKILL (the service and the
 * CLI processes it started), on the local cloud with one RUNNING node in the store, while the fake
 * Hetzner API is normal, slowed (2 s per call), down (nothing listens), hanging (accepts, never
 * answers) and rate limited (429 to every call). Seconds from the new process's spawn to the first
 * /readyz 200 `ready`, and to the catalog's first fresh read where one can happen. Issue 32, part 5:
 * readiness must not wait on Hetzner. `--rounds N` restarts per condition (default 3).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { freePort } from "../automation/local/freePort";
import { startLocalCloud } from "../automation/local/localCloud";
import { runPulumi } from "../automation/local/localStack";
import { TOKEN } from "../test/support/apiHarness";
import { UP, editLocalPools } from "../test/support/localFleet";
import { localStackProject } from "../test/support/localStackProject";
import { type ServeProcess, crashWithChildren, startServe } from "../test/support/serveProcess";
import { until } from "../test/support/until";
import { arg, percentile } from "./benchSetup";

const POOL = "local-burst";
const ROUNDS = Number(arg("rounds", "3"));
const SLOW_MS = 2000;
type Condition = "normal" | "slowed" | "down" | "hanging" | "rate-limited";
const CONDITIONS: readonly Condition[] = ["normal", "slowed", "down", "hanging", "rate-limited"];

interface Sample {
  readonly ready: number;
  /** Seconds to the first answer without a stale catalog; undefined when none came within 30 s. */
  readonly fresh?: number;
  readonly staleAtReady: boolean;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "nodefleet-restart-bench-"));
  const project = localStackProject(join(dir, "project"));
  let condition: Condition = "normal";
  let releaseHanging: () => void = () => {};
  let hanging = new Promise<void>((resolve) => (releaseHanging = resolve));
  const cloud = await startLocalCloud({
    dataDir: join(dir, "data"),
    hcloudPort: 0,
    agentIntervalMs: 500,
    logger: { info() {}, warn() {} },
    projectDir: project,
    onFakeHcloud: (fake) =>
      fake.app.addHook("onRequest", async (_request, reply) => {
        if (condition === "slowed") await new Promise((resolve) => setTimeout(resolve, SLOW_MS));
        if (condition === "hanging") await hanging;
        if (condition === "rate-limited")
          return reply.code(429).send({ error: { code: "rate_limit_exceeded", message: "limit of 3600 requests per hour reached" } });
        return undefined;
      }),
  });
  const down = `http://127.0.0.1:${await freePort()}/v1`;
  const dataDir = join(dir, "serve");
  const env = (c: Condition) => ({
    ...cloud.env,
    NODEFLEET_API_TOKENS: `local:${TOKEN}`,
    ...(c === "down" ? { HCLOUD_ENDPOINT: down } : {}),
  });
  const start = (c: Condition) =>
    startServe(dataDir, env(c), { stack: "local", engine: "automation", cwd: project, clusterId: "local", startTimeoutMs: 180_000 });
  let serve: ServeProcess | undefined;
  const rows: string[] = [];
  try {
    editLocalPools(cloud, (pools) => pools.filter((p) => p.name === POOL));
    await runPulumi(UP, project, cloud.env);
    serve = await start("normal");
    const { node } = await serve.client.createNode({ uniqueID: "before-restarts", pool: POOL, instanceType: "cpx21" });
    await until(
      "the node RUNNING",
      async () => ((await serve!.client.getNode(node.nodeID)).status === "RUNNING" ? true : undefined),
      300_000,
      () => serve!.stderr().slice(-2000),
    );

    const samples = new Map<Condition, Sample[]>(CONDITIONS.map((c) => [c, []]));
    for (let round = 0; round < ROUNDS; round++) {
      for (const c of CONDITIONS) {
        await crashWithChildren(serve!);
        condition = c;
        hanging = new Promise<void>((resolve) => (releaseHanging = resolve));
        const spawned = performance.now();
        const seconds = () => (performance.now() - spawned) / 1000;
        serve = await start(c);
        const readiness = async () => {
          const response = await fetch(`${serve!.baseUrl}/readyz`);
          return { status: response.status, body: (await response.json()) as { status: string; details?: { catalog?: unknown } } };
        };
        const atReady = await until(
          `ready (${c})`,
          async () => {
            const r = await readiness();
            return r.status === 200 && r.body.status === "ready" ? r : undefined;
          },
          300_000,
          () => serve!.stderr().slice(-2000),
          50,
        );
        const ready = seconds();
        const fresh = await until(
          `a fresh catalog (${c})`,
          async () => ((await readiness()).body.details?.catalog === undefined ? seconds() : seconds() > 30 ? -1 : undefined),
          60_000,
          () => "",
          100,
        );
        samples.get(c)!.push({ ready, ...(fresh >= 0 ? { fresh } : {}), staleAtReady: atReady.body.details?.catalog !== undefined });
        // Hanging calls answer now, so the fake can close at the end.
        releaseHanging();
      }
    }
    condition = "normal";
    const s = (values: number[]) =>
      values.length ? `median ${percentile(values, 50).toFixed(2)} s, max ${Math.max(...values).toFixed(2)} s` : "none within 30 s";
    for (const c of CONDITIONS) {
      const list = samples.get(c)!;
      const fresh = list.flatMap((x) => (x.fresh === undefined ? [] : [x.fresh]));
      rows.push(
        `${c.padEnd(12)} restart-to-ready ${s(list.map((x) => x.ready))} (catalog stale at ready: ${list.filter((x) => x.staleAtReady).length}/${list.length}); catalog fresh ${s(fresh)}`,
      );
    }
  } finally {
    releaseHanging();
    if (serve && serve.child.exitCode === null) {
      serve.child.kill("SIGTERM");
      await serve.exited();
    }
    await cloud.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  process.stdout.write(
    `machine: ${cpus().length} cores; ${ROUNDS} SIGKILL restarts per condition, 1 RUNNING node in the store; slowed = ${SLOW_MS} ms per Hetzner call\n${rows.join("\n")}\n`,
  );
}

void main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exitCode = 1;
});
