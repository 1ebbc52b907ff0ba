/**
 * The local stack's Elastic Metal pool changing size and offer on the real engine (issue #37, part 5):
 * `pulumi up --stack local` brings two members Ready; an offer change replaces them one member per
 * run (`rollout.maxUnavailable` 1), each drained first under a PodDisruptionBudget, its Node Ready
 * again on the new server; scaling to 3 adds one member; scaling to 1 drains the two removed
 * members' Nodes (a budget that refuses the evictions holds their servers until it is relaxed)
 * before their servers are deleted, and removes their Nodes.
 *
 * The order is read where it happens: a hook on the fake Scaleway API looks at the cluster when a
 * server's DELETE arrives, before the fake answers it, and records whether the server's Node was
 * cordoned and which pods were still bound to it.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { KubeApiError, kube } from "../../../automation/local/kubeClient";
import { type LocalCloud, startLocalCloud } from "../../../automation/local/localCloud";
import { LOCAL_ELASTIC_METAL_POOL, runPulumi } from "../../../automation/local/localStack";
import { localStackProject } from "../../support/localStackProject";
import { type PoolNode, UP, editLocalPool, editLocalPools, isReady, poolNodes } from "../../support/localFleet";
import { elasticMetalPoolServers, scalewayGet, skipUnlessElasticMetalMachines } from "../../support/localElasticMetal";
import { until } from "../../support/until";

const ZONE = "fr-par-2";
const POOL = LOCAL_ELASTIC_METAL_POOL;
/** The local pool's offer, and the one it changes to (both sold in fr-par-2 by the fake, with cloud-init; the pool joins over SSH). */
const OFFER = "EM-A610R-NVME";
const NEW_OFFER = "EM-B220E-NVME";
const BARE_METAL_TOLERATION = { key: "nodefleet.io/bare-metal", operator: "Exists", effect: "NoSchedule" };
/** The pool's drain timeout in this test: a drain that cannot finish fails the run in bounded time. */
const DRAIN_TIMEOUT_SECONDS = 180;

type Json = Record<string, any>;

interface PodItem {
  metadata: { name: string; labels?: Record<string, string>; deletionTimestamp?: string; ownerReferences?: Array<{ kind: string }> };
  spec: { nodeName?: string };
  status: { conditions?: Array<{ type: string; status: string }> };
}

/** What the cluster showed when a server's DELETE reached the fake Scaleway API. */
interface ServerDeletion {
  readonly at: number;
  readonly serverId: string;
  readonly name: string;
  readonly offerId: string;
  /** The Node named like the server: cordoned, not cordoned, or gone. */
  readonly node: "cordoned" | "schedulable" | "absent";
  /** Pods still bound to that Node (`namespace/name`), DaemonSet pods aside. */
  readonly pods: readonly string[];
}

const healthy = (pod: PodItem) =>
  !pod.metadata.deletionTimestamp && pod.status.conditions?.some((c) => c.type === "Ready" && c.status === "True") === true;

describe("the local stack's Elastic Metal pool scaled 2 -> 3 -> 1 and moved to another offer (real engine, drains first)", function () {
  this.timeout(600_000);
  let dir: string;
  let project: string;
  let cloud: LocalCloud;
  const logged: string[] = [];
  const deletions: ServerDeletion[] = [];
  const timings: string[] = [];

  const admin = () => cloud.plane.admin;
  const scw = (path: string) => scalewayGet(cloud, path);
  const metalServers = () => elasticMetalPoolServers(cloud, ZONE);
  const offerId = async (name: string): Promise<string> =>
    ((await scw(`/baremetal/v1/zones/${ZONE}/offers?name=${name}`)).offers as Json[])[0]!.id as string;
  const readyNodes = async (count: number): Promise<PoolNode[]> =>
    until(
      `${count} Ready ${POOL} Nodes`,
      async () => {
        const nodes = await poolNodes(cloud, POOL);
        return nodes.length === count && nodes.every(isReady) ? nodes : undefined;
      },
      120_000,
      () => logged.slice(-20).join("\n"),
    );
  const pods = async (selector: string): Promise<PodItem[]> =>
    ((await kube(admin(), "GET", `/api/v1/namespaces/default/pods?labelSelector=${encodeURIComponent(selector)}`)) as { items: PodItem[] })
      .items;
  const timed = async <T>(what: string, run: () => Promise<T>): Promise<T> => {
    const started = Date.now();
    const result = await run();
    timings.push(`${what} ${((Date.now() - started) / 1000).toFixed(1)} s`);
    return result;
  };
  const up = (what: string) => timed(what, () => runPulumi(UP, project, cloud.env));
  /** The removal drains in the stack's state, by URN, with the instant the engine created each. */
  const removalDrains = async (): Promise<Map<string, string>> => {
    const file = join(dir, "state.json");
    await runPulumi(["stack", "export", "--stack", "local", "--file", file], project, cloud.env);
    const resources = ((JSON.parse(readFileSync(file, "utf8")) as Json).deployment.resources ?? []) as Json[];
    return new Map(resources.filter((r) => r.type === "nodefleet:kubernetes:NodeDrain").map((r) => [r.urn as string, r.created as string]));
  };

  /** At a server's DELETE, before the fake deletes it: its Node's cordon and the pods still on it. */
  const observeDeletion = async (serverId: string): Promise<void> => {
    const server = cloud.scaleway.state.get("servers", serverId);
    if (!server || deletions.some((d) => d.serverId === serverId)) return;
    let node: ServerDeletion["node"] = "absent";
    try {
      const found = (await kube(admin(), "GET", `/api/v1/nodes/${server.name}`)) as PoolNode;
      node = found.spec.unschedulable === true ? "cordoned" : "schedulable";
    } catch (error) {
      if (!(error instanceof KubeApiError && error.status === 404)) throw error;
    }
    const selector = encodeURIComponent(`spec.nodeName=${server.name}`);
    const bound = ((await kube(admin(), "GET", `/api/v1/pods?fieldSelector=${selector}`)) as { items: PodItem[] }).items;
    deletions.push({
      at: Date.now(),
      serverId,
      name: server.name,
      offerId: server.offerId,
      node,
      pods: bound
        .filter((p) => !(p.metadata.ownerReferences ?? []).some((o) => o.kind === "DaemonSet"))
        .map((p) => `default/${p.metadata.name}`),
    });
  };

  before(async function () {
    skipUnlessElasticMetalMachines(this);
    dir = mkdtempSync(join(tmpdir(), "nodefleet-local-metal-scale-"));
    project = localStackProject(join(dir, "project"));
    cloud = await startLocalCloud({
      dataDir: join(dir, "data"),
      hcloudPort: 0,
      agentIntervalMs: 300,
      logger: { info() {}, warn: (_fields: unknown, message: string) => logged.push(message) },
      projectDir: project,
      elasticMetalPool: true,
      onFakeScaleway: (fake) =>
        fake.app.addHook("onRequest", async (request) => {
          const match = /^\/baremetal\/v1\/zones\/[^/]+\/servers\/([0-9a-f-]{36})$/.exec(request.url.split("?")[0]!);
          if (request.method === "DELETE" && match) await observeDeletion(match[1]!);
        }),
    });
    // The Elastic Metal pool alone: the Hetzner Cloud pools have their own tests.
    editLocalPools(cloud, (pools) => pools.filter((p) => p.name === POOL));
    editLocalPool(cloud, POOL, (pool) => {
      pool.rollout = { maxUnavailable: 1, drainTimeoutSeconds: DRAIN_TIMEOUT_SECONDS };
    });
  });

  after(async function () {
    if (timings.length) process.stdout.write(`      (runs: ${timings.join(", ")})\n`);
    await cloud?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("brings the pool's two members Ready", async function () {
    await up("up at 2");
    const nodes = await readyNodes(2);
    assert.equal((await metalServers()).length, 2);
    const drains = await removalDrains();
    assert.deepEqual(
      [...drains.keys()].map((urn) => urn.split("::").pop()).sort(),
      nodes.map((n) => `${n.metadata.name}-removal-drain`).sort(),
      "each member has its drain before removal",
    );
    assert.ok(
      [...drains.values()].every((created) => typeof created === "string" && created !== ""),
      "the state says when each was created",
    );
    assert.ok(nodes.every((n) => n.metadata.labels["node.kubernetes.io/instance-type"] === OFFER));
  });

  it("moves the two members to another offer one per run, each drained first within a PodDisruptionBudget, Ready again on its new server", async function () {
    // One pod per member, a budget of one disruption: a drain may take a pod only while the other is healthy.
    await kube(admin(), "POST", "/apis/policy/v1/namespaces/default/poddisruptionbudgets", {
      apiVersion: "policy/v1",
      kind: "PodDisruptionBudget",
      metadata: { name: "metal-spread" },
      spec: { maxUnavailable: 1, selector: { matchLabels: { app: "metal-spread" } } },
    });
    await kube(admin(), "POST", "/apis/apps/v1/namespaces/default/deployments", {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: "metal-spread" },
      spec: {
        replicas: 2,
        selector: { matchLabels: { app: "metal-spread" } },
        template: {
          metadata: { labels: { app: "metal-spread" } },
          spec: {
            terminationGracePeriodSeconds: 0,
            nodeSelector: { "node.kubernetes.io/pool": POOL },
            tolerations: [BARE_METAL_TOLERATION],
            affinity: {
              podAntiAffinity: {
                requiredDuringSchedulingIgnoredDuringExecution: [
                  { labelSelector: { matchLabels: { app: "metal-spread" } }, topologyKey: "kubernetes.io/hostname" },
                ],
              },
            },
            containers: [{ name: "app", image: "registry.invalid/pause:3.9" }],
          },
        },
      },
    });
    const spreadReady = (count: number) =>
      until(
        `${count} healthy metal-spread pods on distinct Nodes`,
        async () => {
          const items = (await pods("app=metal-spread")).filter(healthy);
          return items.length === count && new Set(items.map((p) => p.spec.nodeName)).size === count ? items : undefined;
        },
        120_000,
      );
    await spreadReady(2);
    const before = await metalServers();
    const drainsBefore = await removalDrains();
    const newOfferId = await offerId(NEW_OFFER);
    assert.notEqual(await offerId(OFFER), newOfferId);

    let fewestHealthy = 2;
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        fewestHealthy = Math.min(fewestHealthy, (await pods("app=metal-spread").catch(() => [])).filter(healthy).length);
        await new Promise((r) => setTimeout(r, 200));
      }
    })();
    editLocalPool(cloud, POOL, (pool) => {
      pool.offer = NEW_OFFER;
    });
    const replacedByRun: string[][] = [];
    try {
      for (let run = 1; run <= 2; run++) {
        const seen = deletions.length;
        await up(`offer change run ${run}`);
        replacedByRun.push(deletions.slice(seen).map((d) => d.name));
        // The member replaced this run is Ready again before the next run may take the other.
        await readyNodes(2);
        await spreadReady(2);
      }
    } finally {
      watching = false;
      await watcher;
    }
    assert.deepEqual(
      replacedByRun.map((names) => names.length),
      [1, 1],
      `one member per run: ${JSON.stringify(replacedByRun)}`,
    );
    assert.deepEqual([...replacedByRun.flat()].sort(), before.map((s) => s.name as string).sort(), "each member replaced once");
    for (const deletion of deletions) {
      assert.equal(deletion.node, "cordoned", `${deletion.name}'s Node was cordoned when its server's delete arrived`);
      assert.deepEqual(deletion.pods, [], `${deletion.name} was drained before its server's delete`);
    }
    assert.ok(fewestHealthy >= 1, `the budget held: at least one healthy pod at every look (fewest ${fewestHealthy})`);
    const after = await metalServers();
    assert.equal(after.length, 2);
    const nodes = await readyNodes(2);
    for (const server of after) {
      assert.ok(!before.some((s) => s.id === server.id), `${server.name} runs on a new server`);
      assert.equal(server.offer_id, newOfferId, `${server.name} has the new offer`);
      const node = nodes.find((n) => n.metadata.name === server.name)!;
      assert.ok(node, `${server.name}'s Node`);
      assert.equal(node.spec.unschedulable ?? false, false, "uncordoned after its join");
      assert.equal(node.metadata.labels["node.kubernetes.io/instance-type"], NEW_OFFER);
      const records = cloud.scaleway
        .machines!.machine(server.id as string)!
        .records()
        .map((r) => `${r.tool} ${r.verb}`);
      assert.ok(records.includes("k0s start"), `the new server's machine joined: ${records.join("; ")}`);
    }
    assert.deepEqual(
      await removalDrains(),
      drainsBefore,
      "a replacement keeps the member's drain before removal (the update drain drained it)",
    );
    await kube(admin(), "DELETE", "/apis/apps/v1/namespaces/default/deployments/metal-spread");
    await kube(admin(), "DELETE", "/apis/policy/v1/namespaces/default/poddisruptionbudgets/metal-spread");
  });

  it("scales to 3: one more member Ready, the two running ones untouched", async function () {
    const before = await metalServers();
    editLocalPool(cloud, POOL, (pool) => {
      pool.replicas = 3;
    });
    await up("scale to 3");
    await readyNodes(3);
    const after = await metalServers();
    assert.equal(after.length, 3, "three servers");
    for (const server of before)
      assert.ok(
        after.some((s) => s.id === server.id),
        `${server.name} kept its server`,
      );
  });

  it("scales to 1: drains each removed member (held by a PodDisruptionBudget until relaxed) before its server is deleted, and removes its Node", async function () {
    const servers = await metalServers();
    const names = servers.map((s) => s.name as string).sort();
    const [kept, ...removed] = names;
    assert.equal(removed.length, 2);
    // A pod on each member that goes, and a budget that at first refuses every eviction.
    for (const [i, nodeName] of removed.entries())
      await kube(admin(), "POST", "/api/v1/namespaces/default/pods", {
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: `drain-probe-${i}`, labels: { app: "drain-probe" } },
        spec: {
          terminationGracePeriodSeconds: 0,
          nodeSelector: { "kubernetes.io/hostname": nodeName },
          tolerations: [BARE_METAL_TOLERATION],
          containers: [{ name: "app", image: "registry.invalid/pause:3.9" }],
        },
      });
    await kube(admin(), "POST", "/apis/policy/v1/namespaces/default/poddisruptionbudgets", {
      apiVersion: "policy/v1",
      kind: "PodDisruptionBudget",
      metadata: { name: "drain-probe" },
      spec: { minAvailable: 2, selector: { matchLabels: { app: "drain-probe" } } },
    });
    await until(
      "both drain probes healthy and counted by their budget",
      async () => {
        const probes = (await pods("app=drain-probe")).filter(healthy);
        const budget = (await kube(admin(), "GET", "/apis/policy/v1/namespaces/default/poddisruptionbudgets/drain-probe")) as Json;
        return probes.length === 2 && budget.status?.currentHealthy === 2 ? true : undefined;
      },
      60_000,
    );

    const seen = deletions.length;
    editLocalPool(cloud, POOL, (pool) => {
      pool.replicas = 1;
    });
    const started = Date.now();
    const run = timed("scale to 1", () => runPulumi(UP, project, cloud.env));
    let failed: unknown;
    run.catch((error: unknown) => (failed = error));
    // The drains cordon both Nodes, and the budget holds every eviction: the servers stay.
    await until(
      "both removed Nodes cordoned by their drains",
      async () => {
        if (failed) throw failed;
        const nodes = await poolNodes(cloud, POOL);
        return removed.every((name) => nodes.find((n) => n.metadata.name === name)?.spec.unschedulable === true) ? true : undefined;
      },
      180_000,
    );
    await new Promise((r) => setTimeout(r, 10_000));
    assert.equal(failed, undefined);
    assert.deepEqual(deletions.slice(seen), [], "no server deleted while the budget refuses the evictions");
    assert.equal((await metalServers()).length, 3);
    assert.equal((await pods("app=drain-probe")).filter(healthy).length, 2, "the budget held both pods");
    const relaxedAt = Date.now();
    await kube(admin(), "PATCH", "/apis/policy/v1/namespaces/default/poddisruptionbudgets/drain-probe", { spec: { minAvailable: 0 } });
    await run;
    timings.push(`(budget relaxed ${((relaxedAt - started) / 1000).toFixed(1)} s into it)`);

    const deleted = deletions.slice(seen);
    assert.deepEqual(deleted.map((d) => d.name).sort(), removed, "the two removed members' servers deleted, once each");
    for (const deletion of deleted) {
      assert.ok(deletion.at > relaxedAt, `${deletion.name}'s server was deleted only after the budget let its pod go`);
      assert.equal(deletion.node, "cordoned", `${deletion.name}'s Node was cordoned when its server's delete arrived`);
      assert.deepEqual(deletion.pods, [], `${deletion.name}'s pod was evicted before its server's delete`);
    }
    assert.deepEqual(await pods("app=drain-probe"), [], "both probes evicted");
    const left = await metalServers();
    assert.deepEqual(
      left.map((s) => s.name),
      [kept],
      "exactly one server left",
    );
    const nodes = await readyNodes(1);
    assert.deepEqual(
      nodes.map((n) => n.metadata.name),
      [kept],
      "the removed members' Nodes are gone",
    );
    assert.deepEqual(
      [...(await removalDrains()).keys()].map((urn) => urn.split("::").pop()),
      [`${kept}-removal-drain`],
      "the removed members' drains left the state with them",
    );
    await runPulumi(["preview", "--stack", "local", "--diff", "--non-interactive", "--expect-no-changes"], project, cloud.env);
  });
});
