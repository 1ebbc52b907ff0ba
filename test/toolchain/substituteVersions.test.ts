/**
 * The toolchain build refuses a substitute piece (nodefleet's own plugin standing in for upstream's)
 * whose declared version is not the one its npm SDK pins in package-lock.json (issue #34): the engine
 * asks for the SDK's version and FIDELITY.md holds the double to that release.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { REPOSITORY_ROOT } from "../support/serveProcess";
import { tempDirPerTest } from "../support/tempDirPerTest";

const run = promisify(execFile);
const TOOLCHAIN = join(REPOSITORY_ROOT, "toolchain");

/** A repository holding build.mjs, one substitute piece whose main.go states `declared`, and a lock pinning @pulumi/hcloud 1.41.0. */
function driftedRepository(root: string, declared: string, piece: Record<string, unknown> = {}): string {
  const toolchain = join(root, "toolchain");
  mkdirSync(join(toolchain, "providers", "cmd", "pulumi-resource-hcloud"), { recursive: true });
  for (const file of ["build.mjs", "substituteVersions.mjs"]) copyFileSync(join(TOOLCHAIN, file), join(toolchain, file));
  writeFileSync(
    join(toolchain, "pieces.json"),
    JSON.stringify({
      pieces: [
        {
          name: "pulumi-resource-hcloud",
          module: "providers",
          package: "./cmd/pulumi-resource-hcloud",
          versionFrom: "@pulumi/hcloud",
          substituteFor: "github.com/pulumi/pulumi-hcloud/provider",
          ...piece,
        },
      ],
    }),
  );
  writeFileSync(join(toolchain, "providers", "cmd", "pulumi-resource-hcloud", "main.go"), `package main\n\nvar version = "${declared}"\n`);
  writeFileSync(join(root, "package-lock.json"), JSON.stringify({ packages: { "node_modules/@pulumi/hcloud": { version: "1.41.0" } } }));
  return join(toolchain, "build.mjs");
}

async function build(script: string, cache: string): Promise<{ code: number; stderr: string }> {
  try {
    const { stderr } = await run(process.execPath, [script], { env: { ...process.env, NODEFLEET_TOOLCHAIN_DIR: cache } });
    return { code: 0, stderr };
  } catch (error) {
    const failed = error as { code: number; stderr: string };
    return { code: failed.code, stderr: failed.stderr };
  }
}

describe("the toolchain build holds substitute pieces to their SDK's version", function () {
  this.timeout(60_000);
  const temp = tempDirPerTest("nodefleet-substitute-versions-");

  it("fails, naming the piece, both versions and the SDK, before building anything", async () => {
    const root = temp();
    const result = await build(driftedRepository(root, "1.40.0"), join(root, "cache"));
    assert.equal(result.code, 1, result.stderr);
    assert.match(result.stderr, /pulumi-resource-hcloud declares version 1\.40\.0 \(providers\/cmd\/pulumi-resource-hcloud\/main\.go\)/);
    assert.match(result.stderr, /@pulumi\/hcloud is 1\.41\.0 in package-lock\.json/);
    assert.ok(!existsSync(join(root, "cache", "pieces")), "something was built");
  });

  it("fails for a fixed-version substitute whose `sdk` pins another version, and for one naming no SDK", async () => {
    const root = join(temp(), "fixed");
    const fixed = { versionFrom: undefined, version: "v1.39.0", sdk: "@pulumi/hcloud" };
    const result = await build(driftedRepository(root, "1.41.0", fixed), join(root, "cache"));
    assert.equal(result.code, 1, result.stderr);
    assert.match(result.stderr, /declares version v1\.39\.0 \(toolchain\/pieces\.json\) but @pulumi\/hcloud is 1\.41\.0/);
    const none = join(temp(), "unnamed");
    const unnamed = await build(driftedRepository(none, "1.41.0", { versionFrom: undefined, version: "1.41.0" }), join(none, "cache"));
    assert.equal(unnamed.code, 1, unnamed.stderr);
    assert.match(unnamed.stderr, /names no npm SDK/);
  });

  it("finds every substitute of the repository's own pieces.json at its SDK's version", async () => {
    const check = [
      `import { readFileSync } from "node:fs";`,
      `import { declaredGoVersion, substituteVersionProblems } from ${JSON.stringify(join(TOOLCHAIN, "substituteVersions.mjs"))};`,
      `const { pieces } = JSON.parse(readFileSync(${JSON.stringify(join(TOOLCHAIN, "pieces.json"))}, "utf8"));`,
      `const lock = JSON.parse(readFileSync(${JSON.stringify(join(REPOSITORY_ROOT, "package-lock.json"))}, "utf8"));`,
      `const problems = substituteVersionProblems(pieces, (p) => lock.packages["node_modules/" + p].version, (p) => declaredGoVersion(${JSON.stringify(TOOLCHAIN)}, p));`,
      `process.stdout.write(JSON.stringify({ problems, substitutes: pieces.filter((p) => p.substituteFor).length }));`,
    ].join("\n");
    const { stdout } = await run(process.execPath, ["--input-type=module", "-e", check]);
    const { problems, substitutes } = JSON.parse(stdout) as { problems: string[]; substitutes: number };
    assert.deepEqual(problems, []);
    assert.ok(substitutes >= 5, `only ${substitutes} substitutes checked`);
  });
});
