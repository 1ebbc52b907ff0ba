/**
 * Scaling API request latency and throughput on loopback (not part of the test command):
 *   npm run build && node dist/bench/apiLoad.bench.js [--duration 5] [--connections 1,10,60]
 * For each connection count: the write scenarios (create, createKeepAlive, createKeepAliveLogged,
 * createKeepAliveFronted and, with wrk installed, createDeleteWrk beside its WithoutStore and Floor variants) and the read
 * ones (replay, get, list), against a service in a child process (apiLoadServer.ts), beside an
 * empty-route floor. `--only create|wrk` runs a subset; `--cpu-prof [--cpu-prof-dir DIR]` profiles
 * the service. Prints one JSON document on stdout, progress on stderr; bench/README.md says what
 * each scenario and figure means.
 */
import { fork, spawn, spawnSync, type ChildProcess } from "node:child_process";
import * as os from "node:os";
import * as path from "node:path";
import autocannon from "autocannon";
import { NodefleetClient } from "../automation/client/nodefleetClient";
import { TOKEN } from "../test/support/apiHarness";
import type { ServerAnswer, ServerRequest } from "./apiLoadServer";
import { arg, busyCores, machineCpuTimes, perRequest, quantiles } from "./benchSetup";
import { createDeleteLoad } from "./createDeleteLoad";

/** The service runs in a child process (apiLoadServer.ts); one fresh service at a time. */
class BenchServer {
  private readonly child: ChildProcess;

  constructor() {
    const profile = process.argv.includes("--cpu-prof") ? ["--cpu-prof", `--cpu-prof-dir=${arg("cpu-prof-dir", ".")}`] : [];
    this.child = fork(path.join(__dirname, "apiLoadServer.js"), [], { execArgv: profile, stdio: ["ignore", "inherit", "inherit", "ipc"] });
  }

  private ask(request: ServerRequest): Promise<ServerAnswer> {
    return new Promise((resolve, reject) => {
      const onExit = (code: number | null) => reject(new Error(`the bench server exited (${code})`));
      this.child.once("exit", onExit);
      this.child.once("message", (answer: ServerAnswer) => {
        this.child.off("exit", onExit);
        resolve(answer);
      });
      this.child.send(request);
    });
  }

  /** A fresh service; `withoutStore`: its claims in memory (MemoryClaimStore: not durable, measurement only). */
  async open(batchIdleMs: number, logged = false, withoutStore = false, fronted = false) {
    const { port } = (await this.ask({ open: batchIdleMs, logged, withoutStore, fronted })) as { port: number };
    const baseUrl = `http://127.0.0.1:${port}`;
    return { baseUrl, client: new NodefleetClient({ baseUrl, clusterId: "example", token: TOKEN }) };
  }

  /** One empty Fastify route instead of the service: the machine's floor. */
  async openFloor(): Promise<string> {
    const { port } = (await this.ask({ floor: true })) as { port: number };
    return `http://127.0.0.1:${port}`;
  }

  /** Stops the service; its group commits and checkpoints (undefined where the service has no counter). */
  async close(): Promise<{ commits: number | undefined; checkpoints: number | undefined }> {
    return (await this.ask({ close: true })) as { commits: number | undefined; checkpoints: number | undefined };
  }

  /** CPU time the service process has used so far. */
  async cpuMs(): Promise<number> {
    return ((await this.ask({ cpu: true })) as { cpuMs: number }).cpuMs;
  }

  /** Ends the child and waits for it (a profile is written on the way out). */
  async exit(): Promise<void> {
    const exited = new Promise((resolve) => this.child.once("exit", resolve));
    this.child.disconnect();
    await exited;
  }
}

/**
 * Runs one load and what it cost: the service's CPU milliseconds, this process's (autocannon's;
 * not a child's such as wrk) and the cores the whole machine kept busy meanwhile.
 */
async function measured<T>(
  server: BenchServer,
  load: () => Promise<T>,
): Promise<{ result: T; cpuMs: number; loadCpuMs: number; machineBusyCores: number }> {
  const cpuBefore = await server.cpuMs();
  const machineBefore = machineCpuTimes();
  const loadBefore = process.cpuUsage();
  const result = await load();
  const loadUsage = process.cpuUsage(loadBefore);
  const machineBusyCores = busyCores(machineBefore, machineCpuTimes());
  const cpuMs = (await server.cpuMs()) - cpuBefore;
  return { result, cpuMs, loadCpuMs: (loadUsage.user + loadUsage.system) / 1000, machineBusyCores };
}

async function main(): Promise<void> {
  const duration = Number(arg("duration", "5"));
  const levels = arg("connections", "1,10,60").split(",").map(Number);
  const headers = { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" };
  const server = new BenchServer();
  const cannon = async (title: string, connections: number, options: autocannon.Options) => {
    process.stderr.write(`autocannon ${title} (${duration}s, ${connections} connections)...\n`);
    const { result, cpuMs, loadCpuMs, machineBusyCores } = await measured(server, () => autocannon({ ...options, duration, connections }));
    return {
      connections,
      requestsPerSecond: result.requests.average,
      latencyMs: { p50: result.latency.p50, p99: result.latency.p99, max: result.latency.max },
      total: result.requests.total,
      serverCpuMsPerRequest: perRequest(cpuMs, result.requests.total),
      loadCpuMsPerRequest: perRequest(loadCpuMs, result.requests.total),
      machineBusyCores,
      non2xx: result.non2xx,
      errors: result.errors,
    };
  };

  // --only create: every write scenario, no reads; --only wrk: wrk's loop alone (with the reads' set-up).
  const only = arg("only", "");
  const writes = only !== "wrk";
  // Reads and replays against 100 RUNNING nodes.
  const reads = await server.open(20);
  const names = Array.from({ length: 100 }, (_, i) => `bench-${i}`);
  const created = await Promise.all(
    names.map((uniqueID) => reads.client.createNode({ uniqueID, pool: "hel1-burst" }, { waitSeconds: 60 })),
  );
  const nodeId = created[0]!.node.nodeID;
  const report: Record<string, unknown[]> = {
    create: [],
    createKeepAlive: [],
    createKeepAliveLogged: [],
    createKeepAliveFronted: [],
    createDeleteWrk: [],
    createDeleteWrkWithoutStore: [],
    createDeleteWrkFloor: [],
    replay: [],
    get: [],
    list: [],
    floor: [],
  };
  for (const c of only === "" ? levels : []) {
    report.replay!.push(
      await cannon("POST create replay", c, {
        url: `${reads.baseUrl}/api/v1/clusters/example/nodes`,
        method: "POST",
        headers,
        body: JSON.stringify({ uniqueID: names[0], pool: "hel1-burst" }),
      }),
    );
    report.get!.push(await cannon("GET node", c, { url: `${reads.baseUrl}/api/v1/clusters/example/nodes/${nodeId}`, headers }));
    report.list!.push(await cannon("GET nodes (100)", c, { url: `${reads.baseUrl}/api/v1/clusters/example/nodes`, headers }));
  }
  await server.close();

  // Creates: every request a new claim, committed before it is answered. A pool holds at most 100
  // nodes (one Hetzner network), so creates run in rounds of 100 against a fresh service each
  // (the batch window held open: admission and the store's commit are what is measured), and the
  // latencies of all rounds are pooled.
  const rounds = Number(arg("rounds", "20"));
  for (const c of writes ? levels : []) {
    const latencies: number[] = [];
    let elapsedMs = 0;
    let non2xx = 0;
    let errors = 0;
    let commits = 0;
    let checkpoints = 0;
    let cpuMs = 0;
    process.stderr.write(`autocannon POST create (${rounds} rounds of 100, ${c} connections)...\n`);
    for (let round = 0; round < rounds; round++) {
      const writes = await server.open(3_600_000);
      let next = 0;
      const cpuBefore = await server.cpuMs();
      const started = performance.now();
      let lastAnswer = started;
      const result = await new Promise<autocannon.Result>((resolve, reject) => {
        const tracker = autocannon(
          {
            url: `${writes.baseUrl}/api/v1/clusters/example/nodes`,
            method: "POST",
            headers,
            connections: c,
            amount: 100,
            requests: [
              { setupRequest: (request) => ({ ...request, body: JSON.stringify({ uniqueID: `load-${next++}`, pool: "hel1-burst" }) }) },
            ],
          },
          (error, done) => (error ? reject(error) : resolve(done)),
        );
        tracker.on("response", (_client, _status, _bytes, ms) => {
          latencies.push(ms);
          lastAnswer = performance.now();
        });
      });
      // Until the last answer: autocannon itself only stops at its next one-second tick.
      elapsedMs += lastAnswer - started;
      cpuMs += (await server.cpuMs()) - cpuBefore;
      non2xx += result.non2xx;
      errors += result.errors;
      // Before group commit there is no counter: one commit per create.
      const closed = await server.close();
      commits += closed.commits ?? result.requests.total;
      checkpoints += closed.checkpoints ?? 0;
    }
    report.create!.push({
      connections: c,
      requestsPerSecond: Math.round(latencies.length / (elapsedMs / 1000)),
      latencyMs: quantiles(latencies),
      total: latencies.length,
      serverCpuMsPerRequest: perRequest(cpuMs, latencies.length),
      commits,
      checkpoints,
      non2xx,
      errors,
    });
  }

  // Creates over kept-alive connections: each connection creates a node, deletes it (a PENDING
  // claim is gone at once, so at most one node per connection holds a place in the pool), and so on;
  // once without a logger, once with `serve`'s (two info lines per request, written synchronously).
  for (const [scenario, c] of (writes ? levels : []).flatMap(
    (c) =>
      [
        ["createKeepAlive", c],
        ["createKeepAliveLogged", c],
        ["createKeepAliveFronted", c],
      ] as const,
  )) {
    const service = await server.open(3_600_000, scenario === "createKeepAliveLogged", false, scenario === "createKeepAliveFronted");
    process.stderr.write(
      `autocannon POST create + DELETE (${duration}s, ${c} kept-alive connections${scenario === "createKeepAliveLogged" ? ", logged" : scenario === "createKeepAliveFronted" ? ", through the front" : ""})...\n`,
    );
    const {
      result: { result, creates, deletes },
      cpuMs,
      loadCpuMs,
      machineBusyCores,
    } = await measured(server, () => createDeleteLoad(service.baseUrl, { connections: c, durationSeconds: duration }));
    const { commits, checkpoints } = await server.close();
    report[scenario]!.push({
      connections: c,
      requestsPerSecond: Math.round(creates.length / duration),
      latencyMs: quantiles(creates),
      total: creates.length,
      deleteLatencyMs: quantiles(deletes),
      serverCpuMsPerRequest: perRequest(cpuMs, result.requests.total),
      loadCpuMsPerRequest: perRequest(loadCpuMs, result.requests.total),
      machineBusyCores,
      commits,
      checkpoints,
      non2xx: result.non2xx,
      errors: result.errors,
    });
  }

  // The same loop driven by wrk (C, one thread) where it is installed: autocannon's JavaScript takes
  // most of a core on a two-core machine, so there the service shares the machine with its load
  // generator. Latencies are of creates and deletes together (wrk reports them pooled). At each
  // connection count, side by side: the service; the service with its claims in memory (no SQLite,
  // no fsync: the most any durable store could give); empty routes answering the same requests (the floor).
  const wrk = spawnSync("wrk", ["--version"], { encoding: "utf8" });
  if (wrk.error) report.createDeleteWrk!.push({ skipped: "wrk is not installed (Debian: apt-get install wrk)" });
  else {
    const script = path.join(__dirname, "..", "..", "bench", "createDeleteLoop.lua");
    const targets: Array<{ key: string; title: string; open: () => Promise<string> }> = [
      { key: "createDeleteWrk", title: "service", open: async () => (await server.open(3_600_000)).baseUrl },
      {
        key: "createDeleteWrkWithoutStore",
        title: "service, claims in memory",
        open: async () => (await server.open(3_600_000, false, true)).baseUrl,
      },
      { key: "createDeleteWrkFloor", title: "empty routes (floor)", open: () => server.openFloor() },
    ];
    for (const c of levels) {
      for (const target of targets) {
        const baseUrl = await target.open();
        process.stderr.write(`wrk POST create + DELETE, ${target.title} (${duration}s, ${c} kept-alive connections)...\n`);
        const {
          result: run,
          cpuMs,
          machineBusyCores,
        } = await measured(server, () =>
          runWrk(["-t1", `-c${c}`, `-d${duration}s`, "-s", script, baseUrl, "--", TOKEN, "example", "hel1-burst"]),
        );
        const { commits, checkpoints } = await server.close();
        const seconds = run.durationUs / 1e6;
        report[target.key]!.push({
          connections: c,
          createsPerSecond: Math.round(run.creates / seconds),
          requestsPerSecond: Math.round(run.requests / seconds),
          latencyMs: { p50: run.p50Us / 1000, p99: run.p99Us / 1000, max: run.maxUs / 1000 },
          creates: run.creates,
          deletes: run.deletes,
          serverCpuMsPerRequest: perRequest(cpuMs, run.requests),
          machineBusyCores,
          commits,
          checkpoints,
          failures: run.failures,
          socketErrors: run.socketErrors,
        });
      }
    }
  }

  // The floor: one empty Fastify route, the same body and connections. No service on this machine
  // answers faster than this; the targets are read against it.
  for (const c of writes ? levels : []) {
    const floorUrl = await server.openFloor();
    report.floor!.push(
      await cannon("POST empty Fastify route (floor)", c, {
        url: `${floorUrl}/floor`,
        method: "POST",
        headers,
        body: JSON.stringify({ uniqueID: "floor", pool: "hel1-burst" }),
      }),
    );
    await server.close();
  }
  await server.exit();
  process.stdout.write(
    `${JSON.stringify({ machine: { cpus: os.cpus().length, node: process.version }, durationSeconds: duration, ...report }, null, 2)}\n`,
  );
}

interface WrkResult {
  creates: number;
  deletes: number;
  failures: number;
  requests: number;
  durationUs: number;
  p50Us: number;
  p99Us: number;
  maxUs: number;
  socketErrors: number;
}

/** Runs wrk (not blocking this process's event loop) and reads the line createDeleteLoop.lua prints. */
function runWrk(args: string[]): Promise<WrkResult> {
  return new Promise((resolve, reject) => {
    const child = spawn("wrk", args, { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (out += chunk.toString()));
    child.on("error", reject);
    child.on("close", (code) => {
      const line = out.split("\n").find((l) => l.startsWith("WRK_RESULT "));
      if (code !== 0 || !line) reject(new Error(`wrk exited ${code}: ${out.slice(-1000)}`));
      else resolve(JSON.parse(line.slice("WRK_RESULT ".length)) as WrkResult);
    });
  });
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
