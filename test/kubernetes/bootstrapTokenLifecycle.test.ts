/**
 * The bootstrap token's join lifecycle under the mock runtime: a token for a machine still to be
 * created is renewed before too little of its lifetime is left, a running machine's token is fixed,
 * a registered Node's Secret is deleted, and new tokens keep their secret out of resource ids.
 */
import { strict as assert } from "node:assert";
import { type BootstrapTokenArgs, BootstrapToken, bootstrapTokenJoinMargin, joinWindow } from "../../components/kubernetes/bootstrapToken";
import { runUnderMocks, type RecordedResource } from "../../automation/mocks/runUnderMocks";
import { parseFleetSpec, FleetSpecError } from "../../components/fleet/fleetSpec";
import { clusterConfig, rawFleetConfig } from "../support/fleetConfigFixture";

const HOUR = 3_600_000;

async function declare(args: Partial<BootstrapTokenArgs>): Promise<RecordedResource[]> {
  const run = await runUnderMocks({
    stack: "test",
    program: () => {
      const token = new BootstrapToken("node-token", { clusterKind: "k0s", ttlMinutes: 60, nodeName: "example-a", ...args });
      return { token: token.token };
    },
  });
  return run.resources;
}

const byName = (resources: RecordedResource[], name: string) => resources.find((r) => r.name === name);

describe("BootstrapToken join lifecycle", function () {
  this.timeout(60_000);

  it("gives a machine still to be created a token with at least the join margin left: renewed every ttl - margin", async () => {
    const start = Date.UTC(2026, 11, 1, 10, 0, 0);
    const join = (now: number) => declare({ secretSource: "random-password", phase: { phase: "join", joinMarginMinutes: 20, now } });
    const keepersAt = async (now: number) => byName(await join(now), "node-token-password")?.inputs.keepers;
    const first = await keepersAt(start);
    // Windows are 40 minutes: within one the token stays; in the next it is renewed (id, secret and expiry).
    const windowStart = Math.floor(start / (40 * 60_000)) * 40 * 60_000;
    assert.deepEqual(await keepersAt(windowStart + 39 * 60_000), first);
    const later = await join(windowStart + 40 * 60_000);
    assert.notDeepEqual(byName(later, "node-token-password")?.inputs.keepers, first);
    assert.deepEqual(byName(later, "node-token-id")?.inputs.keepers, byName(later, "node-token-password")?.inputs.keepers);
    assert.deepEqual(
      byName(later, "node-token-expiry")?.inputs.triggers,
      byName(later, "node-token-password")?.inputs.keepers,
      "the expiry restarts with the token",
    );
    // Hours later (a retried create), the token is a new one.
    assert.notDeepEqual(await keepersAt(start + 5 * HOUR), first);
  });

  it("never lets a window start more than ttl - margin before the join, whatever the time", () => {
    for (let i = 0; i < 200; i++) {
      const now = Date.UTC(2026, 0, 1) + i * 7_919_000;
      const window = joinWindow(60, 20, now);
      const created = window * 40 * 60_000;
      assert.ok(now - created < 40 * 60_000 && now >= created, "a token of the current window has at least 20 of its 60 minutes left");
    }
    assert.throws(
      () => joinWindow(60, 60, 0),
      /bootstrapTokenJoinMarginMinutes must be a whole number from 1 to bootstrapTokenTtlMinutes - 1 \(59\), got 60/,
    );
  });

  it("keeps the secret out of resource ids: a RandomPassword, not a RandomString, for new tokens", async () => {
    const resources = await declare({ secretSource: "random-password", phase: { phase: "join", joinMarginMinutes: 20, now: 0 } });
    assert.equal(byName(resources, "node-token-password")?.type, "random:index/randomPassword:RandomPassword");
    assert.equal(byName(resources, "node-token-secret"), undefined);
    assert.equal(byName(await declare({}), "node-token-password")?.type, "random:index/randomPassword:RandomPassword", "the default");
    const legacy = await declare({ secretSource: "random-string", phase: { phase: "booting" } });
    assert.equal(
      byName(legacy, "node-token-secret")?.type,
      "random:index/randomString:RandomString",
      "an earlier token a machine may still need keeps its resource",
    );
  });

  it("deletes the token Secret once the Node has registered, and keeps it while the machine boots", async () => {
    const joined = await declare({ secretSource: "random-password", phase: { phase: "joined" } });
    assert.equal(byName(joined, "node-token-secret-object"), undefined);
    assert.ok(byName(joined, "node-token-password"), "the token itself stays: the machine's user data holds it");
    const booting = await declare({ secretSource: "random-password", phase: { phase: "booting" } });
    assert.equal(byName(booting, "node-token-secret-object")?.type, "kubernetes:core/v1:Secret");
  });

  it("defaults the join margin to 20 minutes, or half a shorter lifetime", () => {
    assert.equal(bootstrapTokenJoinMargin({ bootstrapTokenTtlMinutes: 60 }), 20);
    assert.equal(bootstrapTokenJoinMargin({ bootstrapTokenTtlMinutes: 10 }), 5);
    assert.equal(bootstrapTokenJoinMargin({ bootstrapTokenTtlMinutes: 60, bootstrapTokenJoinMarginMinutes: 45 }), 45);
    const spec = parseFleetSpec(rawFleetConfig({ cluster: clusterConfig({ bootstrapTokenTtlMinutes: 10 }) }));
    assert.equal(spec.cluster.bootstrapTokenJoinMarginMinutes, undefined, "a short TTL alone is valid");
  });

  it("refuses a join margin that is not below the token lifetime, naming the field", () => {
    assert.throws(
      () =>
        parseFleetSpec(rawFleetConfig({ cluster: clusterConfig({ bootstrapTokenTtlMinutes: 30, bootstrapTokenJoinMarginMinutes: 30 }) })),
      (e: unknown) =>
        e instanceof FleetSpecError &&
        e.problems.some((p) => /nodefleet:cluster\.bootstrapTokenJoinMarginMinutes: .*below bootstrapTokenTtlMinutes \(30\)/.test(p)),
    );
  });
});
