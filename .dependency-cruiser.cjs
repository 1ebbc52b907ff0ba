/**
 * The import rules, checked by test/imports/importRules.test.ts (part of `npm test`); by hand:
 *   npx depcruise --config .dependency-cruiser.cjs components automation stacks bin bench test/support index.ts
 * The rules of components/ are README.md's ("What is where"), those of automation/ are
 * automation/README.md's ("Imports between folders"). Type-only imports count like any other
 * (tsPreCompilationDeps), and no module may import itself back through a chain.
 */

/** A folder (`name/`) or a single file (`name.ts`) under `root`, as a path regex. */
function node(root, name) {
  return name.endsWith(".ts") ? `^${root}/${name.replace(/\./g, "\\.")}$` : `^${root}/${name}/`;
}

/**
 * components/: imports point down this list and never sideways (README.md). `index.ts` composes the
 * pools and may import every folder.
 */
const COMPONENTS = {
  hcloud: ["provider", "bootstrap", "kubernetes", "fleet", "shared"],
  scaleway: ["provider", "bootstrap", "kubernetes", "fleet", "shared"],
  robot: ["provider", "bootstrap", "kubernetes", "fleet", "shared"],
  provider: ["kubernetes", "fleet", "shared"],
  bootstrap: ["fleet", "shared"],
  kubernetes: ["fleet", "shared"],
  fleet: ["shared"],
  shared: [],
};

/**
 * automation/: the layers, top to bottom (automation/README.md). A folder may import the folders of
 * the layers below it, not those of its own layer.
 */
const AUTOMATION_LAYERS = [
  ["cli"],
  ["api", "preview", "local", "init"],
  ["temporal"],
  ["reconciler"],
  ["store", "catalog", "render", "engine", "simulated", "heal"],
  ["mocks", "client", "hcloud", "scaleway", "gitStackProgram.ts", "stackConfigFile.ts"],
];

/** The imports that cross the layers on purpose (automation/README.md), besides the layers' own. */
const AUTOMATION_ALSO = {
  // simulated/ builds on engine/: its contract, run queue and progress format.
  simulated: ["engine"],
  // The client shares the wire format's one definition; types only (rule automation-client-schemas-types-only).
  client: ["api/schemas.ts"],
};

/** engine/stackEngine.ts is the engine contract: any folder may import its types. */
const STACK_ENGINE = "^automation/engine/stackEngine\\.ts$";

/** What stacks/autoscaledProgram.ts imports of its contract with the reconciler (automation/README.md). */
const STACKS_CONTRACT = ["reconciler/apiStack.ts", "reconciler/runOutcome.ts", "reconciler/memberSnapshot.ts", "store/claimSnapshot.ts"];

const componentRules = Object.entries(COMPONENTS).map(([folder, allowed]) => ({
  name: `components-${folder}`,
  comment: `components/${folder}/ imports ${allowed.length ? allowed.map((f) => `${f}/`).join(", ") : "nothing else in components/"} (README.md)`,
  severity: "error",
  from: { path: node("components", folder) },
  to: { path: "^components/", pathNot: [folder, ...allowed].map((f) => node("components", f)) },
}));

const automationRules = AUTOMATION_LAYERS.flatMap((layer, index) => {
  const below = AUTOMATION_LAYERS.slice(index + 1).flat();
  return layer.map((name) => {
    const allowed = [...below, ...(AUTOMATION_ALSO[name.replace(/\.ts$/, "")] ?? [])];
    return {
      name: `automation-${name.replace(/\.ts$/, "")}`,
      comment: `automation/${name} imports ${allowed.length ? allowed.join(", ") : "no other part of automation/"} and the types of engine/stackEngine.ts (automation/README.md)`,
      severity: "error",
      from: { path: node("automation", name) },
      to: { path: "^automation/", pathNot: [node("automation", name), ...allowed.map((n) => node("automation", n)), STACK_ENGINE] },
    };
  });
});

/** The folders below engine/ or beside it, which may import only the contract's types. */
const BESIDE_OR_BELOW_ENGINE = AUTOMATION_LAYERS.slice(3)
  .flat()
  .filter((n) => n !== "engine" && n !== "simulated");

module.exports = {
  forbidden: [
    {
      name: "no-circular",
      comment: "no module imports itself back through a chain of imports (type-only imports count)",
      severity: "error",
      from: {},
      to: { circular: true },
    },
    ...componentRules,
    {
      name: "components-not-to-automation-or-stacks",
      comment: "components/ is below automation/ and the programs in stacks/; it imports neither (README.md)",
      severity: "error",
      from: { path: "^components/" },
      to: { path: ["^automation/", "^stacks/", "^index\\.ts$"] },
    },
    ...automationRules,
    {
      name: "automation-stack-engine-types-only",
      comment: "the parts beside engine/ and the leaves import engine/stackEngine.ts for its types only",
      severity: "error",
      from: { path: BESIDE_OR_BELOW_ENGINE.map((n) => node("automation", n)) },
      to: { path: STACK_ENGINE, dependencyTypesNot: ["type-only"] },
    },
    {
      name: "automation-client-schemas-types-only",
      comment: "client/ takes the wire format from api/schemas.ts with `import type` only: the client loads no server code",
      severity: "error",
      from: { path: "^automation/client/" },
      to: { path: "^automation/api/schemas\\.ts$", dependencyTypesNot: ["type-only"] },
    },
    {
      name: "automation-not-to-stacks",
      comment: "the programs in stacks/ are loaded by module path, not imported (automation/README.md)",
      severity: "error",
      from: { path: "^automation/" },
      to: { path: "^stacks/", pathNot: "^stacks/fleetProgram\\.ts$" },
    },
    {
      name: "automation-stacks-types-only",
      comment:
        "of stacks/, automation/ may import the types of the git stack program's arguments (stacks/fleetProgram.ts) and nothing that runs",
      severity: "error",
      from: { path: "^automation/" },
      to: { path: "^stacks/fleetProgram\\.ts$", dependencyTypesNot: ["type-only"] },
    },
    {
      name: "stacks-automation-contract",
      comment: "stacks/ imports of automation/ only its side of the contract with the reconciler (automation/README.md)",
      severity: "error",
      from: { path: "^stacks/" },
      to: { path: "^automation/", pathNot: STACKS_CONTRACT.map((n) => node("automation", n)) },
    },
  ],
  options: {
    // The repository's own sources only: packages are neither followed nor checked.
    includeOnly: "^(components|automation|stacks|bin|bench|test)/|^index\\.ts$",
    exclude: { path: "^dist/" },
    doNotFollow: { path: "node_modules" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    moduleSystems: ["cjs", "es6"],
  },
};
