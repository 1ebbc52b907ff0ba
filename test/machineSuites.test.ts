/**
 * The machine files (root sandboxes with sshd on port 22 of fixed loopback addresses) run only in
 * the machine groups `npm run test:machines` starts (the sandbox's own files first, alone, then
 * two groups at once), never among mocha's parallel workers:
 * every file a group lists is in `.mocharc.json`'s ignore list, in one group only, and exists.
 */
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { REPOSITORY_ROOT } from "./support/serveProcess";

const GROUPS = [".mocharc.machines-sandbox.json", ".mocharc.machines-robot.json", ".mocharc.machines-scaleway.json"];

const specOf = (file: string) => (JSON.parse(readFileSync(join(REPOSITORY_ROOT, file), "utf8")) as { spec: string[] }).spec;

describe("the machine test groups", () => {
  it("run every machine file once, outside the parallel suite, and the script starts every group", () => {
    const grouped = GROUPS.flatMap(specOf);
    assert.equal(new Set(grouped).size, grouped.length, "no file in two groups (they run at once)");
    const ignored = (JSON.parse(readFileSync(join(REPOSITORY_ROOT, ".mocharc.json"), "utf8")) as { ignore: string[] }).ignore;
    assert.deepEqual([...ignored].sort(), [...grouped].sort(), "the parallel suite skips exactly the grouped files");
    for (const file of grouped) assert.ok(existsSync(join(REPOSITORY_ROOT, file)), `${file} exists (compiled)`);
    const script = (JSON.parse(readFileSync(join(REPOSITORY_ROOT, "package.json"), "utf8")) as { scripts: Record<string, string> }).scripts[
      "test:machines"
    ]!;
    for (const group of GROUPS) assert.ok(script.includes(group), `test:machines runs ${group}`);
  });
});
