/**
 * The real engine is the reference (docs/design.md §4.3): one sequence of the engine contract's scenarios
 * (ups, a preview and a refresh) runs on the automation engine (real pulumi CLI) and on the
 * simulated engine, and their results are compared scenario by scenario: op per resource, changed
 * and replace-forcing keys, failures, and the servers in the outputs. It runs twice: the real engine with cloud-free stand-ins of the servers (quick, no
 * network or subnet), and on the local cloud, the real engine with nodefleet's hcloud plugin against
 * the fake Hetzner API, every resource compared. Documented exceptions, asserted separately: the real
 * engine's steps arrive in completion order (compared sorted by name), ids and addresses differ.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { AutomationEngine } from "../../../automation/engine/automationEngine";
import type { RunResult, StackDefinition, StackEngine } from "../../../automation/engine/stackEngine";
import { buildFakeHcloud } from "../../../automation/local/fakeHcloud/fakeHcloudApi";
import { SimulatedEngine } from "../../../automation/simulated/simulatedEngine";
import { type HcloudExchange, hcloudOpenApiViolations, recordHcloudExchanges } from "../../support/hcloudOpenApi";
import { describeStep } from "../../support/stepDescription";
import type { TestMember, TestProgramArgs } from "../../support/engineTestProgram";
import { tempDirPerTest } from "../../support/tempDirPerTest";
import { missingTools, skipUnlessAvailable } from "../../support/toolchainRequirement";

const PROGRAM_MODULE = join(__dirname, "..", "..", "support", "engineTestProgram.js");
/** Sold out for the cloud-free stand-in (it fails any type named so) and, by the knob, for the fake Hetzner API. */
const SOLD_OUT = "cpx-soldout";
/** A real type the local cloud's fake Hetzner API is told is sold out. */
const SOLD_OUT_ON_LOCAL_CLOUD = "cx22";
const HCLOUD_TOKEN = "d".repeat(64);
/** Resources only the simulated (hcloud) variant of the test program declares. */
const SIMULATED_ONLY = new Set(["net", "subnet"]);
const silent = { info() {}, warn() {}, error() {} };

function members(count: number, overrides: Partial<Record<number, Partial<TestMember>>> = {}): TestMember[] {
  return Array.from({ length: count }, (_, i) => ({ name: `m${i}`, serverType: "cpx21", ...overrides[i] }));
}

const V2 = "#cloud-config\nruncmd: [echo v2]\n";

/**
 * The scenario sequence, the engine contract's (engineContract.test.ts) in one stack: each entry is
 * the fleet the next run declares, an up unless `kind` says otherwise; `soldOut` names the type that
 * cannot be created.
 */
const scenarios = (soldOut: string): ReadonlyArray<{ name: string; kind?: "preview" | "refresh"; members: TestMember[] }> => [
  { name: "create two", members: members(2) },
  { name: "a preview of three applies nothing", kind: "preview", members: members(3) },
  { name: "no change", members: members(2) },
  { name: "scale up to three", members: members(3) },
  { name: "a refresh reads every resource back unchanged", kind: "refresh", members: members(3) },
  { name: "user data change replaces one", members: members(3, { 0: { userData: V2 } }) },
  { name: "server type change updates one", members: members(3, { 0: { userData: V2 }, 1: { serverType: "cpx31" } }) },
  { name: "scale down to two", members: members(2, { 0: { userData: V2 }, 1: { serverType: "cpx31" } }) },
  {
    name: "one sold-out member fails, the other is created",
    members: members(4, { 0: { userData: V2 }, 1: { serverType: "cpx31" }, 2: { serverType: soldOut } }),
  },
  {
    name: "an ignored user data change leaves the server as it is",
    members: members(4, {
      0: { userData: V2 },
      1: { serverType: "cpx31" },
      2: { serverType: soldOut },
      3: { userData: "#cloud-config\nruncmd: [echo v3]\n", keepUserData: true },
    }),
  },
];

interface Observed {
  readonly steps: string[];
  readonly succeeded: boolean;
  readonly servers: number;
}

function normalise(result: RunResult, ignored: ReadonlySet<string>): Observed {
  return {
    steps: result.steps
      .filter((s) => !ignored.has(s.name))
      .map(describeStep)
      .sort(),
    succeeded: result.succeeded,
    servers: Object.keys((result.outputs.servers ?? {}) as Record<string, unknown>).length,
  };
}

interface ScenarioRun {
  readonly programArgs: TestProgramArgs;
  /** The type the scenarios' sold-out member asks for. */
  readonly soldOut: string;
  /** Resources left out of the comparison. */
  readonly ignored: ReadonlySet<string>;
  /** Provider settings (the fake Hetzner API's endpoint). */
  readonly config?: StackDefinition["config"];
}

async function runScenarios(engine: StackEngine, run: ScenarioRun): Promise<Observed[]> {
  const observed: Observed[] = [];
  for (const scenario of scenarios(run.soldOut)) {
    const stack: StackDefinition = {
      stackName: "differential",
      program: { module: PROGRAM_MODULE, args: run.programArgs },
      config: { ...run.config, "enginetest:members": { value: scenario.members }, "enginetest:cluster": { value: "differential" } },
    };
    const result = await (scenario.kind === "preview"
      ? engine.preview(stack)
      : scenario.kind === "refresh"
        ? engine.refresh(stack)
        : engine.up(stack));
    assert.equal(result.kind, scenario.kind ?? "up", scenario.name);
    observed.push(normalise(result, run.ignored));
  }
  return observed;
}

/** Scenario by scenario the same, and the real engine did preview, refresh, replace, update, delete and fail what it should. */
function assertAgree(real: Observed[], simulated: Observed[]): void {
  const all = scenarios(SOLD_OUT);
  all.forEach((scenario, i) => {
    // A failed member has no server output on the real engine; the simulated program's map keeps
    // the others (the real one loses the whole map: see the API stack's per-member outputs). A
    // preview has no outputs on the real engine.
    const comparable = (o: Observed) => (o.succeeded && scenario.kind !== "preview" ? o : { ...o, servers: -1 });
    assert.deepEqual(comparable(simulated[i]!), comparable(real[i]!), `scenario "${scenario.name}"`);
  });
  const steps = (name: string) => real[all.findIndex((s) => s.name === name)]!.steps;
  const previewed = steps("a preview of three applies nothing");
  assert.ok(previewed.includes("create m2-server"), previewed.join("; "));
  assert.ok(
    steps("no change").every((s) => s.startsWith("same ")),
    steps("no change").join("; "),
  );
  assert.ok(steps("scale up to three").includes("create m2-server"), steps("scale up to three").join("; "));
  const refreshed = steps("a refresh reads every resource back unchanged");
  assert.ok(refreshed.includes("same m2-server") && refreshed.every((s) => s.startsWith("same ")), refreshed.join("; "));
  assert.ok(
    steps("user data change replaces one").some((s) => /^replace m0-server .*replace=userData/.test(s)),
    steps("user data change replaces one").join("; "),
  );
  assert.ok(
    steps("server type change updates one").includes("update m1-server keys=serverType"),
    steps("server type change updates one").join("; "),
  );
  assert.ok(steps("scale down to two").includes("delete m2-server"), steps("scale down to two").join("; "));
  const soldOut = steps("one sold-out member fails, the other is created");
  assert.ok(
    soldOut.some((s) => s.startsWith("create m2-server") && s.endsWith("FAILED")),
    soldOut.join("; "),
  );
  const ignored = steps("an ignored user data change leaves the server as it is");
  assert.ok(ignored.includes("same m3-server") && ignored.includes("same m3-suffix"), ignored.join("; "));
  // The exception above, asserted: on the real engine a failed member collapses the one-map output.
  assert.equal(real.at(-1)!.succeeded, false);
}

const simulatedEngine = (dataDir: string, soldOut: string) =>
  new SimulatedEngine({ dataDir, bootDelayMs: 0, outOfStock: [soldOut], failCreateRate: 0, env: {}, logger: silent });

describe("engine differential: the simulated engine agrees with the real one", function () {
  this.timeout(10 * 60_000);
  const dataDir = tempDirPerTest("nodefleet-differential-");

  it("gives the same steps, failures and servers for every scenario (real engine with cloud-free stand-ins)", async function () {
    skipUnlessAvailable(this, missingTools("pulumi", "pulumi-resource-random"));
    const real = await runScenarios(
      new AutomationEngine({
        dataDir: join(dataDir(), "real"),
        env: { ...process.env, PULUMI_CONFIG_PASSPHRASE: "differential" },
        logger: silent,
      }),
      { programArgs: { mode: "local" }, soldOut: SOLD_OUT, ignored: SIMULATED_ONLY },
    );
    const simulated = await runScenarios(simulatedEngine(join(dataDir(), "simulated"), SOLD_OUT), {
      programArgs: { mode: "hcloud" },
      soldOut: SOLD_OUT,
      ignored: SIMULATED_ONLY,
    });
    assertAgree(real, simulated);
  });

  it("gives the same on the local cloud: the real engine with the hcloud plugin against the fake Hetzner API, network and subnet included", async function () {
    skipUnlessAvailable(this, missingTools("pulumi", "pulumi-resource-random", "pulumi-resource-hcloud"));
    const fake = buildFakeHcloud({
      token: HCLOUD_TOKEN,
      stateFile: join(dataDir(), "hcloud.json"),
      actionMs: 50,
      outOfStock: [SOLD_OUT_ON_LOCAL_CLOUD],
    });
    const exchanges: HcloudExchange[] = [];
    recordHcloudExchanges(fake, exchanges);
    const endpoint = await fake.app.listen({ port: 0, host: "127.0.0.1" });
    try {
      const real = await runScenarios(
        new AutomationEngine({
          dataDir: join(dataDir(), "real"),
          env: { ...process.env, PULUMI_CONFIG_PASSPHRASE: "differential", HCLOUD_TOKEN },
          logger: silent,
        }),
        {
          programArgs: { mode: "hcloud" },
          soldOut: SOLD_OUT_ON_LOCAL_CLOUD,
          ignored: new Set(),
          config: { "hcloud:endpoint": { value: endpoint }, "hcloud:pollInterval": { value: "50ms" } },
        },
      );
      const simulated = await runScenarios(simulatedEngine(join(dataDir(), "simulated"), SOLD_OUT_ON_LOCAL_CLOUD), {
        programArgs: { mode: "hcloud" },
        soldOut: SOLD_OUT_ON_LOCAL_CLOUD,
        ignored: new Set(),
      });
      assertAgree(real, simulated);
      // The servers the real engine's outputs name are the ones the fake Hetzner API holds.
      const response = await fetch(`${endpoint}/servers?label_selector=nodefleet.io/cluster=differential`, {
        headers: { Authorization: `Bearer ${HCLOUD_TOKEN}` },
      });
      const held = ((await response.json()) as { servers: Array<{ name: string }> }).servers.map((s) => s.name);
      assert.equal(held.length, 3, `m0, m1 and m3 run, the sold-out m2 does not: ${held.join(", ")}`);
      assert.deepEqual(exchanges.flatMap(hcloudOpenApiViolations), []);
    } finally {
      await fake.app.close();
    }
  });
});
