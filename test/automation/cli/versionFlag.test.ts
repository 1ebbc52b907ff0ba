/** `nodefleet --version` prints package.json's version. */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as path from "node:path";
import { packageVersion } from "../../../components/shared/packageVersion";
import { runNodefleet } from "../../support/nodefleetCli";
import { REPOSITORY_ROOT } from "../../support/serveProcess";

const VERSION = (JSON.parse(fs.readFileSync(path.join(REPOSITORY_ROOT, "package.json"), "utf8")) as { version: string }).version;

describe("nodefleet --version", function () {
  this.timeout(60_000);

  it("prints package.json's version and exits 0", async () => {
    const result = await runNodefleet(["--version"]);
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stdout, `${VERSION}\n`);
  });

  it("finds the package's own package.json from wherever the code runs, and no other", () => {
    assert.equal(packageVersion(path.join(REPOSITORY_ROOT, "dist", "automation", "cli")), VERSION);
    // node_modules/pino has a package.json of its own: not nodefleet's, so the walk goes on up.
    assert.equal(packageVersion(path.join(REPOSITORY_ROOT, "node_modules", "pino", "lib")), VERSION);
    assert.throws(() => packageVersion("/"), /no package\.json of nodefleet above \//);
  });
});
