/**
 * The import rules: those of components/ (README.md), the layers of automation/
 * (automation/README.md) and no import cycle anywhere, stated in .dependency-cruiser.cjs and checked
 * with dependency-cruiser's API over the TypeScript sources, type-only imports included. A second
 * test cruises deliberately wrong imports in a temporary tree with the same folder names, so a rule
 * that stopped matching anything would show there.
 */
import { strict as assert } from "node:assert";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";

const ROOT = path.resolve(__dirname, "..", "..", "..");
const CONFIG = path.join(ROOT, ".dependency-cruiser.cjs");
const TSCONFIG = path.join(ROOT, "tsconfig.json");
/** What the rules cover: every source folder but the tests themselves (their shared helpers included). */
const SOURCES = ["components", "automation", "stacks", "bin", "bench", "test/support", "index.ts"];

interface Violation {
  readonly from: string;
  readonly to: string;
  readonly rule: { readonly name: string };
  readonly cycle?: ReadonlyArray<{ readonly name: string }>;
}
interface CruiseOptions {
  baseDir?: string;
  tsConfig?: { fileName: string };
  [option: string]: unknown;
}
interface DependencyCruiser {
  cruise(
    files: string[],
    options: CruiseOptions,
    resolveOptions?: object,
    transpileOptions?: { tsConfig?: unknown },
  ): Promise<{ output: unknown }>;
}

// dependency-cruiser is an ES module only; the tests are compiled to CommonJS, whose import() tsc
// would turn into require(). Left to Node as written, import() loads it.
const importModule = new Function("specifier", "return import(specifier)") as <T>(specifier: string) => Promise<T>;

async function dependencyCruiser(): Promise<{ cruiser: DependencyCruiser; options: CruiseOptions; tsConfig: unknown }> {
  const cruiser = await importModule<DependencyCruiser>("dependency-cruiser");
  const { default: extractDepcruiseOptions } = await importModule<{ default: (file: string) => Promise<CruiseOptions> }>(
    "dependency-cruiser/config-utl/extract-depcruise-options",
  );
  const { default: extractTSConfig } = await importModule<{ default: (file: string) => unknown }>(
    "dependency-cruiser/config-utl/extract-ts-config",
  );
  return { cruiser, options: await extractDepcruiseOptions(CONFIG), tsConfig: extractTSConfig(TSCONFIG) };
}

/** `from -> to (rule)`, and the whole chain of a cycle. */
function describeViolation(v: Violation): string {
  return `${v.from} -> ${v.to} (${v.rule.name})${v.cycle ? `: ${[v.from, ...v.cycle.map((c) => c.name)].join(" -> ")}` : ""}`;
}

function violationsOf(output: unknown): string[] {
  const result = output as { summary: { violations: Violation[] } };
  return result.summary.violations.map(describeViolation);
}

describe("import rules", function () {
  this.timeout(180_000);

  it("hold for components/, automation/, stacks/, bin/, bench/ and test/support/: no import breaks a rule, none closes a cycle", async () => {
    const { cruiser, options, tsConfig } = await dependencyCruiser();
    const { output } = await cruiser.cruise(SOURCES, { ...options, baseDir: ROOT, tsConfig: { fileName: TSCONFIG } }, undefined, {
      tsConfig,
    });
    const violations = violationsOf(output);
    if (violations.length > 0)
      assert.fail(`${violations.length} import(s) break the rules of .dependency-cruiser.cjs:\n  ${violations.join("\n  ")}`);
    const modules = (output as { modules: Array<{ source: string }> }).modules.map((m) => m.source);
    for (const expected of [
      "components/index.ts",
      "automation/cli/main.ts",
      "automation/hcloud/hcloudClient.ts",
      "stacks/autoscaledProgram.ts",
      "test/support/apiHarness.ts",
    ]) {
      assert.ok(modules.includes(expected), `${expected} was cruised`);
    }
  });

  it("catch wrong imports, type-only ones included, in a tree of the same folders", async () => {
    const { cruiser, options } = await dependencyCruiser();
    const dir = mkdtempSync(path.join(tmpdir(), "nodefleet-import-rules-"));
    try {
      const files: Record<string, string> = {
        // components/ never imports automation/.
        "components/fleet/wrongWay.ts": 'import type { Served } from "../../automation/api/server";\nexport type Wrong = Served;\n',
        "automation/api/server.ts": "export interface Served {\n  readonly id: string;\n}\n",
        // No provider imports another.
        "components/hcloud/sideways.ts": 'import { robotThing } from "../robot/robotThing";\nexport const sideways = robotThing;\n',
        "components/robot/robotThing.ts": "export const robotThing = 1;\n",
        // The store is below the reconciler.
        "automation/store/claimStore.ts": 'import type { Snapshot } from "../reconciler/memberSnapshot";\nexport type Claim = Snapshot;\n',
        "automation/reconciler/memberSnapshot.ts": "export interface Snapshot {\n  readonly serverType: string;\n}\n",
        // No cycle, even through a type.
        "components/shared/one.ts": 'import type { Two } from "./two";\nexport interface One {\n  readonly two?: Two;\n}\n',
        "components/shared/two.ts": 'import type { One } from "./one";\nexport interface Two {\n  readonly one?: One;\n}\n',
      };
      for (const [file, text] of Object.entries(files)) {
        mkdirSync(path.join(dir, path.dirname(file)), { recursive: true });
        writeFileSync(path.join(dir, file), text);
      }
      const { tsConfig: _unused, ...withoutTsConfig } = options;
      const { output } = await cruiser.cruise(["components", "automation"], { ...withoutTsConfig, baseDir: dir });
      assert.deepEqual(violationsOf(output).sort(), [
        "automation/store/claimStore.ts -> automation/reconciler/memberSnapshot.ts (automation-store)",
        "components/fleet/wrongWay.ts -> automation/api/server.ts (components-not-to-automation-or-stacks)",
        "components/hcloud/sideways.ts -> components/robot/robotThing.ts (components-hcloud)",
        // A cycle is reported once, from its first module.
        "components/shared/one.ts -> components/shared/two.ts (no-circular): components/shared/one.ts -> components/shared/two.ts -> components/shared/one.ts",
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
