/**
 * The autoscaling loop's speed on the local cloud (real engine, real control plane, Karpenter's
 * controllers with nodefleet's driver; fake servers boot at once): seconds from N pending pods to all
 * N Running for 20 and 100 pods, and the scaling-API requests Karpenter made per NodeClaim. The
 * upstream figure to read them against: bench/README.md.
 */
import { mkdtempSync } from "node:fs";
import { cpus, tmpdir, totalmem } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { kube } from "../automation/local/kubeClient";
import { startKarpenterLoop } from "../test/support/karpenterLocalCloud";

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

async function main(): Promise<void> {
  process.stdout.write(`machine: ${cpus().length} cores, ${Math.round(totalmem() / 2 ** 30)} GiB\n`);
  const loop = await startKarpenterLoop(mkdtempSync(join(tmpdir(), "nodefleet-karpenter-bench-")), {
    bootDelayMs: 0,
    consolidateAfter: "5s",
  });
  try {
    for (const pods of [20, 100]) {
      const requestsBefore = await apiRequests(loop.serve.baseUrl);
      const started = performance.now();
      await loop.inflate(pods, "300m");
      await loop.waitFor(
        `${pods} pods Running`,
        async () => {
          const running = (await loop.list("/api/v1/namespaces/default/pods?labelSelector=app%3Dinflate")).filter(
            (p) => p.status?.phase === "Running",
          );
          return running.length === pods ? true : undefined;
        },
        900_000,
      );
      const seconds = (performance.now() - started) / 1000;
      const claims = (await loop.list("/apis/karpenter.sh/v1/nodeclaims")).length;
      const requests = (await apiRequests(loop.serve.baseUrl)) - requestsBefore;
      process.stdout.write(
        `${pods} pods: all Running after ${seconds.toFixed(1)} s on ${claims} NodeClaims; ${requests} API requests, ${(requests / Math.max(1, claims)).toFixed(1)} per NodeClaim\n`,
      );
      await loop.inflate(0, "300m");
      await loop.waitFor(
        "consolidated to no NodeClaims",
        async () => ((await loop.list("/apis/karpenter.sh/v1/nodeclaims")).length === 0 ? true : undefined),
        900_000,
      );
    }
  } finally {
    await kube(loop.cloud.plane.admin, "DELETE", "/apis/apps/v1/namespaces/default/deployments/inflate").catch(() => undefined);
    await loop.stop();
  }
}

void main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exitCode = 1;
});
