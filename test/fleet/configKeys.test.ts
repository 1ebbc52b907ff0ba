/**
 * A typo in the `nodefleet:` namespace is refused with the nearest valid key, wherever the spec is
 * checked: parseFleetSpec (serve, nodefleet preview), and the program itself, which must read every
 * key the stack sets to see the typo at all (pulumi up, render, the engines).
 */
import { strict as assert } from "node:assert";
import { NON_SPEC_CONFIG_KEYS, unknownConfigKeyProblems } from "../../components/fleet/configKeys";
import { FLEET_SPEC_KEYS, FleetSpecError, parseFleetSpec } from "../../components/fleet/fleetSpec";
import { API_TOKENS_KEY } from "../../automation/api/apiTokenSources";
import { rawFleetConfig, runFleetProgramUnderMocks, specProblems } from "../support/fleetConfigFixture";

/** The fixture with `nodefleet:pools` under another key. */
function withPoolsAt(key: string): Record<string, unknown> {
  const { "nodefleet:pools": pools, ...rest } = rawFleetConfig();
  return { ...rest, [key]: pools };
}

describe("nodefleet: config keys", () => {
  it("refuses nodefleet:pool, naming nodefleet:pools", () => {
    const problems = specProblems(withPoolsAt("nodefleet:pool"));
    assert.equal(problems.length, 1, problems.join("\n"));
    assert.match(
      problems[0]!,
      /^nodefleet:pool: unknown key in the nodefleet namespace \(did you mean nodefleet:pools\?\); the keys are nodefleet:cluster, /,
    );
  });

  it("refuses every unknown key at once, with a suggestion only where one is close", () => {
    const problems = specProblems({
      ...rawFleetConfig(),
      "nodefleet:netwrok": {},
      "nodefleet:allowEmptyFleets": true,
      "nodefleet:xyzzy": 1,
    });
    assert.equal(problems.length, 3, problems.join("\n"));
    assert.match(problems[0]!, /^nodefleet:netwrok: unknown key .*\(did you mean nodefleet:network\?\)/);
    assert.match(problems[1]!, /^nodefleet:allowEmptyFleets: unknown key .*\(did you mean nodefleet:allowEmptyFleet\?\)/);
    assert.match(problems[2]!, /^nodefleet:xyzzy: unknown key in the nodefleet namespace; the keys are /);
  });

  it("accepts the spec's keys, the keys read outside the spec, and other namespaces", () => {
    const config = {
      ...rawFleetConfig(),
      "nodefleet:allowEmptyFleet": false,
      "hcloud:token": "x",
      "pulumi:tags": {},
      "aws:region": "eu-central-1",
    };
    for (const key of Object.keys(NON_SPEC_CONFIG_KEYS)) (config as Record<string, unknown>)[key] = "value";
    assert.doesNotThrow(() => parseFleetSpec(config));
    assert.deepEqual(unknownConfigKeyProblems(Object.keys(config), FLEET_SPEC_KEYS), []);
  });

  it("knows the scaling API's token key as the API names it", () => {
    assert.ok(API_TOKENS_KEY in NON_SPEC_CONFIG_KEYS);
  });

  it("reaches the check from the program: a typo fails the run under mocks before anything is declared", async () => {
    let declared = 0;
    await assert.rejects(
      runFleetProgramUnderMocks(withPoolsAt("nodefleet:pool"), {
        newResource: (args) => {
          declared += 1;
          return { id: `${args.name}-id`, state: args.inputs };
        },
      }),
      (error: Error) =>
        error instanceof FleetSpecError && /nodefleet:pool: unknown key .*did you mean nodefleet:pools\?/.test(error.message),
    );
    assert.equal(declared, 0, "no resource was registered");
  });
});
