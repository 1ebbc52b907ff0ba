/** Which stacks a service with several clusters serves: names, patterns, files (servedStacks.ts). */
import { strict as assert } from "node:assert";
import fc from "fast-check";
import { servedStackNames, servesOneStack, stackArgumentProblem, stackNamesOfFiles } from "../../../automation/cli/servedStacks";

const stackName = fc.stringMatching(/^[a-z0-9][a-z0-9._-]{0,11}$/);

describe("served stacks", function () {
  it("serves every name given, and of the files only what a pattern matches, sorted and once", function () {
    fc.assert(
      fc.property(
        fc.array(stackName, { maxLength: 6 }),
        fc.array(stackName, { maxLength: 8 }),
        fc.array(stackName, { maxLength: 3 }),
        (named, files, prefixes) => {
          const patterns = prefixes.map((prefix) => `${prefix}*`);
          const served = servedStackNames([...named, ...patterns], files);
          for (const name of named) assert.ok(served.includes(name), `${name} was named`);
          for (const name of served) {
            const matched = prefixes.some((prefix) => name.startsWith(prefix)) && files.includes(name);
            assert.ok(named.includes(name) || matched, `${name} was neither named nor matched`);
          }
          for (const file of files) {
            if (prefixes.some((prefix) => file.startsWith(prefix))) assert.ok(served.includes(file), `${file} matches a pattern`);
          }
          assert.deepEqual(served, [...new Set(served)].sort());
        },
      ),
    );
  });

  it("reads stack names from Pulumi.<name>.yaml files only", function () {
    assert.deepEqual(stackNamesOfFiles(["Pulumi.prod.yaml", "Pulumi.dev-1.yml", "Pulumi.yaml", "README.md", "Pulumi.a.b.yaml"]), [
      "prod",
      "dev-1",
      "a.b",
    ]);
  });

  it("serves one stack alone only for one plain name", function () {
    assert.equal(servesOneStack(["prod"]), true);
    assert.equal(servesOneStack(["prod-*"]), false);
    assert.equal(servesOneStack(["a", "b"]), false);
  });

  it("refuses an argument that is neither a stack name nor a pattern, naming it and the rule", function () {
    assert.equal(stackArgumentProblem("prod"), undefined);
    assert.equal(stackArgumentProblem("prod-?.eu*"), undefined);
    assert.match(stackArgumentProblem("../prod")!, /^--stack "\.\.\/prod": a stack name holds letters, digits/);
    assert.match(stackArgumentProblem("prod/[ab]*")!, /^--stack "prod\/\[ab\]\*": a pattern may hold letters/);
  });
});
