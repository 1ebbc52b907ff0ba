/**
 * A fleet-wide change rolling through a static Hetzner Cloud pool across successive runs of the fleet
 * program under mocks: each run gets the servers the previous one declared (its `nodes` output) and
 * which of their Nodes are Ready, exactly what a real `pulumi up` sequence hands the program.
 */
import { strict as assert } from "node:assert";
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import type { MockRunResult } from "../../automation/mocks/runUnderMocks";
import { runUnderMocks } from "../../automation/mocks/runUnderMocks";
import { resolveSecrets } from "../../automation/mocks/secretValues";
import {
  type CurrentHcloudServer,
  type HcloudNodeOutputValues,
  type HcloudPoolRolloutSummary,
  currentHcloudServers,
} from "../../components/hcloud/hcloudNodePool";
import { runProgram } from "../../stacks/fleetProgram";
import { clusterConfig, hcloudStaticPoolConfig, rawFleetConfig } from "../support/fleetConfigFixture";
import { tokenKubeconfig } from "../support/tokenKubeconfig";

const SERVER = "hcloud:index/server:Server";
const PLACEMENT_GROUP = "hcloud:index/placementGroup:PlacementGroup";
const DRAIN = "nodefleet:kubernetes:NodeDrain";
const REMOVAL = "nodefleet:kubernetes:NodeRemoval";
const TOKEN = "nodefleet:kubernetes:NodeBootstrapToken";
const POOL = "hel1-general";

type Run = MockRunResult<Record<string, unknown>>;

function config(k0sVersion: string, pool: Record<string, unknown> = {}) {
  return rawFleetConfig({
    cluster: clusterConfig({ k0sVersion, kubeconfig: tokenKubeconfig("t0ken") }),
    pools: [hcloudStaticPoolConfig({ replicas: 12, ...pool })],
  });
}

async function up(
  k0sVersion: string,
  current: readonly CurrentHcloudServer[] | undefined,
  pool: Record<string, unknown> = {},
): Promise<Run> {
  return runUnderMocks({
    stack: "test",
    config: config(k0sVersion, pool),
    secretKeys: ["nodefleet:cluster"],
    program: () => runProgram(current ? { currentHcloudServers: { [POOL]: current } } : {}),
  });
}

const servers = (run: Run) => run.resources.filter((r) => r.type === SERVER);
const nodesOf = (run: Run) => run.outputs.nodes as HcloudNodeOutputValues[];
const summaryOf = (run: Run) => (run.outputs.rollout as HcloudPoolRolloutSummary[])[0];

/** The next run's view: every server this run declared, Ready when `ready` says so. */
function after(run: Run, ready: (nodeName: string) => boolean): CurrentHcloudServer[] {
  const nodes = nodesOf(run);
  const current = currentHcloudServers(nodes, POOL, new Set(nodes.map((n) => n.nodeName).filter(ready)));
  assert.ok(current, "every node records what the next run needs");
  return current;
}

function assertGroupsWithinLimit(run: Run, current: readonly CurrentHcloudServer[]) {
  // Every server present during the run: those at its start plus the ones it creates.
  const groups = run.resources.filter((r) => r.type === PLACEMENT_GROUP);
  const indexOf = new Map(groups.map((g) => [Number(g.id), Number(/-pg-(\d+)$/.exec(g.name)?.[1])]));
  const perGroup = new Map<number, number>();
  for (const c of current) perGroup.set(c.spreadGroup, (perGroup.get(c.spreadGroup) ?? 0) + 1);
  const existing = new Set(current.map((c) => `example-${c.nodeId}-${c.generation}`));
  for (const s of servers(run)) {
    if (existing.has(s.name)) continue;
    const group = indexOf.get(Number(s.inputs.placementGroupId));
    assert.ok(group !== undefined, `${s.name} is in one of the pool's groups`);
    perGroup.set(group, (perGroup.get(group) ?? 0) + 1);
  }
  for (const [group, count] of perGroup) assert.ok(count <= 10, `spread group ${group} holds ${count} servers during the run`);
}

describe("HcloudNodePool rolling a fleet-wide change across runs (mock runtime)", function () {
  this.timeout(600_000);

  it("replaces a 12-member pool one member at a time, keeping old servers as they are and every member Ready", async () => {
    const first = await up("v1.33.4+k0s.0", undefined);
    assert.equal(servers(first).length, 12);
    let current = after(first, () => true);
    const oldNames = new Set(servers(first).map((s) => s.name));
    const oldInputs = new Map(servers(first).map((s) => [s.name, s.inputs]));

    let run = await up("v1.34.1+k0s.0", current);
    let runs = 1;
    const seenSummaries: HcloudPoolRolloutSummary[] = [];
    for (;;) {
      const summary = summaryOf(run);
      seenSummaries.push(summary);
      const declared = servers(run);
      assert.ok(declared.length <= 13, `run ${runs}: ${declared.length} servers declared, maxSurge is 1`);
      assertGroupsWithinLimit(run, current);
      for (const s of declared.filter((d) => oldNames.has(d.name))) {
        assert.equal(s.inputs.userData, undefined, `${s.name}: a kept old server's user data is not re-rendered`);
        assert.deepEqual(resolveSecrets(s.inputs.labels, true), resolveSecrets(oldInputs.get(s.name)?.labels, true));
      }
      // Every member keeps a Ready server, and each old server goes only once its replacement was Ready.
      const declaredNames = new Set(declared.map((s) => s.name));
      for (const c of current.filter((s) => !declaredNames.has(`example-${s.nodeId}-${s.generation}`))) {
        const replacement = current.find((r) => r.nodeId === c.nodeId && r.generation !== c.generation);
        assert.ok(replacement?.ready, `example-${c.nodeId}-${c.generation} is removed only after its replacement is Ready`);
      }
      // Every server has its drain and Node removal, named by generation.
      const drains = run.resources
        .filter((r) => r.type === DRAIN)
        .map((r) => r.name)
        .sort();
      const removals = run.resources
        .filter((r) => r.type === REMOVAL)
        .map((r) => r.name)
        .sort();
      assert.deepEqual(drains, declared.map((s) => `${s.name}-drain`).sort());
      assert.deepEqual(removals, declared.map((s) => `${s.name}-node-removal`).sort());

      if (summary.remaining === 0 && summary.removing.length === 0) break;
      current = after(run, () => true);
      run = await up("v1.34.1+k0s.0", current);
      assert.ok(++runs <= 30, `rollout still going after ${runs} runs`);
    }
    assert.equal(runs, 25, "12 surges and 12 removals, one step each, then a run with nothing left");
    assert.deepEqual(seenSummaries[0], {
      pool: POOL,
      replacing: ["hel1-general-0"],
      removing: [],
      unprotecting: [],
      remaining: 12,
      waiting: "maxSurge 1 reached",
    });
    assert.deepEqual(
      seenSummaries[1].removing,
      [...oldNames].filter((n) => n.startsWith("example-hel1-general-0-")),
    );
    const final = servers(run);
    assert.equal(final.length, 12);
    for (const s of final) assert.ok(!oldNames.has(s.name), `${s.name} is of the new generation`);
  });

  it("gives each server to create a token of this join window, and deletes the token Secret of registered Nodes", async () => {
    const first = await up("v1.33.4+k0s.0", undefined, { replicas: 2 });
    const surge = await up(
      "v1.34.1+k0s.0",
      after(first, () => true),
      { replicas: 2 },
    );
    const created = servers(surge).find((s) => !servers(first).some((f) => f.name === s.name))!.name;
    const withSecretObject = (run: Run) =>
      run.resources.filter((r) => r.type === TOKEN && r.inputs.secretObject === true).map((r) => r.name);
    assert.deepEqual(withSecretObject(surge), [`${created}-token`], "only the server still to join has a token Secret");
    const token = surge.resources.find((r) => r.name === `${created}-token`);
    assert.match(String(token?.inputs.joinWindow), /^\d+$/);
    const node = nodesOf(surge).find((n) => n.serverName === created);
    assert.equal(node?.memberResources, "plugin", "recorded, so the next run keeps this member's resources");
    const next = await up(
      "v1.34.1+k0s.0",
      after(surge, (n) => n !== created),
      { replicas: 2 },
    );
    const kept = next.resources.find((r) => r.name === `${created}-token`);
    assert.equal(kept?.type, TOKEN, "a booting server keeps its token");
    assert.equal(kept?.inputs.secretObject, true, "and its Secret until its Node registers");
  });

  it("moves an earlier RandomString token to a RandomPassword once its Node has registered, keeping the server", async () => {
    const first = await up("v1.33.4+k0s.0", undefined, { replicas: 2 });
    const [joinedServer, bootingServer] = servers(first).map((s) => s.name);
    // As an earlier nodefleet recorded them: no token source, so their tokens are RandomStrings.
    const earlier = after(first, (n) => n === joinedServer).map(
      ({ bootstrapTokenSecret: _source, memberResources: _resources, ...rest }) => rest,
    );
    const next = await up("v1.33.4+k0s.0", earlier, { replicas: 2 });
    // Same names, same generation: nothing replaced (a running server ignores its user data, which the mocks do not record).
    assert.deepEqual(
      servers(next).map((s) => s.name),
      servers(first).map((s) => s.name),
      "no server replaced",
    );
    const typeOf = (name: string) => next.resources.find((r) => r.name === name)?.type;
    assert.equal(typeOf(`${joinedServer}-token-secret`), undefined, "the registered member's RandomString (its secret as id) is gone");
    assert.equal(typeOf(`${joinedServer}-token-password`), "random:index/randomPassword:RandomPassword");
    assert.equal(typeOf(`${joinedServer}-token-secret-object`), undefined, "and its Secret too");
    assert.equal(
      typeOf(`${bootingServer}-token-secret`),
      "random:index/randomString:RandomString",
      "a member still booting keeps the token it joins with",
    );
    assert.equal(typeOf(`${bootingServer}-token-secret-object`), "kubernetes:core/v1:Secret");
    assert.deepEqual(
      nodesOf(next).map((n) => [n.serverName, n.bootstrapTokenSecret]),
      [
        [joinedServer, "random-password"],
        [bootingServer, "random-string"],
      ],
    );
  });

  it("declares a pool recorded by a nodefleet without rollouts as before, once, instead of guessing its servers", async () => {
    const first = await up("v1.33.4+k0s.0", undefined, { replicas: 2 });
    const legacy = nodesOf(first).map(
      ({ spreadGroup: _group, deleteProtection: _protection, bootstrapTokenSecret: _secret, memberResources: _resources, ...rest }) => rest,
    );
    assert.equal(currentHcloudServers(legacy, POOL, new Set()), undefined);
    // A stand-in API server on 127.0.0.1 that refuses the Node list: the run fails, clearly, naming the cluster.
    const api = http.createServer((_req, res) =>
      res.writeHead(403, { "content-type": "application/json" }).end('{"message":"nodes is forbidden"}'),
    );
    await new Promise<void>((resolve) => api.listen(0, "127.0.0.1", resolve));
    try {
      const server = `http://127.0.0.1:${(api.address() as AddressInfo).port}`;
      const run = await runUnderMocks({
        stack: "test",
        config: rawFleetConfig({
          cluster: clusterConfig({ kubeconfig: tokenKubeconfig("t0ken", server) }),
          pools: [hcloudStaticPoolConfig({ replicas: 2 })],
        }),
        secretKeys: ["nodefleet:cluster"],
        program: () => runProgram({ previousNodes: legacy }).catch((e: unknown) => ({ error: String(e) })),
      });
      assert.match(String(run.outputs.error), /listing the Nodes of cluster example failed: HTTP 403: nodes is forbidden/);
      assert.doesNotMatch(String(run.outputs.error), /t0ken/);
      assert.equal(run.resources.length, 0, "nothing declared");
    } finally {
      await new Promise((resolve) => api.close(resolve));
    }
    const simulated = await runUnderMocks({
      stack: "test",
      config: rawFleetConfig({ pools: [hcloudStaticPoolConfig({ replicas: 2 })] }),
      program: () => runProgram({ previousNodes: legacy, allowMissingKubeconfig: true }),
    });
    assert.deepEqual(
      servers(simulated).map((s) => s.name),
      servers(first).map((s) => s.name),
      "same servers, nothing rolled or renamed",
    );
    assert.ok(
      simulated.resources.some((r) => r.name.endsWith("-token-secret")),
      "the existing tokens keep their resources",
    );
    assert.ok(!simulated.resources.some((r) => r.name.endsWith("-token-password")));
  });

  it("rolls from the previous nodes output and the cluster's Ready Nodes (runProgram({ previousNodes }))", async () => {
    let readyNames: string[] = [];
    const api = http.createServer((req, res) => {
      const ok =
        req.url === `/api/v1/nodes?labelSelector=${encodeURIComponent("nodefleet.io/cluster=example")}` &&
        req.headers.authorization === "Bearer t0ken";
      res.writeHead(ok ? 200 : 404, { "content-type": "application/json" }).end(
        JSON.stringify({
          items: readyNames.map((name) => ({ metadata: { name }, status: { conditions: [{ type: "Ready", status: "True" }] } })),
        }),
      );
    });
    await new Promise<void>((resolve) => api.listen(0, "127.0.0.1", resolve));
    try {
      const kubeconfig = tokenKubeconfig("t0ken", `http://127.0.0.1:${(api.address() as AddressInfo).port}`);
      const run = (k0sVersion: string, previousNodes?: unknown) =>
        runUnderMocks({
          stack: "test",
          config: rawFleetConfig({ cluster: clusterConfig({ k0sVersion, kubeconfig }), pools: [hcloudStaticPoolConfig({ replicas: 3 })] }),
          secretKeys: ["nodefleet:cluster"],
          program: () => runProgram(previousNodes === undefined ? {} : { previousNodes }),
        });
      const first = await run("v1.33.4+k0s.0");
      readyNames = nodesOf(first).map((n) => n.nodeName);
      const surge = await run("v1.34.1+k0s.0", first.outputs.nodes);
      assert.deepEqual(summaryOf(surge).replacing, ["hel1-general-0"]);
      assert.equal(servers(surge).length, 4);
      // The new Node has not registered: the next run waits; once it is Ready, the old server goes.
      const waiting = await run("v1.34.1+k0s.0", surge.outputs.nodes);
      assert.deepEqual([summaryOf(waiting).removing, summaryOf(waiting).waiting], [[], "maxSurge 1 reached"]);
      readyNames = nodesOf(surge).map((n) => n.nodeName);
      const removing = await run("v1.34.1+k0s.0", surge.outputs.nodes);
      assert.deepEqual(
        summaryOf(removing).removing,
        nodesOf(first)
          .filter((n) => n.nodeId === "hel1-general-0")
          .map((n) => n.serverName),
      );
    } finally {
      await new Promise((resolve) => api.close(resolve));
    }
  });

  it("waits while the replacement is not Ready, and drains nothing", async () => {
    const first = await up("v1.33.4+k0s.0", undefined, { replicas: 3 });
    const start = after(first, () => true);
    const surge = await up("v1.34.1+k0s.0", start, { replicas: 3 });
    const newName = servers(surge).find((s) => !servers(first).some((f) => f.name === s.name))?.name;
    assert.ok(newName);
    const waiting = await up(
      "v1.34.1+k0s.0",
      after(surge, (n) => n !== newName),
      { replicas: 3 },
    );
    assert.deepEqual(
      servers(waiting)
        .map((s) => s.name)
        .sort(),
      servers(surge)
        .map((s) => s.name)
        .sort(),
    );
    assert.match(String(summaryOf(waiting).waiting), /maxSurge 1 reached/);
    assert.deepEqual(summaryOf(waiting).removing, []);
  });

  it("lifts delete protection only on the server it is about to remove", async () => {
    const pool = { replicas: 3, deleteProtection: true };
    const first = await up("v1.33.4+k0s.0", undefined, pool);
    const surge = await up(
      "v1.34.1+k0s.0",
      after(first, () => true),
      pool,
    );
    const unprotect = await up(
      "v1.34.1+k0s.0",
      after(surge, () => true),
      pool,
    );
    const [lifted] = summaryOf(unprotect).unprotecting;
    assert.match(lifted, /^example-hel1-general-0-/);
    for (const s of servers(unprotect)) {
      const expected = s.name !== lifted;
      assert.equal(s.inputs.deleteProtection, expected, s.name);
      assert.equal(s.inputs.rebuildProtection, expected, s.name);
    }
    const removed = await up(
      "v1.34.1+k0s.0",
      after(unprotect, () => true),
      pool,
    );
    assert.deepEqual(summaryOf(removed).removing, [lifted]);
    assert.ok(!servers(removed).some((s) => s.name === lifted));
  });

  it("rolls maxSurge servers at once when allowed", async () => {
    const pool = { rollout: { maxSurge: 3 } };
    const first = await up("v1.33.4+k0s.0", undefined, pool);
    const surge = await up(
      "v1.34.1+k0s.0",
      after(first, () => true),
      pool,
    );
    assert.equal(servers(surge).length, 15);
    assert.deepEqual(summaryOf(surge).replacing, ["hel1-general-0", "hel1-general-1", "hel1-general-2"]);
  });

  it("refuses rollout settings that could never replace a member, naming the field", async () => {
    let error: unknown;
    const run = await runUnderMocks({
      stack: "test",
      config: config("v1.33.4+k0s.0", { rollout: { maxSurge: 0, maxUnavailable: 0 } }),
      program: () => runProgram({ allowMissingKubeconfig: true }).catch((e: unknown) => ((error = e), {})),
    });
    assert.match(String((error as Error)?.message), /nodefleet:pools\[0\]\.rollout: maxSurge and maxUnavailable cannot both be 0/);
    assert.equal(run.resources.length, 0);
    const tooShort = await runUnderMocks({
      stack: "test",
      config: config("v1.33.4+k0s.0", { rollout: { drainTimeoutSeconds: 0 } }),
      program: () => runProgram({ allowMissingKubeconfig: true }).catch((e: unknown) => ({ error: String(e) })),
    });
    assert.match(
      String(tooShort.outputs.error),
      /nodefleet:pools\[0\]\.rollout\.drainTimeoutSeconds: drainTimeoutSeconds must be at least 1/,
    );
  });

  it("drains departing servers for the pool's drainTimeoutSeconds (default 600)", async () => {
    const timeouts = (run: Run) => [...new Set(run.resources.filter((r) => r.type === DRAIN).map((r) => r.inputs.timeoutSeconds))];
    assert.deepEqual(timeouts(await up("v1.33.4+k0s.0", undefined, { replicas: 2 })), [600]);
    assert.deepEqual(timeouts(await up("v1.33.4+k0s.0", undefined, { replicas: 2, rollout: { drainTimeoutSeconds: 120 } })), [120]);
  });
});
