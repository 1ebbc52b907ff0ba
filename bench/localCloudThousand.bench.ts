/**
 * The local cloud at a thousand machines (issue 35, part 6). Two parts, all on 127.0.0.1:
 * 1. The fake Hetzner API alone: `--machines` servers (default 1000) created over HTTP, 8 at a
 *    time, with a real worker's user data; p50/p99 of the creates (first and last hundred apart, to
 *    show whether a create's cost grows with the servers already there), of paged label-selector
 *    lists, of look-ups by name and of `GET /servers/{id}`; the state's bytes on disk.
 * 2. The whole local cloud (real control plane): `--nodes` servers (default 1000) that the node
 *    agent joins; seconds until every Node is Ready, then over `--idle-seconds` (default 60) with
 *    every Node Ready and nothing else asked of it: the agent's CPU per second (process.cpuUsage of
 *    this process, which runs the agent and the idle fake), kube-apiserver's and etcd's; then the
 *    latency of `GET /api/v1/nodes` (all of them) and of one Node, 20 of each, and whether every
 *    Node stayed Ready.
 * Uses only what main had too, so the same file measures the commit before (bench/README.md).
 */
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { cpus, tmpdir, totalmem } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { encodeK0sJoinToken } from "../components/bootstrap/k0sJoinToken";
import { renderK0sWorkerCloudConfig } from "../components/bootstrap/k0sWorkerCloudConfig";
import { kubeletSchema } from "../components/fleet/fleetSpec";
import { buildFakeHcloud } from "../automation/local/fakeHcloud/fakeHcloudApi";
import { kube } from "../automation/local/kubeClient";
import { type LocalCloud, startLocalCloud } from "../automation/local/localCloud";
import { arg, percentile } from "./benchSetup";
import { processCpuMs, processMemoryMiB } from "./processMemory";

const MACHINES = Number(arg("machines", "1000"));
const NODES = Number(arg("nodes", "1000"));
const IDLE_SECONDS = Number(arg("idle-seconds", "60"));
const READY_TIMEOUT_S = Number(arg("ready-timeout-seconds", "1800"));
const TOKEN = "c".repeat(64);
const POOLS = ["alpha", "beta", "gamma", "delta"];

const log = (line: string) => process.stderr.write(`${new Date().toISOString()} ${line}\n`);
const ms = (values: number[]) => ({ p50: round(percentile(values, 50)), p99: round(percentile(values, 99)), n: values.length });
const round = (x: number) => Math.round(x * 100) / 100;

function userData(name: string, apiServer: string, caPem: string): string {
  return renderK0sWorkerCloudConfig({
    k0sVersion: "v1.33.4+k0s.0",
    joinToken: encodeK0sJoinToken({ apiServer, caCertificate: caPem, token: "benchy.0123456789abcdef" }),
    hostname: name,
    providerID: `cnap:///bench/${name}`,
    labels: { "node.kubernetes.io/pool": "bench" },
    taints: [],
    kubelet: kubeletSchema.parse({}),
  });
}

/** Runs `run(i)` for i in [0, count) with `parallel` at a time; the latency of each, in ms. */
async function timed(count: number, parallel: number, run: (i: number) => Promise<void>): Promise<number[]> {
  const latencies: number[] = new Array(count);
  let next = 0;
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      for (let i = next++; i < count; i = next++) {
        const started = performance.now();
        await run(i);
        latencies[i] = performance.now() - started;
      }
    }),
  );
  return latencies;
}

/** The part of the fake's answers the bench reads. */
interface HcloudAnswer {
  servers: Array<{ id: number }>;
}

async function hcloudCall(base: string, token: string, method: string, path: string, body?: unknown): Promise<HcloudAnswer> {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { Authorization: `Bearer ${token}`, ...(body ? { "Content-Type": "application/json" } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  const answer = (await response.json()) as unknown;
  if (response.status >= 300) throw new Error(`${method} ${path}: HTTP ${response.status}: ${JSON.stringify(answer).slice(0, 300)}`);
  return answer as HcloudAnswer;
}

async function fakeApiPart(dir: string): Promise<Record<string, unknown>> {
  const stateFile = join(dir, "hcloud.json");
  const fake = buildFakeHcloud({ token: TOKEN, stateFile, actionMs: 10, bootDelayMs: 0, rateLimitPerHour: 10_000_000 });
  const base = await fake.app.listen({ port: 0, host: "127.0.0.1" });
  try {
    const call = (method: string, path: string, body?: unknown) => hcloudCall(base, TOKEN, method, path, body);
    const caPem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
    log(`fake API: creating ${MACHINES} servers`);
    const creates = await timed(MACHINES, 8, async (i) => {
      await call("POST", "/servers", {
        name: `m${i}`,
        server_type: "cx22",
        image: "ubuntu-24.04",
        location: "fsn1",
        labels: { pool: POOLS[i % POOLS.length]!, "nodefleet.io/node": `n${i}` },
        user_data: userData(`m${i}`, "https://127.0.0.1:6443", caPem),
      });
    });
    log("fake API: lists, look-ups, gets");
    const pages = Math.ceil(MACHINES / POOLS.length / 50);
    const lists = await timed(200, 4, async (i) => {
      const page = (i % pages) + 1;
      const answer = await call(
        "GET",
        `/servers?label_selector=${encodeURIComponent(`pool=${POOLS[i % POOLS.length]}`)}&per_page=50&page=${page}`,
      );
      if (answer.servers.length === 0) throw new Error(`page ${page} empty`);
    });
    const byName = await timed(500, 4, async (i) => {
      const answer = await call("GET", `/servers?name=m${(i * 7) % MACHINES}`);
      if (answer.servers.length !== 1) throw new Error("name look-up found none");
    });
    const ids = fake.state.servers.map((s) => s.id);
    const gets = await timed(500, 4, async (i) => {
      await call("GET", `/servers/${ids[(i * 13) % ids.length]}`);
    });
    const hundred = Math.min(100, MACHINES);
    const bytes = (path: string) => {
      try {
        return statSync(path).size;
      } catch {
        return 0;
      }
    };
    return {
      servers: MACHINES,
      createMs: ms(creates),
      createFirstHundredMs: ms(creates.slice(0, hundred)),
      createLastHundredMs: ms(creates.slice(-hundred)),
      listLabelSelectorPageMs: ms(lists),
      lookupByNameMs: ms(byName),
      getByIdMs: ms(gets),
      stateBytes: bytes(stateFile) + bytes(`${stateFile}.journal`),
    };
  } finally {
    await fake.app.close();
  }
}

interface NodeList {
  items: Array<{ metadata: { name: string }; status?: { conditions?: Array<{ type: string; status: string }> } }>;
}
const readyCount = (list: NodeList) =>
  list.items.filter((n) => n.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True")).length;

async function localCloudPart(dir: string): Promise<Record<string, unknown>> {
  let cloud: LocalCloud | undefined;
  try {
    cloud = await startLocalCloud({
      dataDir: join(dir, "data"),
      hcloudPort: 0,
      logger: { info() {}, warn() {} },
      env: { ...process.env, NODEFLEET_SIM_BOOT_DELAY_MS: "0" },
    });
    const { plane } = cloud;
    const expiration = new Date(Date.now() + 6 * 3600_000).toISOString().replace(/\.\d{3}Z$/, "Z");
    await kube(plane.admin, "POST", "/api/v1/namespaces/kube-system/secrets", {
      apiVersion: "v1",
      kind: "Secret",
      type: "bootstrap.kubernetes.io/token",
      metadata: { name: "bootstrap-token-benchy", namespace: "kube-system" },
      stringData: { "token-id": "benchy", "token-secret": "0123456789abcdef", expiration, "usage-bootstrap-authentication": "true" },
    });
    const endpoint = cloud.env.HCLOUD_ENDPOINT!;
    const token = cloud.env.HCLOUD_TOKEN!;
    log(`local cloud: creating ${NODES} servers for the agent to join`);
    const started = performance.now();
    await timed(NODES, 8, async (i) => {
      const name = `bench-${i}`;
      await hcloudCall(endpoint, token, "POST", "/servers", {
        name,
        server_type: "cx22",
        image: "ubuntu-24.04",
        location: "fsn1",
        labels: { "nodefleet.io/cluster": "bench" },
        user_data: userData(name, plane.server, plane.admin.caPem),
      });
    });
    const createdS = (performance.now() - started) / 1000;
    let ready = 0;
    let lastLog = 0;
    while (ready < NODES && (performance.now() - started) / 1000 < READY_TIMEOUT_S) {
      await new Promise((r) => setTimeout(r, 5000));
      ready = readyCount((await kube(plane.admin, "GET", "/api/v1/nodes")) as NodeList);
      if (performance.now() - lastLog > 30_000) {
        lastLog = performance.now();
        log(`local cloud: ${ready}/${NODES} Nodes Ready after ${Math.round((performance.now() - started) / 1000)} s`);
      }
    }
    const readyS = (performance.now() - started) / 1000;
    log(`local cloud: ${ready}/${NODES} Ready after ${Math.round(readyS)} s; idle window of ${IDLE_SECONDS} s`);
    // Let the joins' aftermath settle (first Lease and status reports) before the idle window.
    await new Promise((r) => setTimeout(r, 15_000));
    const pids = JSON.parse(readFileSync(join(dir, "data", "local", "control-plane", "pids.json"), "utf8")) as Array<{
      pid: number;
      binary: string;
    }>;
    const pidOf = (name: string) => pids.find((p) => p.binary.endsWith(`/${name}`))!.pid;
    const apiServer = pidOf("kube-apiserver");
    const etcd = pidOf("etcd");
    const cpuBefore = process.cpuUsage();
    const apiBefore = processCpuMs(apiServer);
    const etcdBefore = processCpuMs(etcd);
    const windowStart = performance.now();
    // Nothing else runs in this process meanwhile: its CPU is the agent's (and the idle fake's).
    await new Promise((r) => setTimeout(r, IDLE_SECONDS * 1000));
    const seconds = (performance.now() - windowStart) / 1000;
    const cpu = process.cpuUsage(cpuBefore);
    const apiCpu = processCpuMs(apiServer) - apiBefore;
    const etcdCpu = processCpuMs(etcd) - etcdBefore;
    log("local cloud: the control plane's latency, with the agent's heartbeats going on");
    const listLatencies: number[] = [];
    const getLatencies: number[] = [];
    for (let i = 0; i < 20; i++) {
      let t = performance.now();
      await kube(plane.admin, "GET", "/api/v1/nodes");
      listLatencies.push(performance.now() - t);
      t = performance.now();
      await kube(plane.admin, "GET", `/api/v1/nodes/bench-${(i * 37) % NODES}`);
      getLatencies.push(performance.now() - t);
      await new Promise((r) => setTimeout(r, 500));
    }
    const readyAfter = readyCount((await kube(plane.admin, "GET", "/api/v1/nodes")) as NodeList);
    return {
      nodes: NODES,
      serversCreatedSeconds: round(createdS),
      everyNodeReadySeconds: ready === NODES ? round(readyS) : `${ready} of ${NODES} Ready at the ${READY_TIMEOUT_S} s cap`,
      idleSeconds: round(seconds),
      agentCpuMsPerSecond: round((cpu.user + cpu.system) / 1000 / seconds),
      kubeApiserverCpuMsPerSecond: round(apiCpu / seconds),
      etcdCpuMsPerSecond: round(etcdCpu / seconds),
      kubeApiserverRssMiB: processMemoryMiB(apiServer, "VmRSS"),
      benchProcessRssMiB: Math.round(process.memoryUsage().rss / 2 ** 20),
      listNodesMs: ms(listLatencies),
      getNodeMs: ms(getLatencies),
      readyAfterIdle: readyAfter,
    };
  } finally {
    await cloud?.stop();
  }
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "nodefleet-thousand-bench-"));
  const machine = `${cpus().length} cores, ${Math.round(totalmem() / 2 ** 30)} GiB`;
  try {
    const fakeApi = process.argv.includes("--skip-fake-api") ? undefined : await fakeApiPart(dir);
    const localCloud = process.argv.includes("--skip-local-cloud") ? undefined : await localCloudPart(dir);
    process.stdout.write(`${JSON.stringify({ machine, fakeApi, localCloud }, null, 2)}\n`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

void main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exitCode = 1;
});
