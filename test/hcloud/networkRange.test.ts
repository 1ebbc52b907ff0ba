/**
 * A changed network range is refused before anything is declared: Hetzner's provider replaces a
 * network to change its range, which would collide on the name and re-address every server.
 */
import assert from "node:assert/strict";
import { networkOutput, networkRangeChangeProblem } from "../../components/hcloud/clusterNetwork";
import type { StackDefinition } from "../../automation/engine/stackEngine";
import { gitStackProgram } from "../../automation/gitStackProgram";
import { SimulatedEngine } from "../../automation/simulated/simulatedEngine";
import { stackFileConfig } from "../support/fleetConfigFixture";
import { tempDirPerTest } from "../support/tempDirPerTest";

const silent = { info() {}, warn() {}, error() {} };
const spec = (ipRange: string) => ({ network: { ipRange } });

describe("the cluster network's range", function () {
  this.timeout(300_000);
  const dataDir = tempDirPerTest("nodefleet-network-range-");

  it("is refused when it differs from the previous run's, naming the field, both ranges and what to do", () => {
    const problem = networkRangeChangeProblem(spec("10.1.0.0/16"), networkOutput(spec("10.0.0.0/16")));
    assert.match(problem ?? "", /^nodefleet:network\.ipRange: cannot change on an existing network \(10\.0\.0\.0\/16 -> 10\.1\.0\.0\/16\)/);
    assert.match(problem ?? "", /keep 10\.0\.0\.0\/16/);
  });

  it("is accepted unchanged, on a first run, and after a run that recorded no range", () => {
    assert.equal(networkRangeChangeProblem(spec("10.0.0.0/16"), networkOutput(spec("10.0.0.0/16"))), undefined);
    assert.equal(networkRangeChangeProblem(spec("10.0.0.0/16"), undefined), undefined);
    assert.equal(networkRangeChangeProblem(spec("10.0.0.0/16"), {}), undefined);
  });

  it("stops the simulated engine's up before any step, and the unchanged range still applies", async () => {
    const engine = new SimulatedEngine({ dataDir: dataDir(), bootDelayMs: 0, env: {}, logger: silent });
    const definition = (ipRange: string, previousNetwork?: unknown): StackDefinition => {
      const raw = structuredClone(stackFileConfig("example")) as Record<string, Record<string, unknown>>;
      raw["nodefleet:network"] = { ...raw["nodefleet:network"], ipRange };
      const config = Object.fromEntries(Object.entries(raw).map(([key, value]) => [key, { value }]));
      return {
        stackName: "example",
        program: gitStackProgram({ allowMissingKubeconfig: true, ...(previousNetwork !== undefined ? { previousNetwork } : {}) }),
        config,
      };
    };
    const first = await engine.up(definition("10.0.0.0/16"));
    assert.equal(first.succeeded, true);
    assert.deepEqual(first.outputs.network, { ipRange: "10.0.0.0/16" }, "the run records its range for the next one");
    const servers = engine.cloud
      .listServers("")
      .map((s) => s.id)
      .sort();
    await assert.rejects(engine.up(definition("10.0.0.0/15", first.outputs.network)), /nodefleet:network\.ipRange: cannot change/);
    assert.deepEqual(
      engine.cloud
        .listServers("")
        .map((s) => s.id)
        .sort(),
      servers,
      "nothing was replaced",
    );
    const again = await engine.up(definition("10.0.0.0/16", first.outputs.network));
    assert.equal(again.succeeded, true);
    assert.equal(again.summary.create + again.summary.replace + again.summary.delete, 0);
  });
});
