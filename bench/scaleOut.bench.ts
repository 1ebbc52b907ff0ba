/**
 * Issue 40's throughput benchmark: durable creates (each followed by its delete, apiLoad's
 * `createKeepAlive` loop) at `--connections` (default 60) kept-alive connections, in one run, against
 * one embedded `serve` (claims in SQLite in its data directory) and against two `serve` replicas of
 * the same cluster sharing one throwaway PostgreSQL database (NODEFLEET_DATABASE_URL), the load
 * spread over both (autocannon per replica, half the connections each). Every service is a real
 * `nodefleet serve --engine simulated` process; the batch window stays open, so what is measured is
 * the API and its store. Per target: creates a second, p50/p99/max of the creates and the deletes,
 * the CPU milliseconds per create of each service process and of PostgreSQL (all its processes), the
 * load generator's, and the cores the machine kept busy.
 *   npm run build && node dist/bench/scaleOut.bench.js [--connections 60] [--duration 10] [--rounds 1] [--replicas 2]
 * Prints one JSON document on stdout, progress on stderr; bench/README.md has the figures.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { cpus, tmpdir, totalmem } from "node:os";
import { join } from "node:path";
import { descendantProcesses, parentPid, processIds } from "../automation/engine/cliProcesses";
import { fileBackendUrl } from "../automation/engine/fileBackendState";
import { suitePostgres } from "../test/support/postgresServer";
import { type ServeProcess, startServe, stopServe } from "../test/support/serveProcess";
import { until } from "../test/support/until";
import { arg, busyCores, machineCpuTimes, perRequest, quantiles } from "./benchSetup";
import { type CreateDeleteRun, createDeleteLoad } from "./createDeleteLoad";
import { processCpuMs } from "./processMemory";
import pg from "pg";

const CONNECTIONS = Number(arg("connections", "60"));
const DURATION = Number(arg("duration", "10"));
const ROUNDS = Number(arg("rounds", "1"));
/** How many replicas share the database, one target per count (default 2; `1,2` adds one replica alone on PostgreSQL). */
const REPLICAS = arg("replicas", "2").split(",").map(Number);

/** What every service of the bench runs with: the batch window held open, no request rate limit, warnings only. */
const SERVICE_ENV = {
  NODEFLEET_BATCH_IDLE_MS: "3600000",
  NODEFLEET_BATCH_MAX_MS: "3600000",
  NODEFLEET_RATE_LIMIT_PER_MINUTE: "0",
  NODEFLEET_LOG_LEVEL: "warn",
};

const log = (line: string) => process.stderr.write(`${line}\n`);

/** The PostgreSQL server this process started (its postmaster, a child of ours) and its backends. */
function postgresProcesses(): number[] {
  const postmaster = processIds().find((pid) => {
    try {
      return parentPid(pid) === process.pid && readFileSync(`/proc/${pid}/comm`, "utf8").trim() === "postgres";
    } catch {
      return false;
    }
  });
  return postmaster === undefined ? [] : [postmaster, ...descendantProcesses(postmaster)];
}

/** CPU ms of the processes; one gone meanwhile counts 0. */
function cpuMsOf(pids: readonly number[]): number {
  return pids.reduce((sum, pid) => {
    try {
      return sum + processCpuMs(pid);
    } catch {
      return sum;
    }
  }, 0);
}

/**
 * Samples the database's sessions every 100 ms while a load runs (pg_stat_activity): how many of the
 * services' sessions were, on average, running, waiting on a lock or idle inside a transaction, and
 * on what they waited. Where a shared database's creates spend their time.
 */
async function sampleSessions(url: string): Promise<{ stop: () => Promise<Record<string, number>> }> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const tally = new Map<string, number>();
  let samples = 0;
  let pending: Promise<unknown> = Promise.resolve();
  const timer = setInterval(() => {
    pending = client
      .query<{ what: string; n: string }>(
        `SELECT CASE WHEN state = 'active' AND wait_event_type IS NOT NULL THEN 'waiting ' || wait_event_type || ':' || wait_event ELSE state END AS what, count(*) AS n
         FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend' GROUP BY 1`,
      )
      .then(({ rows }) => {
        samples += 1;
        for (const row of rows) tally.set(row.what, (tally.get(row.what) ?? 0) + Number(row.n));
      });
  }, 100);
  return {
    async stop() {
      clearInterval(timer);
      await pending;
      await client.end();
      return Object.fromEntries([...tally].map(([what, n]) => [what, Math.round((n / Math.max(samples, 1)) * 10) / 10]));
    },
  };
}

async function ready(serve: ServeProcess): Promise<void> {
  await until("the replica ready", async () => ((await serve.client.readiness()).status === 200 ? true : undefined), 120_000);
}

/** One load over `services`, the connections split evenly, all at once; the figures pooled. */
async function measure(label: string, services: readonly ServeProcess[], round: number, databaseUrl?: string) {
  const each = Math.floor(CONNECTIONS / services.length);
  log(`${label}: ${DURATION} s of create + DELETE, ${services.length} × ${each} kept-alive connections (round ${round + 1})...`);
  const servicePids = services.map((s) => s.child.pid!);
  // Backends of connections opened during the load are not in this list: the replicas' pools open theirs at start.
  const pgPids = postgresProcesses();
  const serviceBefore = servicePids.map((pid) => processCpuMs(pid));
  const pgBefore = cpuMsOf(pgPids);
  const machineBefore = machineCpuTimes();
  const sessions = databaseUrl ? await sampleSessions(databaseUrl) : undefined;
  const loadBefore = process.cpuUsage();
  const runs: CreateDeleteRun[] = await Promise.all(
    services.map((s, i) => createDeleteLoad(s.baseUrl, { connections: each, durationSeconds: DURATION, prefix: `r${round}-s${i}` })),
  );
  const loadUsage = process.cpuUsage(loadBefore);
  const machineBusyCores = busyCores(machineBefore, machineCpuTimes());
  const serviceCpuMs = servicePids.map((pid, i) => processCpuMs(pid) - serviceBefore[i]!);
  const pgCpuMs = cpuMsOf(pgPids) - pgBefore;
  const databaseSessions = await sessions?.stop();
  const creates = runs.flatMap((r) => r.creates);
  const deletes = runs.flatMap((r) => r.deletes);
  const requests = runs.reduce((sum, r) => sum + r.result.requests.total, 0);
  const figures = {
    label,
    services: services.length,
    connections: each * services.length,
    createsPerSecond: Math.round(creates.length / DURATION),
    createsPerService: runs.map((r) => r.creates.length),
    latencyMs: quantiles(creates),
    deleteLatencyMs: quantiles(deletes),
    creates: creates.length,
    serviceCpuMsPerCreate: serviceCpuMs.map((ms) => perRequest(ms, creates.length)),
    serviceCoresBusy: serviceCpuMs.map((ms) => Math.round((ms / (DURATION * 1000)) * 100) / 100),
    postgresCpuMsPerCreate: pgPids.length > 0 ? perRequest(pgCpuMs, creates.length) : undefined,
    databaseSessions,
    loadCpuMsPerRequest: perRequest((loadUsage.user + loadUsage.system) / 1000, requests),
    machineBusyCores,
    non2xx: runs.reduce((sum, r) => sum + r.result.non2xx, 0),
    errors: runs.reduce((sum, r) => sum + r.result.errors, 0),
  };
  log(`${label}: ${JSON.stringify(figures)}`);
  return figures;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "nodefleet-scale-out-bench-"));
  const postgres = suitePostgres("the scale-out bench");
  const started: ServeProcess[] = [];
  const results: Array<Awaited<ReturnType<typeof measure>>> = [];
  try {
    for (let round = 0; round < ROUNDS; round++) {
      // The embedded default: one service, its claims in SQLite in its data directory.
      const embedded = await startServe(join(dir, `embedded-${round}`), SERVICE_ENV, { engine: "simulated" });
      started.push(embedded);
      await ready(embedded);
      results.push(await measure("embedded (SQLite)", [embedded], round));
      await stopServe(embedded);

      // Scale-out: replicas on one PostgreSQL database, the simulated cloud and its state shared (file://).
      if (round === 0) await postgres.before();
      for (const count of REPLICAS) {
        const env = {
          ...SERVICE_ENV,
          NODEFLEET_DATABASE_URL: await postgres.createDatabase(`bench_${round}_${count}`),
          NODEFLEET_API_STACK_BACKEND_URL: fileBackendUrl(join(dir, `shared-cloud-${round}-${count}`)),
        };
        const replicas = await Promise.all(
          Array.from({ length: count }, (_, i) => startServe(join(dir, `replica-${round}-${count}-${i}`), env, { engine: "simulated" })),
        );
        started.push(...replicas);
        for (const replica of replicas) await ready(replica);
        results.push(await measure(`${count} replica${count === 1 ? "" : "s"} (PostgreSQL)`, replicas, round, env.NODEFLEET_DATABASE_URL));
        await Promise.all(replicas.map((replica) => stopServe(replica)));
      }
    }
  } finally {
    await Promise.all(started.map((serve) => stopServe(serve)));
    await postgres.after();
    rmSync(dir, { recursive: true, force: true });
  }
  const lines = results.map(
    (r) =>
      `${r.label.padEnd(24)}: ${r.createsPerSecond} creates/s at ${r.connections} connections, p50 ${r.latencyMs.p50} ms, p99 ${r.latencyMs.p99} ms; service CPU ${r.serviceCpuMsPerCreate.join(" + ")} ms/create${r.postgresCpuMsPerCreate === undefined ? "" : `, PostgreSQL ${r.postgresCpuMsPerCreate} ms/create`}; machine ${r.machineBusyCores} cores busy`,
  );
  process.stdout.write(
    `${JSON.stringify(
      {
        benchmark: "scaleOut",
        machine: { cpus: cpus().length, memoryGiB: Math.round(totalmem() / 2 ** 30), node: process.version },
        durationSeconds: DURATION,
        results,
        lines,
      },
      null,
      2,
    )}\n`,
  );
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
