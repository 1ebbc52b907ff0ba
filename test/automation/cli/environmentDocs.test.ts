/**
 * docs/environment.md lists every environment variable the product reads: this test greps the
 * sources (the CLI, the service, the components, the stacks' program, the node scripts they render,
 * the toolchain build) for reads of NODEFLEET_* (and the cloud and Pulumi variables) and fails on
 * one the table's first column does not name.
 */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as path from "node:path";
import { REPOSITORY_ROOT } from "../../support/serveProcess";

const SOURCE_DIRS = ["automation", "components", "stacks", "bin", "toolchain"];
const SOURCE_FILE = /\.(ts|js|mjs)$/;
const NAME = "((?:NODEFLEET|HCLOUD|SCW|HROBOT|PULUMI)_[A-Z0-9_]+)";
/**
 * The ways the sources read a variable: `env.X` / `process.env.X` / `env?.X`, `env["X"]`, a helper
 * given the environment and the name (`intEnv(env, "X", ...)`), and a shell expansion in a rendered
 * script, which always carries its default (`${X:-default}`) or is escaped in a template literal
 * (`\${X}`): a bare `${X}` in TypeScript is a constant interpolated, not a read. Heredoc
 * delimiters and error codes named NODEFLEET_* are not reads either.
 */
const READS = [
  new RegExp(`\\benv\\??\\.${NAME}\\b`, "g"),
  new RegExp(`\\benv\\[\\s*["'\`]${NAME}["'\`]\\s*\\]`, "g"),
  new RegExp(`\\benv,\\s*["'\`]${NAME}["'\`]`, "g"),
  new RegExp(`\\$\\{${NAME}:?[-=]`, "g"),
  new RegExp(`\\\\\\$\\{${NAME}\\}`, "g"),
];

function sourceFiles(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === "node_modules" ? [] : sourceFiles(full);
    return SOURCE_FILE.test(entry.name) ? [full] : [];
  });
}

/** Variable name -> the files reading it. */
function variablesRead(): Map<string, string[]> {
  const found = new Map<string, string[]>();
  for (const file of SOURCE_DIRS.flatMap((dir) => sourceFiles(path.join(REPOSITORY_ROOT, dir)))) {
    const text = fs.readFileSync(file, "utf8");
    for (const pattern of READS) {
      for (const match of text.matchAll(pattern)) {
        const readers = found.get(match[1]!) ?? [];
        found.set(match[1]!, [...readers, path.relative(REPOSITORY_ROOT, file)]);
      }
    }
  }
  return found;
}

/** The names in the first column of docs/environment.md's table (a cell may name several: `A`, `B`). */
function documented(): Set<string> {
  const page = fs.readFileSync(path.join(REPOSITORY_ROOT, "docs", "environment.md"), "utf8");
  const firstCells = page
    .split("\n")
    .filter((line) => line.startsWith("| `"))
    .map((line) => line.split("|")[1]!);
  return new Set(firstCells.flatMap((cell) => [...cell.matchAll(/`([A-Z][A-Z0-9_]*)`/g)].map((m) => m[1]!)));
}

describe("docs/environment.md", () => {
  it("documents every environment variable the sources read", () => {
    const read = variablesRead();
    // The grep must see the reads it is meant to see, or an empty result would pass.
    for (const known of [
      "NODEFLEET_API_TOKENS",
      "NODEFLEET_LOG_FORMAT",
      "NODEFLEET_BATCH_IDLE_MS",
      "NODEFLEET_ROOT",
      "NODEFLEET_SIM_BOOT_DELAY_MS",
      "HCLOUD_TOKEN",
    ]) {
      assert.ok(read.has(known), `the grep finds ${known}`);
    }
    assert.ok(!read.has("NODEFLEET_EOF"), "a heredoc delimiter is not a variable read");
    const names = documented();
    const missing = [...read.keys()]
      .filter((name) => !names.has(name))
      .map((name) => `${name} (read in ${[...new Set(read.get(name))].join(", ")})`);
    assert.deepEqual(missing, [], `add these to the table in docs/environment.md: ${missing.join("; ")}`);
  });

  it("has one row per variable", () => {
    const page = fs.readFileSync(path.join(REPOSITORY_ROOT, "docs", "environment.md"), "utf8");
    const rows = page.split("\n").filter((line) => line.startsWith("| `"));
    const names = rows.flatMap((row) => [...row.split("|")[1]!.matchAll(/`([A-Z][A-Z0-9_]*)`/g)].map((m) => m[1]!));
    assert.deepEqual(
      names.filter((name, i) => names.indexOf(name) !== i),
      [],
      "a variable in two rows",
    );
  });
});
