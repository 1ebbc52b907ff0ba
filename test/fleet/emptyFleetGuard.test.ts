/**
 * A config that declares no pools over a stack whose last update holds members is refused unless
 * `nodefleet:allowEmptyFleet: true`: the pure decision, the setting in the schema, and the program
 * stopping the simulated engine's run before any step.
 */
import { strict as assert } from "node:assert";
import fc from "fast-check";
import { ALLOW_EMPTY_FLEET_KEY, emptyFleetProblem } from "../../components/fleet/emptyFleetGuard";
import { FleetSpecError, parseFleetSpec } from "../../components/fleet/fleetSpec";
import type { StackDefinition } from "../../automation/engine/stackEngine";
import { gitStackProgram } from "../../automation/gitStackProgram";
import { SimulatedEngine } from "../../automation/simulated/simulatedEngine";
import { rawFleetConfig, stackFileConfig } from "../support/fleetConfigFixture";
import { tempDirPerTest } from "../support/tempDirPerTest";

const silent = { info() {}, warn() {}, error() {} };
const node = (pool: string, i: number) => ({ pool, nodeId: `${pool}-${i}`, hostname: `example-${pool}-${i}` });

describe("an empty fleet over a stack holding members", function () {
  this.timeout(300_000);
  const dataDir = tempDirPerTest("nodefleet-empty-fleet-");

  it("is refused, naming the members it would delete and the setting that allows it", () => {
    const previous = [node("hel1-general", 0), node("hel1-general", 1), node("fsn-metal", 0)];
    const problem = emptyFleetProblem({ pools: [], allowEmptyFleet: false }, previous) ?? "";
    assert.match(
      problem,
      /^nodefleet:pools: no pools are declared \(the key is missing or empty\), but the stack's last update holds 3 members \(hel1-general: 2, fsn-metal: 1\), which this run would delete/,
    );
    assert.ok(problem.includes(`set ${ALLOW_EMPTY_FLEET_KEY}: true`), problem);
  });

  it("is refused exactly when no pool is declared, the previous run has members and the setting is off", () => {
    fc.assert(
      fc.property(
        fc.nat({ max: 3 }),
        fc.nat({ max: 5 }),
        fc.boolean(),
        fc.constantFrom(undefined, null, {}, "x"),
        (pools, members, allow, notAList) => {
          const spec = { pools: Array.from({ length: pools }, (_, i) => ({ name: `p${i}` })), allowEmptyFleet: allow };
          const previous = Array.from({ length: members }, (_, i) => node("a", i));
          assert.equal(emptyFleetProblem(spec, previous) !== undefined, pools === 0 && members > 0 && !allow);
          assert.equal(emptyFleetProblem(spec, notAList), undefined, "a first run (no previous nodes) is never refused");
        },
      ),
    );
  });

  it("is a setting of the schema: false by default, true or false (the string pulumi config set writes too), nothing else", () => {
    assert.equal(parseFleetSpec(rawFleetConfig()).allowEmptyFleet, false);
    assert.equal(parseFleetSpec({ ...rawFleetConfig(), [ALLOW_EMPTY_FLEET_KEY]: true }).allowEmptyFleet, true);
    assert.equal(parseFleetSpec({ ...rawFleetConfig(), [ALLOW_EMPTY_FLEET_KEY]: "true" }).allowEmptyFleet, true);
    assert.equal(parseFleetSpec({ ...rawFleetConfig(), [ALLOW_EMPTY_FLEET_KEY]: "false" }).allowEmptyFleet, false);
    assert.throws(
      () => parseFleetSpec({ ...rawFleetConfig(), [ALLOW_EMPTY_FLEET_KEY]: "yes" }),
      (error: Error) =>
        error instanceof FleetSpecError && error.problems.includes("nodefleet:allowEmptyFleet: allowEmptyFleet must be true or false"),
    );
  });

  it("stops the simulated engine's run before any step; with allowEmptyFleet the fleet is emptied", async () => {
    const engine = new SimulatedEngine({ dataDir: dataDir(), bootDelayMs: 0, env: {}, logger: silent });
    const definition = (edit: (raw: Record<string, unknown>) => void, previousNodes?: unknown): StackDefinition => {
      const raw = structuredClone(stackFileConfig("example"));
      edit(raw);
      const config = Object.fromEntries(Object.entries(raw).map(([key, value]) => [key, { value }]));
      return {
        stackName: "example",
        program: gitStackProgram({ allowMissingKubeconfig: true, ...(previousNodes !== undefined ? { previousNodes } : {}) }),
        config,
      };
    };
    const first = await engine.up(definition(() => undefined));
    assert.equal(first.succeeded, true);
    const servers = engine.cloud
      .listServers("")
      .map((s) => s.id)
      .sort();
    assert.ok(servers.length > 0);

    for (const empty of [
      (raw: Record<string, unknown>) => (raw["nodefleet:pools"] = []),
      (raw: Record<string, unknown>) => delete raw["nodefleet:pools"],
    ]) {
      await assert.rejects(
        engine.up(definition(empty, first.outputs.nodes)),
        /nodefleet:pools: no pools are declared .*nodefleet:allowEmptyFleet: true/s,
      );
      assert.deepEqual(
        engine.cloud
          .listServers("")
          .map((s) => s.id)
          .sort(),
        servers,
        "nothing was deleted",
      );
    }

    const emptied = await engine.up(
      definition((raw) => ((raw["nodefleet:pools"] = []), (raw[ALLOW_EMPTY_FLEET_KEY] = true)), first.outputs.nodes),
    );
    assert.equal(emptied.succeeded, true);
    assert.deepEqual(engine.cloud.listServers(""), [], "asked for explicitly, the fleet is emptied");
  });
});
