/**
 * The simulated engine running the real fleet program over successive `up`s with the previous run's
 * `nodes` (as `nodefleet preview` and the automation engine pass them): a version change on the
 * example stack's Elastic Metal pool re-joins one member per run, and the members the rollout has not
 * reached are left exactly as they were (their ignored inputs keep the state's values, as in the real engine).
 */
import assert from "node:assert/strict";
import type { StackDefinition } from "../../../automation/engine/stackEngine";
import { gitStackProgram } from "../../../automation/gitStackProgram";
import { SimulatedEngine } from "../../../automation/simulated/simulatedEngine";
import { stackFileConfig } from "../../support/fleetConfigFixture";
import { tempDirPerTest } from "../../support/tempDirPerTest";

const silent = { info() {}, warn() {}, error() {} };
const EM_POOL = "kura-scw-fr-par";

function definition(edit: (config: Record<string, unknown>) => void, previousNodes?: unknown): StackDefinition {
  const raw = structuredClone(stackFileConfig("example"));
  edit(raw);
  const config = Object.fromEntries(Object.entries(raw).map(([key, value]) => [key, { value }]));
  return {
    stackName: "example",
    program: gitStackProgram({ allowMissingKubeconfig: true, ...(previousNodes !== undefined ? { previousNodes } : {}) }),
    config,
  };
}

describe("simulated engine: a bare-metal rollout across runs (stacks/Pulumi.example.yaml)", function () {
  this.timeout(300_000);
  const dataDir = tempDirPerTest("nodefleet-baremetal-rollout-");

  it("re-joins one Elastic Metal member per run on a new k0s version; the others' resources stay `same`", async () => {
    const engine = new SimulatedEngine({ dataDir: dataDir(), bootDelayMs: 0, env: {}, logger: silent });
    const twoMembers = (raw: Record<string, unknown>) => {
      raw["nodefleet:pools"] = (raw["nodefleet:pools"] as Array<Record<string, unknown>>).map((p) =>
        p.name === EM_POOL ? { ...p, replicas: 2 } : p,
      );
    };
    const first = await engine.up(definition(twoMembers));
    assert.equal(first.succeeded, true, JSON.stringify(first.steps.filter((s) => s.error)));
    const upgrade = (raw: Record<string, unknown>) => {
      twoMembers(raw);
      raw["nodefleet:cluster"] = { ...(raw["nodefleet:cluster"] as object), k0sVersion: "v1.33.5+k0s.0" };
    };
    const second = await engine.up(definition(upgrade, first.outputs.nodes));
    assert.equal(second.succeeded, true, JSON.stringify(second.steps.filter((s) => s.error)));
    const changed = (run: typeof second, member: string) =>
      run.steps
        .filter((s) => s.op !== "same" && s.name.startsWith(`example-${EM_POOL}-${member}`))
        .map((s) => `${s.op} ${s.name.slice(`example-${EM_POOL}-`.length)}`);
    assert.ok(
      changed(second, `${EM_POOL}-0`).some((s) => /^replace .*-join$/.test(s)),
      `the first member re-joins: ${changed(second, `${EM_POOL}-0`).join(", ")}`,
    );
    assert.deepEqual(changed(second, `${EM_POOL}-1`), [], "the second waits, untouched");
    const rollout = (second.outputs.rollout as Array<{ pool: string; remaining: number }>).find((r) => r.pool === EM_POOL);
    assert.equal(rollout?.remaining, 1);

    const third = await engine.up(definition(upgrade, second.outputs.nodes));
    assert.equal(third.succeeded, true);
    assert.deepEqual(changed(third, `${EM_POOL}-0`), [], "the first is done");
    assert.ok(
      changed(third, `${EM_POOL}-1`).some((s) => /^replace .*-join$/.test(s)),
      "now the second re-joins",
    );
    const fourth = await engine.up(definition(upgrade, third.outputs.nodes));
    // The Hetzner Cloud pool rolls the version too, by surging; the Elastic Metal pool is done.
    assert.deepEqual(
      fourth.steps.filter((s) => s.op !== "same" && s.name.startsWith(`example-${EM_POOL}`)).map((s) => `${s.op} ${s.name}`),
      [],
      "converged: nothing to do",
    );
  });

  it("a label or taint change steps nothing on the Elastic Metal machines; a firewall change updates only each member's host-firewall command", async () => {
    const engine = new SimulatedEngine({ dataDir: dataDir(), bootDelayMs: 0, env: {}, logger: silent });
    const pool = (edit: (p: Record<string, unknown>) => Record<string, unknown>) => (raw: Record<string, unknown>) => {
      raw["nodefleet:pools"] = (raw["nodefleet:pools"] as Array<Record<string, unknown>>).map((p) =>
        p.name === EM_POOL ? edit({ ...p, replicas: 2 }) : p,
      );
    };
    const twoMembers = pool((p) => p);
    const first = await engine.up(definition(twoMembers));
    assert.equal(first.succeeded, true, JSON.stringify(first.steps.filter((s) => s.error)));
    const changed = (run: typeof first) =>
      run.steps.filter((s) => s.op !== "same" && s.name.startsWith(`example-${EM_POOL}`)).map((s) => `${s.op} ${s.name}`);

    const relabel = pool((p) => ({
      ...p,
      labels: { "example.com/team": "build" },
      taints: [{ key: "example.com/dedicated", value: "ci", effect: "NoSchedule" }],
    }));
    const relabelled = await engine.up(definition(relabel, first.outputs.nodes));
    assert.equal(relabelled.succeeded, true);
    // Without a kubeconfig (simulation) there is no Node to patch; with one, only the Node metadata updates.
    assert.deepEqual(changed(relabelled), [], "no join, server or command steps");

    const opened = (raw: Record<string, unknown>) => {
      relabel(raw);
      raw["nodefleet:firewall"] = { nodePortSources: ["198.51.100.0/24"] };
    };
    const reloaded = await engine.up(definition(opened, relabelled.outputs.nodes));
    assert.equal(reloaded.succeeded, true);
    assert.deepEqual(
      changed(reloaded),
      [0, 1].map((i) => `update example-${EM_POOL}-${EM_POOL}-${i}-host-firewall`),
      "every member at once, nothing else",
    );
    const rollout = (reloaded.outputs.rollout as Array<{ pool: string; updating: unknown[]; remaining: number }>).find(
      (r) => r.pool === EM_POOL,
    );
    assert.deepEqual([rollout?.updating, rollout?.remaining], [[], 0], "no rollout step for either");
  });

  it("reinstalls one Robot server per run on a new image; the other's rescue, install and join stay `same`", async () => {
    const engine = new SimulatedEngine({ dataDir: dataDir(), bootDelayMs: 0, env: {}, logger: silent });
    const robot = (image: string) => (raw: Record<string, unknown>) => {
      raw["nodefleet:pools"] = [
        ...(raw["nodefleet:pools"] as unknown[]),
        {
          name: "fsn-metal",
          provider: "hetzner-robot",
          mode: "static",
          image,
          servers: [
            { serverNumber: 321, name: "a" },
            { serverNumber: 654, name: "b" },
          ],
          sshKeyFingerprints: ["15:28:b0:03:95:f0:77:b3:10:56:15:6b:77:22:a5:bb"],
        },
      ];
    };
    const first = await engine.up(definition(robot("ubuntu-24.04")));
    assert.equal(first.succeeded, true, JSON.stringify(first.steps.filter((s) => s.error)));
    const second = await engine.up(definition(robot("ubuntu-22.04"), first.outputs.nodes));
    assert.equal(second.succeeded, true, JSON.stringify(second.steps.filter((s) => s.error)));
    const changed = (run: typeof second, member: string) =>
      run.steps
        .filter((s) => s.op !== "same" && s.name.startsWith(`example-fsn-metal-${member}-`))
        .map((s) => `${s.op} ${s.name.slice("example-fsn-metal-".length)}`);
    assert.ok(
      changed(second, "fsn-metal-a").some((s) => s === "replace fsn-metal-a-rescue"),
      `a is reinstalled: ${changed(second, "fsn-metal-a").join(", ")}`,
    );
    assert.deepEqual(changed(second, "fsn-metal-b"), [], "b waits, untouched");
    const third = await engine.up(definition(robot("ubuntu-22.04"), second.outputs.nodes));
    assert.deepEqual(changed(third, "fsn-metal-a"), []);
    assert.ok(
      changed(third, "fsn-metal-b").some((s) => s === "replace fsn-metal-b-rescue"),
      "then b",
    );
  });
});
