/**
 * A fleet-wide change rolling through a static pool of 12 on the local cloud with the real engine
 * (issue "Safe day-2 changes"): a Deployment puts one pod on each node (required anti-affinity,
 * tolerating the pool's taint) under a PodDisruptionBudget allowing one pod down. `pulumi up` is run
 * until the rollout settles, and every run is observed: never more than maxSurge extra servers, no
 * spread group above 10, an old server deleted only once its member's replacement is Ready, each
 * departing Node cordoned before it goes, the budget never broken, and every member replaced.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { kube } from "../../../automation/local/kubeClient";
import { type LocalCloud, startLocalCloud } from "../../../automation/local/localCloud";
import {
  UP,
  allPoolServersReady,
  driveRollout,
  editLocalPool,
  editLocalPools,
  hcloudGet,
  poolNodes,
  poolServers,
} from "../../support/localFleet";
import { runPulumi } from "../../../automation/local/localStack";
import { localStackProject } from "../../support/localStackProject";
import { type HcloudExchange, hcloudOpenApiViolations, recordHcloudExchanges } from "../../support/hcloudOpenApi";
import { until } from "../../support/until";
import { LOCAL_CLOUD_TOOLS, missingTools, skipUnlessAvailable } from "../../support/toolchainRequirement";

const POOL = "local-general";
const MEMBERS = 12;
const ROLLOUT = { maxSurge: 3, maxUnavailable: 0 };

interface PodItem {
  metadata: { name: string; deletionTimestamp?: string };
  spec: { nodeName?: string };
  status: { phase?: string; conditions?: Array<{ type: string; status: string }> };
}

describe("a 12-member rolling replacement with a PodDisruptionBudget on the local cloud (real engine)", function () {
  this.timeout(1_800_000);
  let dir: string;
  let project: string;
  let cloud: LocalCloud;
  const exchanges: HcloudExchange[] = [];

  before(async function () {
    skipUnlessAvailable(this, missingTools(...LOCAL_CLOUD_TOOLS));
    dir = mkdtempSync(join(tmpdir(), "nodefleet-rollout-12-"));
    project = localStackProject(join(dir, "project"));
    cloud = await startLocalCloud({
      dataDir: join(dir, "data"),
      hcloudPort: 0,
      agentIntervalMs: 500,
      logger: { info() {}, warn() {} },
      projectDir: project,
      onFakeHcloud: (fake) => recordHcloudExchanges(fake, exchanges),
    });
    editLocalPools(cloud, (pools) => pools.filter((p) => p.name === POOL));
    editLocalPool(cloud, POOL, (pool) => {
      pool.replicas = MEMBERS;
      pool.rollout = { ...ROLLOUT, drainTimeoutSeconds: 300 };
    });
  });

  after(async function () {
    await cloud?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const pods = async () =>
    ((await kube(cloud.plane.admin, "GET", "/api/v1/namespaces/default/pods?labelSelector=app%3Dspread")) as { items: PodItem[] }).items;
  const healthy = (pod: PodItem) =>
    !pod.metadata.deletionTimestamp && pod.status.conditions?.some((c) => c.type === "Ready" && c.status === "True") === true;

  it("creates 12 members and puts one pod on each under a budget of one disruption", async function () {
    await runPulumi(UP, project, cloud.env);
    const servers = await allPoolServersReady(cloud, POOL);
    assert.equal(servers.length, MEMBERS);
    const admin = cloud.plane.admin;
    await kube(admin, "POST", "/apis/policy/v1/namespaces/default/poddisruptionbudgets", {
      apiVersion: "policy/v1",
      kind: "PodDisruptionBudget",
      metadata: { name: "spread", namespace: "default" },
      spec: { maxUnavailable: 1, selector: { matchLabels: { app: "spread" } } },
    });
    await kube(admin, "POST", "/apis/apps/v1/namespaces/default/deployments", {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: "spread", namespace: "default" },
      spec: {
        replicas: MEMBERS,
        selector: { matchLabels: { app: "spread" } },
        template: {
          metadata: { labels: { app: "spread" } },
          spec: {
            terminationGracePeriodSeconds: 0,
            tolerations: [{ key: "nodefleet.io/local", operator: "Exists", effect: "NoSchedule" }],
            affinity: {
              podAntiAffinity: {
                requiredDuringSchedulingIgnoredDuringExecution: [
                  { labelSelector: { matchLabels: { app: "spread" } }, topologyKey: "kubernetes.io/hostname" },
                ],
              },
            },
            containers: [{ name: "app", image: "registry.invalid/pause:3.9", resources: { requests: { cpu: "100m", memory: "64Mi" } } }],
          },
        },
      },
    });
    const running = await until(
      "a healthy pod on each of the 12 nodes",
      async () => {
        const items = (await pods()).filter(healthy);
        return items.length === MEMBERS ? items : undefined;
      },
      180_000,
    );
    assert.equal(new Set(running.map((p) => p.spec.nodeName)).size, MEMBERS, "one pod per node");
  });

  it("rolls a label change through all 12, a few at a time, draining each old node through the budget", async function () {
    const before = await poolServers(cloud, POOL);
    const oldNames = new Set(before.map((s) => s.name));
    // Watch the cluster while the runs go: cordons, pods per node, and the budget.
    const cordoned = new Set<string>();
    const seenNodes = new Set<string>();
    let fewestHealthy = MEMBERS;
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        try {
          for (const node of await poolNodes(cloud, POOL)) {
            seenNodes.add(node.metadata.name);
            if (node.spec.unschedulable) cordoned.add(node.metadata.name);
          }
          fewestHealthy = Math.min(fewestHealthy, (await pods()).filter(healthy).length);
        } catch {
          // a poll racing a deletion: the next one sees it
        }
        await new Promise((r) => setTimeout(r, 200));
      }
    })();

    editLocalPool(cloud, POOL, (pool) => ((pool.labels as Record<string, string>)["example.com/revision"] = "2"));
    const groupPeaks: number[] = [];
    let rollout;
    try {
      rollout = await driveRollout({
        cloud,
        project,
        pool: POOL,
        members: MEMBERS,
        ...ROLLOUT,
        isNew: (s) => !oldNames.has(s.name),
        maxRuns: 12,
        afterRun: async () => {
          const groups = (await hcloudGet(cloud, `/placement_groups?label_selector=nodefleet.io/pool=${POOL}`)).placement_groups as Array<{
            servers: number[];
          }>;
          groupPeaks.push(Math.max(...groups.map((g) => g.servers.length)));
        },
      });
    } finally {
      watching = false;
      await watcher;
    }

    // Surge: a run creates at most 3 new servers; deletes only what is replaced and Ready.
    assert.ok(
      Math.max(...rollout.serversAfterRun.map((names) => names.length)) === MEMBERS + ROLLOUT.maxSurge,
      `surged to 15: ${rollout.serversAfterRun.map((n) => n.length).join(", ")}`,
    );
    assert.ok(
      rollout.serversAfterRun.length >= 2 * Math.ceil(MEMBERS / ROLLOUT.maxSurge),
      `a few at a time: ${rollout.serversAfterRun.length} runs`,
    );
    assert.ok(
      groupPeaks.every((peak) => peak <= 10),
      `no spread group above 10: ${groupPeaks.join(", ")}`,
    );
    const deleted = rollout.deletedByRun.flat();
    assert.deepEqual([...deleted].sort(), [...oldNames].sort(), "every old server deleted, once");
    // Drain: every old Node was cordoned before it went; the budget held throughout.
    const oldNodesSeen = [...oldNames].filter((name) => seenNodes.has(name));
    assert.equal(oldNodesSeen.length, MEMBERS);
    assert.deepEqual(
      oldNodesSeen.filter((name) => !cordoned.has(name)),
      [],
      "each departing Node was cordoned first",
    );
    assert.ok(
      fewestHealthy >= MEMBERS - 1,
      `the PodDisruptionBudget (maxUnavailable 1) held: at least ${MEMBERS - 1} healthy pods at every look, fewest ${fewestHealthy}`,
    );

    const after = await poolServers(cloud, POOL);
    assert.equal(after.length, MEMBERS);
    const running = await until(
      "12 healthy pods on the new nodes",
      async () => {
        const items = (await pods()).filter(healthy);
        return items.length === MEMBERS && items.every((p) => after.some((s) => s.name === p.spec.nodeName)) ? items : undefined;
      },
      120_000,
    );
    assert.equal(new Set(running.map((p) => p.spec.nodeName)).size, MEMBERS);
  });

  it("exchanged with the fake Hetzner API only what Hetzner's OpenAPI document allows, rollout included", function () {
    assert.ok(exchanges.length > 50, `${exchanges.length} exchanges`);
    assert.deepEqual(exchanges.flatMap(hcloudOpenApiViolations), []);
  });
});
