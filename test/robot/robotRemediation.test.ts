import { strict as assert } from "node:assert";
import fc from "fast-check";
import {
  REMEDIATION_LADDER,
  REMEDIATION_ORDER,
  type RemediationStep,
  nextRemediation,
  robotResetTypeFor,
  stepAfter,
} from "../../components/robot/robotRemediation";

const MIN = 60_000;
const step = fc.constantFrom<RemediationStep>(...REMEDIATION_ORDER);
const elapsed = fc.oneof(fc.integer({ min: -MIN, max: 60 * MIN }), fc.constantFrom(0, 5 * MIN - 1, 5 * MIN, 10 * MIN - 1, 10 * MIN));
const order = (s: RemediationStep) => REMEDIATION_ORDER.indexOf(s);

describe("robotRemediation", () => {
  it("gives every rung one wait when one is set, and the ladder's own otherwise", () => {
    assert.deepEqual(nextRemediation({ step: "ssh-reboot", elapsedMs: 999, healthy: false }, 1000), { kind: "wait", remainingMs: 1 });
    assert.deepEqual(nextRemediation({ step: "sw-reset", elapsedMs: 1000, healthy: false }, 1000), { kind: "escalate", step: "hw-reset" });
    assert.deepEqual(nextRemediation({ step: "hw-reset", elapsedMs: 1000, healthy: false }, 1000), { kind: "fail" });
    assert.deepEqual(nextRemediation({ step: "hw-reset", elapsedMs: 1000, healthy: false }), {
      kind: "wait",
      remainingMs: 10 * MIN - 1000,
    });
  });

  it("walks ssh reboot (5 min) -> sw reset (10 min) -> hw reset (10 min) -> permanent failure", () => {
    assert.deepEqual(nextRemediation({ step: "none", elapsedMs: 0, healthy: false }), { kind: "escalate", step: "ssh-reboot" });
    assert.deepEqual(nextRemediation({ step: "ssh-reboot", elapsedMs: 4 * MIN, healthy: false }), { kind: "wait", remainingMs: MIN });
    assert.deepEqual(nextRemediation({ step: "ssh-reboot", elapsedMs: 5 * MIN, healthy: false }), { kind: "escalate", step: "sw-reset" });
    assert.deepEqual(nextRemediation({ step: "sw-reset", elapsedMs: 9 * MIN, healthy: false }), { kind: "wait", remainingMs: MIN });
    assert.deepEqual(nextRemediation({ step: "sw-reset", elapsedMs: 10 * MIN, healthy: false }), { kind: "escalate", step: "hw-reset" });
    assert.deepEqual(nextRemediation({ step: "hw-reset", elapsedMs: 10 * MIN, healthy: false }), { kind: "fail" });
    assert.deepEqual(nextRemediation({ step: "failed", elapsedMs: 0, healthy: true }), { kind: "failed" });
    assert.deepEqual(nextRemediation({ step: "sw-reset", elapsedMs: 0, healthy: true }), { kind: "recovered" });
    assert.deepEqual(nextRemediation({ step: "none", elapsedMs: 0, healthy: true }), { kind: "none" });
    assert.equal(robotResetTypeFor("sw-reset"), "sw");
    assert.equal(robotResetTypeFor("hw-reset"), "hw");
    assert.equal(robotResetTypeFor("ssh-reboot"), undefined);
    assert.deepEqual(
      REMEDIATION_LADDER.map((r) => [r.step, r.waitMs / MIN]),
      [
        ["ssh-reboot", 5],
        ["sw-reset", 10],
        ["hw-reset", 10],
      ],
    );
  });

  it("while unhealthy, is monotone and never skips a rung (property)", () => {
    fc.assert(
      fc.property(step, elapsed, (current, ms) => {
        const next = stepAfter(current, nextRemediation({ step: current, elapsedMs: ms, healthy: false }));
        assert.ok(order(next) >= order(current), `${current} -> ${next} goes back`);
        assert.ok(order(next) - order(current) <= 1, `${current} -> ${next} skips a rung`);
      }),
    );
  });

  it("escalates only once the current rung's time is up (property)", () => {
    fc.assert(
      fc.property(step, elapsed, (current, ms) => {
        const action = nextRemediation({ step: current, elapsedMs: ms, healthy: false });
        const rung = REMEDIATION_LADDER.find((r) => r.step === current);
        if (rung && (action.kind === "escalate" || action.kind === "fail")) assert.ok(ms >= rung.waitMs);
        if (rung && ms < rung.waitMs) assert.equal(action.kind, "wait");
        if (action.kind === "wait") assert.ok(action.remainingMs > 0 && action.remainingMs <= (rung?.waitMs ?? 0));
      }),
    );
  });

  it("failure is terminal and health never escalates (property)", () => {
    fc.assert(
      fc.property(step, elapsed, fc.boolean(), (current, ms, healthy) => {
        const action = nextRemediation({ step: current, elapsedMs: ms, healthy });
        if (current === "failed") assert.equal(stepAfter(current, action), "failed");
        if (healthy) assert.ok(action.kind !== "escalate" && action.kind !== "fail");
      }),
    );
  });

  it("any unhealthy run from none reaches failed after exactly the three rungs (property)", () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 20 * MIN }), { minLength: 1, maxLength: 60 }), (ticks) => {
        let current: RemediationStep = "none";
        let since = 0;
        const visited: RemediationStep[] = [current];
        for (const tick of ticks) {
          since += tick;
          const action = nextRemediation({ step: current, elapsedMs: since, healthy: false });
          const next = stepAfter(current, action);
          if (next !== current) {
            visited.push(next);
            since = 0;
          }
          current = next;
        }
        assert.deepEqual(visited, REMEDIATION_ORDER.slice(0, visited.length));
      }),
    );
  });
});
