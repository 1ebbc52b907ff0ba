/**
 * The network room a static pool's rollout may use: the other static pools' servers and every
 * autoscaled pool at its maxNodes count as taken, so a surge never races an API create.
 */
import { strict as assert } from "node:assert";
import fc from "fast-check";
import type { PoolSpec } from "../../components/fleet/fleetSpec";
import { serversOutsidePool } from "../../components/fleet/networkOccupancy";
import { planRollout } from "../../components/fleet/rolloutPlan";
import { membersAwaitingNewGeneration } from "../support/rolloutFixture";

const staticPool = (name: string) => ({ name, provider: "hcloud", mode: "static" }) as unknown as PoolSpec;
const autoscaledPool = (name: string, maxNodes: number) =>
  ({ name, provider: "hcloud", mode: "autoscaled", limits: { maxNodes } }) as unknown as PoolSpec;
const robotPool = (name: string) => ({ name, provider: "hetzner-robot" }) as unknown as PoolSpec;
const servers = (count: number) => Array.from({ length: count }, (_, i) => ({ i }));

describe("network occupancy of a static pool's rollout", () => {
  it("counts the other static pools' servers and every autoscaled pool's maxNodes, not its own or bare metal", () => {
    const pools = [staticPool("a"), staticPool("b"), autoscaledPool("burst", 30), autoscaledPool("gpu", 5), robotPool("metal")];
    assert.equal(serversOutsidePool(pools, { a: servers(20), b: servers(7) }, "a"), 7 + 30 + 5);
    assert.equal(serversOutsidePool(pools, { a: servers(20), b: servers(7) }, "b"), 20 + 35);
  });

  it("leaves no surge room when static replicas and autoscaled maxNodes fill the network", () => {
    const pools = [staticPool("a"), autoscaledPool("burst", 40)];
    const { desired, current } = membersAwaitingNewGeneration(60);
    const plan = planRollout(
      desired,
      current,
      { maxSurge: 2, maxUnavailable: 0 },
      { serversOutsidePool: serversOutsidePool(pools, { a: current }, "a") },
    );
    assert.equal(plan.servers.filter((s) => s.action === "create").length, 0, "no server beyond the 100 the network holds");
    assert.match(String(plan.waiting), /the network holds 100 servers/);
  });

  it("never counts fewer than the autoscaled pools' maxNodes", () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 1, max: 100 }), { maxLength: 4 }),
        fc.array(fc.integer({ min: 0, max: 50 }), { maxLength: 4 }),
        (maxNodes, staticCounts) => {
          const pools = [...maxNodes.map((m, i) => autoscaledPool(`auto-${i}`, m)), ...staticCounts.map((_, i) => staticPool(`s-${i}`))];
          const current = Object.fromEntries(staticCounts.map((c, i) => [`s-${i}`, servers(c)]));
          const own = staticCounts.length > 0 ? "s-0" : "none";
          const expected = maxNodes.reduce((a, b) => a + b, 0) + staticCounts.slice(own === "s-0" ? 1 : 0).reduce((a, b) => a + b, 0);
          assert.equal(serversOutsidePool(pools, current, own), expected);
        },
      ),
    );
  });
});
