/**
 * The autoscaling loop's speed on the local cloud (real engine, real control plane, Karpenter's
 * controllers with nodefleet's driver): seconds from N pending pods to all N Running, for each pod
 * count (`--pods`, default 100,500) and server boot delay (`--boot-delays-ms`, default 0,20000),
 * and the scaling-API and Hetzner requests per NodeClaim. Each pod asks `--cpu` (default 300m).
 * The upstream figure to read them against: bench/README.md.
 */
import { mkdtempSync } from "node:fs";
import { cpus, tmpdir, totalmem } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { kube } from "../automation/local/kubeClient";
import { startKarpenterLoop, type KarpenterLoop } from "../test/support/karpenterLocalCloud";
import { arg } from "./benchSetup";

const POD_COUNTS = arg("pods", "100,500").split(",").map(Number);
const BOOT_DELAYS_MS = arg("boot-delays-ms", "0,20000").split(",").map(Number);
const CPU = arg("cpu", "300m");

interface Round {
  readonly pods: number;
  readonly bootDelayMs: number;
  readonly secondsToRunning: number;
  readonly nodeClaims: number;
  readonly apiRequestsPerNodeClaim: number;
  readonly hetznerRequestsPerNodeClaim: number;
}

/** Requests the service answered on its API routes (probes and /metrics excluded), from its own metrics. */
async function apiRequests(baseUrl: string): Promise<number> {
  const text = await (await fetch(`${baseUrl}/metrics`)).text();
  let total = 0;
  for (const line of text.split("\n")) {
    const match = /^(?:nodefleet_)?http_request_duration_seconds_count\{([^}]*)\} (\d+(?:\.\d+)?)/.exec(line);
    if (match && /route="\/api\//.test(match[1]!)) total += Number(match[2]);
  }
  return total;
}

const inflatePods = "/api/v1/namespaces/default/pods?labelSelector=app%3Dinflate";

async function round(loop: KarpenterLoop, pods: number, bootDelayMs: number): Promise<Round> {
  const apiBefore = await apiRequests(loop.serve.baseUrl);
  const hetznerBefore = loop.hcloudExchanges.length;
  const started = performance.now();
  await loop.inflate(pods, CPU);
  await loop.allPodsRunning(pods, 1_800_000);
  const secondsToRunning = (performance.now() - started) / 1000;
  const nodeClaims = Math.max(1, (await loop.list("/apis/karpenter.sh/v1/nodeclaims")).length);
  const result: Round = {
    pods,
    bootDelayMs,
    secondsToRunning: Math.round(secondsToRunning * 10) / 10,
    nodeClaims,
    apiRequestsPerNodeClaim: Math.round((((await apiRequests(loop.serve.baseUrl)) - apiBefore) / nodeClaims) * 10) / 10,
    hetznerRequestsPerNodeClaim: Math.round(((loop.hcloudExchanges.length - hetznerBefore) / nodeClaims) * 10) / 10,
  };
  process.stderr.write(`${JSON.stringify(result)}\n`);
  // Back to no node, so the next round starts from an empty pool as this one did: every NodeClaim
  // deleted at once once the pods are gone (consolidation would take a budget's share at a time).
  await loop.inflate(0, CPU);
  await loop.waitFor("no inflate pods", async () => ((await loop.list(inflatePods)).length === 0 ? true : undefined), 600_000);
  await kube(loop.cloud.plane.admin, "DELETE", "/apis/karpenter.sh/v1/nodeclaims");
  await loop.waitFor(
    "no NodeClaims",
    async () => ((await loop.list("/apis/karpenter.sh/v1/nodeclaims")).length === 0 ? true : undefined),
    1_800_000,
  );
  return result;
}

async function main(): Promise<void> {
  const rounds: Round[] = [];
  for (const bootDelayMs of BOOT_DELAYS_MS) {
    const loop = await startKarpenterLoop(mkdtempSync(join(tmpdir(), "nodefleet-karpenter-bench-")), {
      bootDelayMs,
      consolidateAfter: "5s",
    });
    try {
      for (const pods of POD_COUNTS) rounds.push(await round(loop, pods, bootDelayMs));
    } finally {
      await kube(loop.cloud.plane.admin, "DELETE", "/apis/apps/v1/namespaces/default/deployments/inflate").catch(() => undefined);
      await loop.stop();
    }
  }
  const lines = [
    `machine: ${cpus().length} cores, ${Math.round(totalmem() / 2 ** 30)} GiB; pods of ${CPU} cpu`,
    ...rounds.map(
      (r) =>
        `${String(r.pods).padStart(4)} pods, boot ${String(r.bootDelayMs / 1000).padStart(2)} s: all Running after ${r.secondsToRunning.toFixed(1)} s on ${r.nodeClaims} NodeClaims; ${r.apiRequestsPerNodeClaim} API and ${r.hetznerRequestsPerNodeClaim} Hetzner requests per NodeClaim`,
    ),
  ];
  process.stdout.write(`${JSON.stringify({ benchmark: "karpenterScale", rounds, lines }, null, 2)}\n`);
}

void main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exitCode = 1;
});
