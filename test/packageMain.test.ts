import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as path from "node:path";

/** The repository root, from this file's place in dist/test. */
const ROOT = path.resolve(__dirname, "..", "..");

describe("package.json main", function () {
  // Loading the entry point loads every provider SDK.
  this.timeout(60_000);
  it("names the built entry point, which exports the Fleet component and the fleet program", () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8")) as { main: string };
    const entry = path.join(ROOT, pkg.main);
    assert.ok(fs.existsSync(entry), `${pkg.main} does not exist after the build`);
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const exported = require(entry) as Record<string, unknown>;
    assert.equal(typeof exported.Fleet, "function");
    assert.equal(typeof exported.fleetStackProgram, "function");
  });
});
