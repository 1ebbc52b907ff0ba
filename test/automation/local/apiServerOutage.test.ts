/**
 * Issue 32: a short control-plane outage must not fail creates for good. `serve --engine automation`
 * on the local cloud gets creates while its kube-apiserver is stopped (the port refuses connections;
 * etcd and the controllers keep running) for at least 20 s and until a run has met the outage; the
 * claims stay PROVISIONING and /readyz says degraded, naming the cluster's API; once the API server
 * is back, every claim ends RUNNING with one server, and none was ever FAILED.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type LocalCloud, startLocalCloud } from "../../../automation/local/localCloud";
import { runPulumi } from "../../../automation/local/localStack";
import { TOKEN } from "../../support/apiHarness";
import { UP, editLocalPools, poolServers } from "../../support/localFleet";
import { localStackProject } from "../../support/localStackProject";
import { type ServeProcess, startServe } from "../../support/serveProcess";
import { LOCAL_CLOUD_TOOLS, missingTools, skipUnlessAvailable } from "../../support/toolchainRequirement";
import { until } from "../../support/until";

const POOL = "local-burst";
const CLAIMS = ["outage-0", "outage-1", "outage-2"];
/** The shortest outage: long enough for the API stack's run to meet it, short enough for a test. */
const OUTAGE_MS = 20_000;
const quiet = { info() {}, warn() {} };

describe("creates during a kube-apiserver outage (real engine, local cloud)", function () {
  this.timeout(900_000);
  let dir: string;
  let cloud: LocalCloud;
  let serve: ServeProcess | undefined;

  before(async function () {
    skipUnlessAvailable(this, missingTools(...LOCAL_CLOUD_TOOLS));
    dir = mkdtempSync(join(tmpdir(), "nodefleet-apiserver-outage-"));
    const project = localStackProject(join(dir, "project"));
    cloud = await startLocalCloud({ dataDir: join(dir, "data"), hcloudPort: 0, agentIntervalMs: 1000, logger: quiet, projectDir: project });
    editLocalPools(cloud, (pools) => pools.filter((p) => p.name === POOL));
    await runPulumi(UP, project, cloud.env);
    serve = await startServe(
      join(dir, "serve"),
      {
        ...cloud.env,
        NODEFLEET_API_TOKENS: `local:${TOKEN}`,
        NODEFLEET_BATCH_IDLE_MS: "300",
        NODEFLEET_RETRY_INITIAL_MS: "1000",
        NODEFLEET_RETRY_MAX_MS: "4000",
        NODEFLEET_LOG_LEVEL: "info",
      },
      { stack: "local", engine: "automation", cwd: project, clusterId: "local", startTimeoutMs: 180_000 },
    );
  });

  after(async function () {
    await cloud?.plane.startApiServer().catch(() => undefined);
    serve?.child.kill("SIGTERM");
    await serve?.exited();
    await cloud?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("keeps the creates PROVISIONING through the outage, degraded on /readyz, and ends them RUNNING, never FAILED", async function () {
    const client = serve!.client;
    const context = () => `serve said:\n${serve!.stderr().slice(-4000)}`;
    const seen = new Map<string, Set<string>>(CLAIMS.map((c) => [c, new Set<string>()]));
    const nodeIds = new Map<string, string>();
    const look = async () => {
      for (const node of await client.listNodes()) {
        const claim = [...nodeIds].find(([, id]) => id === node.nodeID)?.[0];
        if (claim) seen.get(claim)!.add(node.failureCode ? `${node.status} ${node.failureCode}: ${node.failureReason}` : node.status);
      }
    };

    await until(
      "the service ready",
      async () => ((await client.readiness()).body.status === "ready" ? true : undefined),
      120_000,
      context,
      250,
    );
    await cloud.plane.stopApiServer();
    const stoppedAt = Date.now();
    for (const uniqueID of CLAIMS)
      nodeIds.set(uniqueID, (await client.createNode({ uniqueID, pool: POOL, instanceType: "cpx21" })).node.nodeID);
    const ids = new Set(nodeIds.values());

    // The outage lasts until a run for these claims has met it (and at least OUTAGE_MS).
    let degraded: Record<string, unknown> | undefined;
    await until(
      "an engine run to meet the outage",
      async () => {
        await look();
        const readiness = await client.readiness();
        if (readiness.body.status === "degraded") degraded = readiness.body.details;
        const met = (await client.operations()).some((o) => o.finishedAt && o.result === "failed" && o.nodes.some((n) => ids.has(n)));
        return met && Date.now() - stoppedAt >= OUTAGE_MS ? true : undefined;
      },
      240_000,
      context,
    );
    await cloud.plane.startApiServer();
    const outageSeconds = Math.round((Date.now() - stoppedAt) / 1000);

    await until(
      "every claim RUNNING",
      async () => {
        await look();
        const nodes = (await client.listNodes()).filter((n) => ids.has(n.nodeID));
        return nodes.length === CLAIMS.length && nodes.every((n) => n.status === "RUNNING" || n.status === "FAILED") ? true : undefined;
      },
      300_000,
      context,
    );
    for (const [claim, statuses] of seen) {
      assert.ok(
        ![...statuses].some((s) => s.startsWith("FAILED")),
        `${claim} after a ${outageSeconds} s outage went through ${[...statuses].join(" -> ")}`,
      );
    }
    const local = (degraded as { local?: { unreachable?: string; reason?: string } } | undefined)?.local;
    assert.equal(local?.unreachable, "controlPlane", `readyz during the outage: ${JSON.stringify(degraded)}`);
    assert.match(local?.reason ?? "", /kube-apiserver/);
    const servers = (await poolServers(cloud, POOL)).filter((s) => ids.has(s.labels["nodefleet.io/node"]!));
    assert.equal(servers.length, CLAIMS.length, "one server per claim");
    await until("readyz ready again", async () => ((await client.readiness()).body.status === "ready" ? true : undefined), 60_000, context);
  });
});
