/**
 * Creates that meet an outage of the cluster's API: a step failing transiently keeps its claim
 * PROVISIONING for the next run (backoff) instead of failing it, until the create's deadline;
 * /readyz says degraded, naming the unreachable API, while runs are stuck; a permanent failure
 * still fails the claim at once. Pure outcome first, then through the API with the fake engine, its
 * claims and runs in SQLite and in PostgreSQL.
 */
import { strict as assert } from "node:assert";
import type { ResourceStep } from "../../../automation/engine/stackEngine";
import { runOutcome } from "../../../automation/reconciler/runOutcome";
import type { Claim } from "../../../automation/store/claimStore";
import { FakeStackEngine } from "../../support/fakeStackEngine";
import { eventually, type TestApi } from "../../support/apiHarness";
import { storeBackends } from "../../support/storeBackends";

const SECRET = "kubernetes:core/v1:Secret";
const HANDSHAKE = `creating resource: Post "https://127.0.0.1:36443/api/v1/namespaces/kube-system/secrets": net/http: TLS handshake timeout`;
const secretStep = (nodeId: string, error: string): ResourceStep => ({
  op: "create",
  urn: `urn:pulumi:s::p::${SECRET}::tok-${nodeId}-secret-object`,
  type: SECRET,
  name: `tok-${nodeId}-secret-object`,
  keys: [],
  error,
});
const claim = (nodeId: string, createdAt: string): Claim =>
  ({ nodeId, status: "PROVISIONING", instanceType: "cpx21", zone: "hel1", createdAt }) as unknown as Claim;

describe("transient failures of creates: pure outcome", () => {
  const admitted = "2026-01-01T00:00:00.000Z";
  const at = (minutes: number) => Date.parse(admitted) + minutes * 60_000;

  it("keeps a claim whose steps failed only transiently for the next run, and says which API it waits on", () => {
    const outcome = runOutcome({
      members: [claim("k000000000001", admitted)],
      terminating: [],
      result: { steps: [secretStep("k000000000001", HANDSHAKE)], outputs: {} },
      at: admitted,
      now: at(1),
      createDeadlineMs: 30 * 60_000,
    });
    assert.deepEqual(outcome.updates, [], "not FAILED");
    assert.equal(outcome.retry, true);
    assert.deepEqual(outcome.waiting, [
      { nodeId: "k000000000001", source: "controlPlane", reason: `${SECRET} tok-k000000000001-secret-object: TLS handshake timeout` },
    ]);
  });

  it("fails it once the create's deadline has passed, saying it kept failing", () => {
    const outcome = runOutcome({
      members: [claim("k000000000001", admitted)],
      terminating: [],
      result: { steps: [secretStep("k000000000001", HANDSHAKE)], outputs: {} },
      at: admitted,
      now: at(31),
      createDeadlineMs: 30 * 60_000,
    });
    assert.equal(outcome.updates[0]!.patch.status, "FAILED");
    assert.equal(outcome.updates[0]!.patch.failureCode, "CreateFailed");
    assert.match(String(outcome.updates[0]!.patch.failureReason), /still failing 30 min after admission.*TLS handshake timeout/);
    assert.deepEqual(outcome.waiting, []);
  });

  it("fails it at once when one of its failures is permanent", () => {
    const steps = [
      secretStep("k000000000001", HANDSHAKE),
      { ...secretStep("k000000000001", `secrets "bootstrap-token-x" already exists`), name: "other-k000000000001" },
    ];
    const outcome = runOutcome({
      members: [claim("k000000000001", admitted)],
      terminating: [],
      result: { steps, outputs: {} },
      at: admitted,
      now: at(1),
    });
    assert.equal(outcome.updates[0]!.patch.status, "FAILED");
  });
});

for (const backend of storeBackends())
  describe(`transient failures of creates: through the API (${backend.name})`, function () {
    backend.hooks();
    let api: TestApi | undefined;
    afterEach(async () => api?.close());

    it("a create in flight during a control-plane outage ends RUNNING, never FAILED; readyz is degraded meanwhile", async () => {
      const engine = new FakeStackEngine();
      engine.secretError = HANDSHAKE;
      api = await backend.startApi({ engine });
      const { node } = await api.client.createNode({ uniqueID: "outage", pool: "hel1-burst" });
      const seen = new Set<string>();
      const degraded = await eventually(async () => {
        seen.add((await api!.client.getNode(node.nodeID)).status);
        const ready = await api!.client.readiness();
        return ready.body.status === "degraded" && engine.ups >= 2 ? ready : undefined;
      });
      assert.equal(degraded.status, 200, "degraded is still ready: deletes keep working");
      const details = degraded.body.details as Record<string, { unreachable?: string; reason?: string; waitingClaims?: string[] }>;
      assert.equal(details.example?.unreachable, "controlPlane");
      assert.match(details.example?.reason ?? "", /the cluster's API \(kube-apiserver\).*TLS handshake timeout/);
      assert.deepEqual(details.example?.waitingClaims, [node.nodeID]);
      engine.secretError = undefined;
      const running = await eventually(async () => {
        const current = await api!.client.getNode(node.nodeID);
        seen.add(current.status);
        return current.status === "RUNNING" ? current : undefined;
      });
      assert.ok(running.instanceID);
      assert.ok(!seen.has("FAILED"), `statuses seen: ${[...seen].join(", ")}`);
      assert.equal((await api.client.readiness()).body.status, "ready", "no longer degraded once the run went through");
    });

    it("fails a create whose transient failures outlast the create's deadline", async () => {
      const engine = new FakeStackEngine();
      engine.secretError = HANDSHAKE;
      api = await backend.startApi({ engine, createDeadlineMs: 1 });
      const { node } = await api.client.createNode({ uniqueID: "too-long", pool: "hel1-burst" });
      const failed = await eventually(async () => {
        const current = await api!.client.getNode(node.nodeID);
        return current.status === "FAILED" ? current : undefined;
      });
      assert.equal(failed.failureCode, "CreateFailed");
      assert.match(failed.failureReason ?? "", /deadline.*TLS handshake timeout/);
    });
  });
