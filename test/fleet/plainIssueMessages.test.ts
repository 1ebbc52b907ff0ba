/**
 * Config problems in plain words: a missing `limits.maxNodes` says it is required for an autoscaled
 * pool, and no change to the example stack, whatever field it breaks, shows zod's own wording.
 */
import { strict as assert } from "node:assert";

import { specProblems, stackFileConfig } from "../support/fleetConfigFixture";

/** zod's default messages ("Invalid input: expected number, received undefined", "Unrecognized key", "Too small: ..."). */
const ZOD_WORDING = /Invalid input|expected \w+, received|Unrecognized key|Too (small|big)|Invalid (string|option|element|key)/;

/** Every path to a value in `value` (objects and lists included), parents first. */
function pathsOf(value: unknown, at: Array<string | number> = []): Array<Array<string | number>> {
  const children = Array.isArray(value)
    ? value.map((v, i) => pathsOf(v, [...at, i]))
    : typeof value === "object" && value !== null
      ? Object.entries(value).map(([k, v]) => pathsOf(v, [...at, k]))
      : [];
  return [...(at.length > 0 ? [at] : []), ...children.flat()];
}

function withValueAt(config: Record<string, unknown>, path: Array<string | number>, replacement: unknown): Record<string, unknown> {
  const copy = structuredClone(config);
  let parent = copy as Record<string | number, unknown>;
  for (const part of path.slice(0, -1)) parent = parent[part] as Record<string | number, unknown>;
  const last = path[path.length - 1]!;
  if (replacement === undefined) {
    if (Array.isArray(parent)) parent.splice(last as number, 1);
    else delete parent[last];
  } else {
    parent[last] = replacement;
  }
  return copy;
}

describe("config problems in plain words", () => {
  it("a missing maxNodes is required for an autoscaled pool", () => {
    const config = structuredClone(stackFileConfig("example")) as Record<string, any>;
    delete config["nodefleet:pools"][1].limits.maxNodes;
    assert.deepEqual(specProblems(config), ["nodefleet:pools[1].limits.maxNodes: required for an autoscaled pool"]);
    delete config["nodefleet:pools"][1].limits;
    assert.deepEqual(specProblems(config), ["nodefleet:pools[1].limits: required for an autoscaled pool"]);
  });

  it("names the type a field must have, what was given instead, and the keys a misspelt one could be", () => {
    const config = structuredClone(stackFileConfig("example")) as Record<string, any>;
    config["nodefleet:pools"][1].limits.maxNodes = "90";
    config["nodefleet:pools"][0].replica = 3;
    config["nodefleet:pools"][0].image = "";
    config["nodefleet:pools"][1].mode = "auto";
    const problems = specProblems(config);
    assert.ok(problems.includes('nodefleet:pools[1].mode: mode must be static or autoscaled, not "auto"'), problems.join("\n"));
    assert.ok(problems.includes("nodefleet:pools[0].image: must not be empty"), problems.join("\n"));
    assert.ok(
      problems.some((p) => p.startsWith("nodefleet:pools[0]: unknown key replica (did you mean replicas?); the keys here are name, ")),
      problems.join("\n"),
    );
    config["nodefleet:pools"][1].mode = "autoscaled";
    assert.ok(specProblems(config).includes('nodefleet:pools[1].limits.maxNodes: must be a number, not the string "90"'));
  });

  it("never shows zod's own wording, whichever field of the example stack is removed or given a value of another type", () => {
    const example = stackFileConfig("example");
    let refused = 0;
    for (const path of pathsOf(example)) {
      for (const replacement of [undefined, null, 7, 2.5, -1, "", "text", true, [], {}, [{}]]) {
        const problems = specProblems(withValueAt(example, path, replacement));
        if (problems.length > 0) refused += 1;
        for (const problem of problems)
          assert.doesNotMatch(problem, ZOD_WORDING, `${JSON.stringify(path)} = ${JSON.stringify(replacement)}: ${problem}`);
      }
    }
    assert.ok(refused > 100, `${refused} broken configs were refused`);
  });
});
