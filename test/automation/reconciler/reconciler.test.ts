/**
 * The batching reconciler: pure window/backoff/outcome/guard functions, then behaviour through the
 * API with the in-memory fake engine: batching, one run at a time, repeated deletes, retries,
 * member failures, the preview guard, deletes during a run, frozen members and drift; the behaviour
 * on both homes of the claims and runs (the embedded SQLite store, PostgreSQL: storeBackends.ts).
 */
import { strict as assert } from "node:assert";
import fc from "fast-check";
import { nodeIdFor } from "../../../automation/api/nodeIdentity";
import type { ResourceStep } from "../../../automation/engine/stackEngine";
import { retryDelay, windowClosesAt } from "../../../automation/reconciler/batchWindow";
import { isSoldOut, previewGuardViolations, runOutcome, stepsOfNode } from "../../../automation/reconciler/runOutcome";
import type { Claim } from "../../../automation/store/claimStore";
import { NodefleetApiError } from "../../../automation/client/nodefleetClient";
import { FakeStackEngine } from "../../support/fakeStackEngine";
import { eventually, type TestApi } from "../../support/apiHarness";
import { storeBackends } from "../../support/storeBackends";

const SERVER = "hcloud:index/server:Server";
const step = (op: ResourceStep["op"], name: string, error?: string): ResourceStep => ({
  op,
  urn: `urn:pulumi:s::p::${SERVER}::${name}`,
  type: SERVER,
  name,
  keys: [],
  ...(error ? { error } : {}),
});
const claim = (nodeId: string, status: Claim["status"]): Claim =>
  ({ nodeId, status, instanceType: "cpx21", zone: "hel1" }) as unknown as Claim;

describe("reconciler: pure parts", () => {
  it("closes the batch window after idleMs of quiet, but never later than maxMs after the first change", () => {
    fc.assert(
      fc.property(
        fc.nat(100_000),
        fc.nat(20_000),
        fc.integer({ min: 1, max: 5000 }),
        fc.integer({ min: 1, max: 20_000 }),
        (first, gap, idleMs, maxMs) => {
          const last = first + gap;
          const closes = windowClosesAt(first, last, { idleMs, maxMs });
          assert.ok(closes <= last + idleMs);
          assert.ok(closes <= first + Math.max(idleMs, maxMs));
          assert.ok(closes >= Math.min(last + idleMs, first + Math.max(idleMs, maxMs)));
        },
      ),
    );
    assert.equal(windowClosesAt(0, 500, { idleMs: 1000, maxMs: 10_000 }), 1500);
    assert.equal(windowClosesAt(0, 9500, { idleMs: 1000, maxMs: 10_000 }), 10_000);
  });

  it("backs off exponentially up to the cap", () => {
    assert.deepEqual(
      [1, 2, 3, 4, 5, 6, 7].map((a) => retryDelay(a, { initialMs: 2000, maxMs: 60_000 })),
      [2000, 4000, 8000, 16000, 32000, 60000, 60000],
    );
    fc.assert(fc.property(fc.integer({ min: 1, max: 1000 }), (a) => retryDelay(a, { initialMs: 10, maxMs: 500 }) <= 500));
  });

  it("attributes steps to nodes by id in the resource name, not by prefix", () => {
    const steps = [step("create", "example-k0123456789ab-x1y2z3"), step("create", "example-k0123456789abc-zz")];
    assert.equal(stepsOfNode(steps, "k0123456789ab").length, 1);
  });

  it("turns a run into claim updates: RUNNING with outputs, FAILED with a reason, sold out, gone", () => {
    const members = [
      claim("k000000000001", "PROVISIONING"),
      claim("k000000000002", "PROVISIONING"),
      claim("k000000000003", "PROVISIONING"),
    ];
    const outcome = runOutcome({
      members,
      terminating: [claim("k000000000009", "TERMINATING")],
      result: {
        steps: [
          step("create", "srv-k000000000001"),
          step("create", "srv-k000000000002", "boom"),
          step("create", "srv-k000000000003", "cpx21 is sold out in hel1: error during placement (resource_unavailable)"),
          step("delete", "srv-k000000000009"),
        ],
        outputs: { "member-k000000000001": { serverId: "42", ipv4: "203.0.113.5" } },
      },
      at: "2026-01-01T00:00:00Z",
    });
    const byNode = new Map(outcome.updates.map((u) => [u.nodeId, u]));
    assert.equal(byNode.get("k000000000001")!.patch.status, "RUNNING");
    assert.equal(byNode.get("k000000000001")!.patch.instanceId, "42");
    assert.equal(byNode.get("k000000000002")!.patch.status, "FAILED");
    assert.equal(byNode.get("k000000000002")!.patch.failureCode, "CreateFailed");
    assert.match(String(byNode.get("k000000000002")!.patch.failureReason), /boom/);
    assert.equal(byNode.get("k000000000003")!.patch.failureCode, "InsufficientCapacity");
    assert.equal(byNode.get("k000000000003")!.backoff?.serverType, "cpx21");
    assert.equal(byNode.get("k000000000003")!.backoff?.kind, "soldOut");
    assert.equal(byNode.get("k000000000003")!.backoff?.scope, "offering");
    assert.equal(byNode.get("k000000000002")!.backoff, undefined);
    assert.equal(byNode.get("k000000000009")!.patch.status, "GONE");
    assert.equal(outcome.retry, false);
    assert.ok(isSoldOut("resource_unavailable"));
    assert.ok(!isSoldOut("invalid input"));
  });

  it("backs off the offering after a quota failure and the whole pool after an unusable image, the pool-wide one winning", () => {
    const members = [claim("k000000000001", "PROVISIONING"), claim("k000000000002", "PROVISIONING")].map((c) => ({ ...c, pool: "burst" }));
    const outcome = runOutcome({
      members,
      terminating: [],
      result: {
        steps: [
          step("create", "srv-k000000000001", "server limit exceeded for this project (resource_limit_exceeded, 1a2b)"),
          step("create", "srv-k000000000002", "server limit exceeded (resource_limit_exceeded, 1a2b)"),
          step("create", "net-k000000000002", "image not found for architecture x86 (invalid_input, 3c4d)"),
        ],
        outputs: {},
      },
      at: "2026-01-01T00:00:00Z",
    });
    const byNode = new Map(outcome.updates.map((u) => [u.nodeId, u]));
    const quota = byNode.get("k000000000001")!;
    assert.equal(quota.patch.failureCode, "InsufficientCapacity");
    assert.match(String(quota.patch.failureReason), /^the Hetzner project's quota is exhausted/);
    assert.deepEqual(
      [quota.backoff?.kind, quota.backoff?.scope, quota.backoff?.pool, quota.backoff?.serverType, quota.backoff?.location],
      ["quota", "offering", "burst", "cpx21", "hel1"],
    );
    const image = byNode.get("k000000000002")!;
    assert.deepEqual([image.backoff?.kind, image.backoff?.scope], ["image", "pool"]);
  });

  it("reads one output per member, so a failed member's unknown output hides no other member", () => {
    const outcome = runOutcome({
      members: [claim("k000000000001", "PROVISIONING"), claim("k000000000002", "PROVISIONING")],
      terminating: [],
      result: {
        steps: [step("create", "srv-k000000000001"), step("create", "srv-k000000000002", "boom")],
        // What a real continue-on-error up returns: the failed member's output never became known.
        outputs: {
          clusterId: "c1",
          "member-k000000000001": { serverId: "7" },
          "member-k000000000002": "04da6b54-80e4-46f7-96ec-b56ff0331ba9",
        },
      },
      at: "t",
    });
    const byNode = new Map(outcome.updates.map((u) => [u.nodeId, u.patch]));
    assert.equal(byNode.get("k000000000001")!.status, "RUNNING");
    assert.equal(byNode.get("k000000000001")!.instanceId, "7");
    assert.equal(byNode.get("k000000000002")!.status, "FAILED");
  });

  it("fails new members with no server when a resource no claim owns (a placement group) failed", () => {
    const outcome = runOutcome({
      members: [claim("k000000000001", "PROVISIONING"), claim("k000000000002", "RUNNING")],
      terminating: [],
      result: {
        steps: [step("create", "c1-burst-spread-0", "placement group limit reached")],
        outputs: { "member-k000000000002": { serverId: "8" } },
      },
      at: "t",
    });
    const byNode = new Map(outcome.updates.map((u) => [u.nodeId, u.patch]));
    assert.equal(byNode.get("k000000000001")!.status, "FAILED");
    assert.match(String(byNode.get("k000000000001")!.failureReason), /c1-burst-spread-0: placement group limit reached/);
    assert.equal(byNode.get("k000000000002")!.instanceId, "8", "a running member keeps its server");
    assert.equal(outcome.retry, false, "nothing is retried forever");
  });

  it("asks for a retry when a member got neither an output nor an error, or a delete failed", () => {
    const outcome = runOutcome({
      members: [claim("k000000000001", "PROVISIONING")],
      terminating: [claim("k000000000009", "TERMINATING")],
      result: { steps: [step("delete", "srv-k000000000009", "locked")], outputs: {} },
      at: "t",
    });
    assert.equal(outcome.updates.length, 0);
    assert.equal(outcome.retry, true);
  });

  it("guards previews: replacing or deleting a member that should stay is refused, terminating ones are fine", () => {
    const claims = [claim("k000000000001", "RUNNING"), claim("k000000000002", "TERMINATING"), claim("k000000000003", "FAILED")];
    const steps = [
      step("replace", "srv-k000000000001"),
      step("delete", "srv-k000000000002"),
      step("delete", "token-k000000000003"),
      step("delete", "some-unknown-server"),
      step("create", "srv-k000000000004"),
    ];
    const violations = previewGuardViolations(steps, claims);
    assert.deepEqual(
      violations.map((v) => v.name),
      ["srv-k000000000001", "some-unknown-server"],
    );
    assert.equal(violations[0]!.nodeId, "k000000000001");
  });
});

for (const backend of storeBackends())
  describe(`reconciler: behaviour (${backend.name})`, function () {
    backend.hooks();
    let api: TestApi;
    let engine: FakeStackEngine;

    afterEach(async () => api?.close());

    async function waitForStatus(nodeId: string, status: string) {
      return eventually(async () => {
        const node = await api.client.getNode(nodeId);
        return node.status === status ? node : undefined;
      });
    }

    async function waitGone(nodeId: string) {
      return eventually(async () => {
        try {
          await api.client.getNode(nodeId);
          return undefined;
        } catch (error) {
          return error instanceof NodefleetApiError && error.status === 404 ? true : undefined;
        }
      });
    }

    it("puts a burst of concurrent creates into a handful of runs, one run at a time", async () => {
      engine = new FakeStackEngine();
      engine.delayMs = 100;
      // One shard for all 60 (clusterShards.test.ts covers several): batching within one stack.
      api = await backend.startApi({ engine, batch: { idleMs: 100, maxMs: 1000 }, membersPerShard: 100 });
      const results = await Promise.all(
        Array.from({ length: 60 }, (_, i) => api.client.createNode({ uniqueID: `burst-${i}`, pool: "hel1-burst" })),
      );
      assert.ok(results.every((r) => r.created && r.node.status === "PENDING"));
      for (const r of results) await waitForStatus(r.node.nodeID, "RUNNING");
      assert.ok(engine.ups <= 3, `expected a handful of runs, got ${engine.ups}`);
      assert.equal(engine.maxConcurrent, 1);
      assert.equal(engine.servers.size, 60);
    });

    it("changes arriving during a run go into the next single run", async () => {
      engine = new FakeStackEngine();
      engine.delayMs = 1000;
      api = await backend.startApi({ engine, batch: { idleMs: 300, maxMs: 3000 } });
      const first = await api.client.createNode({ uniqueID: "first", pool: "hel1-burst" });
      await waitForStatus(first.node.nodeID, "PROVISIONING");
      const later = await Promise.all(
        Array.from({ length: 10 }, (_, i) => api.client.createNode({ uniqueID: `later-${i}`, pool: "hel1-burst" })),
      );
      for (const r of later) await waitForStatus(r.node.nodeID, "RUNNING");
      assert.equal(engine.upMembers.length, 2);
      assert.equal(engine.upMembers[1]!.length, 11);
    });

    it("repeated DELETEs of a terminating node start no new run", async () => {
      engine = new FakeStackEngine();
      api = await backend.startApi({ engine });
      const { node } = await api.client.createNode({ uniqueID: "repeat", pool: "hel1-burst" }, { waitSeconds: 30 });
      engine.delayMs = 500;
      const upsBefore = engine.ups;
      for (let i = 0; i < 8; i++) {
        try {
          await api.client.deleteNode(node.nodeID);
        } catch (error) {
          assert.ok(error instanceof NodefleetApiError && error.status === 404);
        }
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      await waitGone(node.nodeID);
      assert.equal(engine.ups - upsBefore, 1);
    });

    it("a delete of a node no run has picked up yet needs no run at all", async () => {
      engine = new FakeStackEngine();
      api = await backend.startApi({ engine, batch: { idleMs: 2000, maxMs: 5000 } });
      const { node } = await api.client.createNode({ uniqueID: "never-ran", pool: "hel1-burst" });
      await api.client.deleteNode(node.nodeID);
      await assert.rejects(api.client.getNode(node.nodeID), (e: unknown) => e instanceof NodefleetApiError && e.code === "NodeNotFound");
      assert.equal(engine.ups, 0);
    });

    it("a delete during the run that creates the node wins: the server is removed in the next run", async () => {
      engine = new FakeStackEngine();
      engine.delayMs = 300;
      api = await backend.startApi({ engine });
      const { node } = await api.client.createNode({ uniqueID: "raced", pool: "hel1-burst" });
      await waitForStatus(node.nodeID, "PROVISIONING");
      assert.equal((await api.client.deleteNode(node.nodeID)).status, "TERMINATING");
      await waitGone(node.nodeID);
      assert.equal(engine.servers.size, 0);
    });

    for (const previewGuard of [true, false])
      it(`deletes a claim whose server vanished outside Pulumi, refreshing only what the run deletes first (guard ${previewGuard ? "on" : "off"})`, async () => {
        engine = new FakeStackEngine();
        api = await backend.startApi({ engine, previewGuard });
        const kept = await api.client.createNode({ uniqueID: "kept", pool: "hel1-burst" }, { waitSeconds: 30 });
        const lost = await api.client.createNode({ uniqueID: "lost", pool: "hel1-burst" }, { waitSeconds: 30 });
        await waitForStatus(kept.node.nodeID, "RUNNING");
        await waitForStatus(lost.node.nodeID, "RUNNING");
        // Deleted in the console: the engine's delete of it fails (not_found) until a refresh drops it.
        engine.vanished.add(lost.node.nodeID);
        assert.equal((await api.client.deleteNode(lost.node.nodeID)).status, "TERMINATING");
        await waitGone(lost.node.nodeID);
        assert.deepEqual([...engine.servers.keys()], [kept.node.nodeID]);
        assert.equal(engine.refreshTargets.length, 1, "one refresh, for the deleting run");
        assert.deepEqual(
          engine.refreshTargets[0]!.map((urn) => urn.split("::").at(-1)),
          [`pool-server-${lost.node.nodeID}`],
          "only the server the run deletes is refreshed",
        );
        assert.ok(
          (await api.client.operations()).every((o) => o.result !== "failed"),
          "no run failed on the vanished server",
        );
      });

    it("retries transient engine errors with backoff and records the failed run", async () => {
      engine = new FakeStackEngine();
      engine.transientErrors = ["backend unavailable", "backend unavailable"];
      api = await backend.startApi({ engine, previewGuard: false });
      const { node } = await api.client.createNode({ uniqueID: "transient", pool: "hel1-burst" });
      await waitForStatus(node.nodeID, "RUNNING");
      const operations = await api.client.operations();
      assert.deepEqual(operations.map((o) => o.result).reverse(), ["failed", "failed", "succeeded"]);
      assert.match(operations.at(-1)!.error ?? "", /backend unavailable/);
      const metrics = String((await api.client.raw("GET", "/metrics")).body);
      assert.match(metrics, /nodefleet_engine_runs_total\{cluster="example",kind="up",result="failed"\} 2/);
    });

    it("fails one member with a reason while the others of the same run proceed", async () => {
      engine = new FakeStackEngine();
      engine.failNodes.add(nodeIdFor("bad"));
      api = await backend.startApi({ engine, batch: { idleMs: 300, maxMs: 3000 } });
      const [good, bad] = await Promise.all([
        api.client.createNode({ uniqueID: "good", pool: "hel1-burst" }),
        api.client.createNode({ uniqueID: "bad", pool: "hel1-burst" }),
      ]);
      await waitForStatus(good.node.nodeID, "RUNNING");
      const failed = await waitForStatus(bad.node.nodeID, "FAILED");
      assert.match(failed.failureReason ?? "", /simulated failure/);
      assert.equal(engine.ups, 1, "a permanent member failure is not retried");
      // Karpenter deletes the failed claim; that needs a run (to clean up) and ends in 404.
      await api.client.deleteNode(bad.node.nodeID);
      await waitGone(bad.node.nodeID);
      assert.equal((await api.client.getNode(good.node.nodeID)).status, "RUNNING");
    });

    it("refuses a run whose preview would replace a member, marks the service degraded, and recovers", async () => {
      engine = new FakeStackEngine();
      api = await backend.startApi({ engine });
      const { node } = await api.client.createNode({ uniqueID: "guarded", pool: "hel1-burst" }, { waitSeconds: 30 });
      engine.forceReplace.add(node.nodeID);
      const second = await api.client.createNode({ uniqueID: "blocked", pool: "hel1-burst" });
      const degraded = await eventually(async () => {
        const ready = await api.client.readiness();
        return ready.body.status === "degraded" ? ready : undefined;
      });
      assert.equal(degraded.status, 200, "deletes must keep working while degraded");
      assert.match(JSON.stringify(degraded.body.details), new RegExp(`replace pool-server-${node.nodeID}`));
      const refused = (await api.client.operations()).find((o) => o.result === "failed")!;
      assert.match(refused.error ?? "", /preview guard/);
      assert.equal((refused.details as { violations: Array<{ nodeId: string }> }).violations[0]!.nodeId, node.nodeID);
      assert.ok(["PENDING", "PROVISIONING"].includes((await api.client.getNode(second.node.nodeID)).status));
      assert.equal(engine.servers.get(node.nodeID)!.serverId, (await api.client.getNode(node.nodeID)).instanceID, "not replaced");
      engine.forceReplace.clear();
      await waitForStatus(second.node.nodeID, "RUNNING");
      assert.equal((await api.client.readiness()).body.status, "ready");
    });

    it("freezes members: a template change in git reports drift with reasons, never replaces, and applies to new claims", async () => {
      engine = new FakeStackEngine();
      api = await backend.startApi({ engine });
      const { node } = await api.client.createNode({ uniqueID: "frozen", pool: "hel1-burst" }, { waitSeconds: 30 });
      assert.equal(node.drifted, false);
      const pools = api.config["nodefleet:pools"]!.value as Array<Record<string, unknown>>;
      const burst = pools.find((p) => p.name === "hel1-burst")!;
      burst.image = "ubuntu-22.04";
      (api.config["nodefleet:cluster"]!.value as Record<string, unknown>).k0sVersion = "v1.34.1+k0s.0";
      burst.serverTypes = ["cpx31", "cpx41"];
      const drifted = await api.client.getNode(node.nodeID);
      assert.equal(drifted.drifted, true);
      assert.equal(drifted.driftReason, "ServerTypeDrift,ImageDrift,K0sVersionDrift");
      assert.match(drifted.driftDetails ?? "", /image: ubuntu-24\.04 -> ubuntu-22\.04/);
      assert.match(drifted.driftDetails ?? "", /k0sVersion: v1\.33\.4\+k0s\.0 -> v1\.34\.1\+k0s\.0/);
      assert.match(drifted.driftDetails ?? "", /serverTypes: cpx21 is no longer allowed/);
      const fresh = await api.client.createNode({ uniqueID: "fresh", pool: "hel1-burst" }, { waitSeconds: 30 });
      assert.equal(fresh.node.instanceType, "cpx31");
      assert.equal(fresh.node.drifted, false);
      const claims = api.app.nodefleet.claims;
      assert.equal((await claims.get("example", fresh.node.nodeID))!.snapshot.template.image, "ubuntu-22.04");
      assert.equal(
        (await claims.get("example", node.nodeID))!.snapshot.template.image,
        "ubuntu-24.04",
        "the running member keeps its snapshot",
      );
      assert.equal(engine.servers.get(node.nodeID)!.serverId, (await api.client.getNode(node.nodeID)).instanceID);
      const listed = await api.client.listNodes();
      assert.deepEqual(
        listed.map((n) => [n.nodeID, n.drifted]).sort(),
        [
          [node.nodeID, true],
          [fresh.node.nodeID, false],
        ].sort(),
      );
    });

    it("reconciles what a previous process left unfinished when it starts on the same data directory", async () => {
      engine = new FakeStackEngine();
      engine.delayMs = 60_000;
      api = await backend.startApi({ engine, shutdownGraceMs: 100 });
      const dataDir = api.dataDir;
      const created = await Promise.all([0, 1, 2].map((i) => api.client.createNode({ uniqueID: `left-${i}`, pool: "hel1-burst" })));
      await waitForStatus(created[0]!.node.nodeID, "PROVISIONING");
      await api.close(); // abandons the run in progress
      const restartedEngine = new FakeStackEngine();
      api = await backend.startApi({ engine: restartedEngine, dataDir }, api);
      for (const c of created) await waitForStatus(c.node.nodeID, "RUNNING");
      const results = (await api.client.operations()).map((o) => o.result);
      assert.ok(results.includes("abandoned"), JSON.stringify(results));
      assert.equal(results[0], "succeeded");
    });
  });
