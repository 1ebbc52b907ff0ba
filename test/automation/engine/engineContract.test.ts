/**
 * The StackEngine contract, run against every engine available: the simulated engine always; the
 * Automation API engine when a `pulumi` CLI is on PATH (with a cloud-free program variant).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { AutomationEngine } from "../../../automation/engine/automationEngine";
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { descendantProcesses, killProcesses, processTrees, pulumiProcessesFor } from "../../../automation/engine/cliProcesses";
import { processAlive } from "../../../automation/engine/cliProcesses";
import { fileBackendUrl, pendingOperations, stackLocks } from "../../../automation/engine/fileBackendState";
import {
  type ResourceStep,
  RunCancelledError,
  RunFailedError,
  type StackDefinition,
  type StackEngine,
} from "../../../automation/engine/stackEngine";
import { SimulatedEngine } from "../../../automation/simulated/simulatedEngine";
import { gitStackProgram } from "../../../automation/gitStackProgram";
import type { TestMember, TestProgramArgs } from "../../support/engineTestProgram";
import { stackFileConfig } from "../../support/fleetConfigFixture";
import { tempDirPerTest } from "../../support/tempDirPerTest";
import { until } from "../../support/until";
import { missingTools, skipUnlessAvailable } from "../../support/toolchainRequirement";

const PROGRAM_MODULE = join(__dirname, "..", "..", "support", "engineTestProgram.js");
const SOLD_OUT = "cpx-soldout";

interface EngineCase {
  readonly name: string;
  /** Why this engine cannot run here, if it cannot. */
  readonly unavailable: () => string | undefined;
  readonly create: (dataDir: string, knobs?: { crashAfterSteps?: number }) => StackEngine;
  readonly programArgs: TestProgramArgs;
  /** Crash injection exists only in the simulation. */
  readonly canInjectCrash: boolean;
}

const silent = { info() {}, warn() {}, error() {} };

const ENGINES: EngineCase[] = [
  {
    name: "simulated",
    unavailable: () => undefined,
    create: (dataDir, knobs = {}) =>
      new SimulatedEngine({ dataDir, bootDelayMs: 50, outOfStock: [SOLD_OUT], failCreateRate: 0, env: {}, logger: silent, ...knobs }),
    programArgs: { mode: "hcloud" },
    canInjectCrash: true,
  },
  {
    name: "automation",
    unavailable: () => missingTools("pulumi", "pulumi-resource-random"),
    create: (dataDir) =>
      new AutomationEngine({ dataDir, env: { ...process.env, PULUMI_CONFIG_PASSPHRASE: "contract-tests" }, logger: silent }),
    programArgs: { mode: "local" },
    canInjectCrash: false,
  },
];

function members(count: number, overrides: Partial<Record<number, Partial<TestMember>>> = {}): TestMember[] {
  return Array.from({ length: count }, (_, i) => ({ name: `m${i}`, serverType: "cpx21", ...overrides[i] }));
}

function stepsOf(result: { steps: readonly ResourceStep[] }, op: ResourceStep["op"]): string[] {
  return result.steps
    .filter((s) => s.op === op)
    .map((s) => s.name)
    .sort();
}

/** The three resources each member declares (component, random suffix, server). */
function memberResources(...names: string[]): string[] {
  return names.flatMap((n) => [n, `${n}-server`, `${n}-suffix`]).sort();
}

function serverNames(result: { outputs: Readonly<Record<string, unknown>> }): string[] {
  return Object.keys((result.outputs.servers ?? {}) as Record<string, unknown>).sort();
}

for (const engineCase of ENGINES) {
  describe(`StackEngine contract: ${engineCase.name} engine`, function () {
    let engine: StackEngine;

    before(function () {
      skipUnlessAvailable(this, engineCase.unavailable());
    });

    const dataDir = tempDirPerTest(`nodefleet-contract-${engineCase.name}-`);

    beforeEach(function () {
      engine = engineCase.create(dataDir());
    });

    function stack(memberList: TestMember[], stackName = "contract"): StackDefinition {
      return {
        stackName,
        program: { module: PROGRAM_MODULE, args: engineCase.programArgs },
        config: { "enginetest:members": { value: memberList }, "enginetest:cluster": { value: "contract" } },
      };
    }

    it("creates everything on the first up, reporting each step once with a running count", async function () {
      const counts: number[] = [];
      const result = await engine.up(stack(members(2)), { onStep: (_s, n) => counts.push(n) });
      assert.equal(result.kind, "up");
      assert.equal(result.succeeded, true);
      assert.equal(result.simulated, engineCase.name === "simulated");
      assert.deepEqual(
        stepsOf(result, "create").filter((n) => n.startsWith("m")),
        memberResources("m0", "m1"),
      );
      assert.equal(result.summary.create, result.steps.length);
      assert.equal(result.summary.same + result.summary.update + result.summary.replace + result.summary.delete, 0);
      assert.deepEqual(
        counts,
        result.steps.map((_, i) => i + 1),
      );
      assert.equal(serverNames(result).length, 2);
    });

    it("changes nothing on a second identical up", async function () {
      const first = await engine.up(stack(members(2)));
      const second = await engine.up(stack(members(2)));
      assert.equal(second.steps.length, first.steps.length);
      assert.ok(
        second.steps.every((s) => s.op === "same"),
        JSON.stringify(second.summary),
      );
      assert.deepEqual(second.outputs, first.outputs);
    });

    it("keeps a bounded update history on its own file backend, without checkpoint backups", async function () {
      if (engineCase.name !== "automation") {
        console.log("      skipped: the simulated engine keeps no Pulumi update history");
        this.skip();
      }
      engine = new AutomationEngine({
        dataDir: dataDir(),
        env: { ...process.env, PULUMI_CONFIG_PASSPHRASE: "contract-tests" },
        logger: silent,
        historyToKeep: 2,
      });
      for (const count of [1, 2, 1]) assert.equal((await engine.up(stack(members(count)))).succeeded, true);
      const history = join(dataDir(), "state", ".pulumi", "history", "nodefleet", "contract");
      const updates = new Set(readdirSync(history).map((name) => /-(\d+)\./.exec(name)?.[1]));
      assert.equal(updates.size, 2, readdirSync(history).join(", "));
      assert.ok(
        readdirSync(history).some((name) => name.endsWith(".checkpoint.json")),
        "each kept update has its state copy",
      );
      const backups = join(dataDir(), "state", ".pulumi", "backups", "nodefleet", "contract");
      assert.deepEqual(existsSync(backups) ? readdirSync(backups) : [], [], "no checkpoint backups are written");
    });

    it("scales up by one member and back down by one, touching only that member", async function () {
      await engine.up(stack(members(2)));
      const up = await engine.up(stack(members(3)));
      assert.deepEqual(stepsOf(up, "create"), memberResources("m2"));
      assert.equal(up.summary.update + up.summary.replace + up.summary.delete, 0);
      assert.equal(serverNames(up).length, 3);

      const down = await engine.up(stack(members(2)));
      assert.deepEqual(stepsOf(down, "delete"), memberResources("m2"));
      assert.equal(down.summary.create + down.summary.update + down.summary.replace, 0);
      assert.equal(serverNames(down).length, 2);
      // Dependents go first: the server before its component.
      const order = down.steps.filter((s) => s.op === "delete").map((s) => s.name);
      assert.ok(order.indexOf("m2-server") < order.indexOf("m2"), order.join(","));
    });

    it("replaces a server when a replace-triggering input (user data) changes", async function () {
      const before = await engine.up(stack(members(2)));
      const after = await engine.up(stack(members(2, { 0: { userData: "#cloud-config\nruncmd: [echo changed]\n" } })));
      const server = after.steps.find((s) => s.name === "m0-server")!;
      assert.equal(server.op, "replace");
      assert.ok(server.replaceKeys?.includes("userData"), JSON.stringify(server));
      assert.equal(after.steps.find((s) => s.name === "m1-server")!.op, "same");
      assert.equal(after.succeeded, true);
      const oldIds = Object.values(before.outputs.servers as Record<string, { id: string }>).map((s) => s.id);
      const newIds = Object.values(after.outputs.servers as Record<string, { id: string }>).map((s) => s.id);
      assert.equal(newIds.filter((id) => !oldIds.includes(id)).length, 1, "exactly one server has a new id");
      if (after.engineSteps) {
        // Create before delete, as the real engine orders a replacement (the simulated engine reports the logical step only).
        const ops = after.engineSteps.filter((s) => s.urn === server.urn).map((s) => s.op);
        assert.deepEqual(ops, ["create-replacement", "replace", "delete-replaced"]);
      } else {
        assert.equal(engineCase.name, "simulated", "the real engine reports its own steps");
      }
    });

    it("updates in place when a non-replacing input (server type) changes", async function () {
      await engine.up(stack(members(1)));
      const after = await engine.up(stack(members(1, { 0: { serverType: "cpx31" } })));
      const server = after.steps.find((s) => s.name === "m0-server")!;
      assert.equal(server.op, "update");
      assert.deepEqual(server.keys, ["serverType"]);
    });

    it("returns the stack outputs after an up", async function () {
      const result = await engine.up(stack(members(2)));
      const outputs = await engine.outputs(stack(members(2)));
      assert.deepEqual(outputs, result.outputs);
      for (const server of Object.values(outputs.servers as Record<string, { id: string; ip: string }>)) {
        assert.match(server.ip, /^(203\.0\.113|198\.51\.100|192\.0\.2)\.\d+$/);
      }
    });

    it("previews steps without applying them", async function () {
      await engine.up(stack(members(1)));
      const preview = await engine.preview(stack(members(2)));
      assert.equal(preview.kind, "preview");
      assert.deepEqual(stepsOf(preview, "create"), memberResources("m1"));
      const again = await engine.preview(stack(members(2)));
      assert.deepEqual(stepsOf(again, "create"), memberResources("m1"), "the preview applied nothing");
      const up = await engine.up(stack(members(2)));
      assert.deepEqual(stepsOf(up, "create"), memberResources("m1"));
    });

    it("cancels a run when its AbortSignal fires, and the next up converges", async function () {
      const controller = new AbortController();
      await assert.rejects(
        engine.up(stack(members(4)), { signal: controller.signal, onStep: (_s, n) => n === 2 && controller.abort() }),
        (error: unknown) => error instanceof RunCancelledError,
      );
      const next = await engine.up(stack(members(4)));
      assert.equal(next.succeeded, true);
      assert.equal(serverNames(next).length, 4);
      const again = await engine.up(stack(members(4)));
      assert.ok(again.steps.every((s) => s.op === "same"));
    });

    it("serialises concurrent runs on one stack", async function () {
      const [first, second, preview] = await Promise.all([
        engine.up(stack(members(2))),
        engine.up(stack(members(3))),
        engine.preview(stack(members(3))),
      ]);
      assert.deepEqual(
        stepsOf(first, "create").filter((n) => n.startsWith("m")),
        memberResources("m0", "m1"),
      );
      // The second run saw the first run's result: only the new member is created.
      assert.deepEqual(stepsOf(second, "create"), memberResources("m2"));
      assert.ok(
        preview.steps.every((s) => s.op === "same"),
        "the preview ran after both ups",
      );
    });

    it("lets one failing member fail without stopping the others", async function () {
      const result = await engine.up(stack(members(3, { 1: { serverType: SOLD_OUT } })));
      assert.equal(result.succeeded, false);
      const failed = result.steps.filter((s) => s.error);
      assert.deepEqual(
        failed.map((s) => s.name),
        ["m1-server"],
      );
      assert.match(failed[0].error!, /resource_unavailable/);
      const created = result.steps.filter((s) => s.op === "create" && !s.error).map((s) => s.name);
      assert.ok(created.includes("m0-server") && created.includes("m2-server"), created.join(","));
      assert.equal(result.summary.create, created.length, "failed steps are not counted as changes");

      const fixed = await engine.up(stack(members(3)));
      assert.equal(fixed.succeeded, true);
      assert.deepEqual(
        fixed.steps.filter((s) => s.op !== "same").map((s) => `${s.op} ${s.name}`),
        ["create m1-server"],
      );
    });

    it("recovers after the pulumi CLI is killed during creates: stale lock and pending creates handled by the next up", async function () {
      if (engineCase.name !== "automation") {
        console.log("      skipped: the simulated engine's crash is the NODEFLEET_SIM_CRASH_AFTER_STEPS test below");
        this.skip();
      }
      const slow = members(4).map((m) => ({ ...m, createDelayMs: 8000 }));
      const backend = join(dataDir(), "state");
      let killed: number[] = [];
      // Kill the CLI once the state records creates in flight (pending operations), as a crash would find it.
      const watcher = setInterval(() => {
        // Servers, not the instant random suffixes: their pending create lasts the create delay.
        const creating = pendingOperations(backend, "nodefleet", "contract").filter(
          (op) => op.type === "creating" && op.resource.urn.endsWith("-server"),
        );
        if (killed.length === 0 && creating.length > 0) {
          // The CLI and its plugins, as the crash of their process group would (plugins left alone would run for good).
          killed = killProcesses(processTrees(pulumiProcessesFor("contract")));
        }
      }, 100);
      try {
        await assert.rejects(engine.up(stack(slow)), (error: unknown) => error instanceof RunFailedError);
      } finally {
        clearInterval(watcher);
      }
      assert.ok(killed.length > 0, "the pulumi CLI was found and killed");
      assert.equal(stackLocks(backend, "nodefleet", "contract").length, 1, "the killed CLI left its lock");
      assert.ok(
        pendingOperations(backend, "nodefleet", "contract").some((op) => op.type === "creating" && op.resource.urn.endsWith("-server")),
        "and pending creates",
      );

      const converged = await engine.up(stack(members(4)));
      assert.equal(converged.succeeded, true, JSON.stringify(converged.steps.filter((s) => s.error)));
      assert.deepEqual(stackLocks(backend, "nodefleet", "contract"), []);
      assert.deepEqual(pendingOperations(backend, "nodefleet", "contract"), []);
      assert.equal(serverNames(converged).length, 4);
      const again = await engine.up(stack(members(4)));
      assert.ok(
        again.steps.every((s) => s.op === "same"),
        JSON.stringify(again.summary),
      );
    });

    it("refreshes: every resource is read back and, with nothing changed outside, stays the same", async function () {
      const created = await engine.up(stack(members(2)));
      const refreshed = await engine.refresh(stack(members(2)));
      assert.equal(refreshed.kind, "refresh");
      assert.equal(refreshed.succeeded, true);
      assert.deepEqual(refreshed.steps.map((s) => `${s.op} ${s.name}`).sort(), created.steps.map((s) => `same ${s.name}`).sort());
    });

    it("abandons a run past its deadline: SIGINT first, then the CLI is killed, and the next up converges", async function () {
      if (engineCase.name !== "automation") {
        console.log("      skipped: the simulated engine has no CLI to stop");
        this.skip();
      }
      const stuck = new AutomationEngine({
        dataDir: dataDir(),
        env: { ...process.env, PULUMI_CONFIG_PASSPHRASE: "contract-tests" },
        logger: silent,
        // Long enough for the CLI to start its plugins on a busy machine (the suites run two at a time).
        runDeadlineMs: 10_000,
        forceStopAfterMs: 1000,
      });
      const started = Date.now();
      const run = stuck.up(stack(members(2).map((m) => ({ ...m, createDelayMs: 40_000 }))));
      // The CLI's own children (its provider plugins) while the run hangs: they must go with it.
      const plugins = await until(
        "the stuck CLI's plugins",
        () => {
          const below = pulumiProcessesFor("contract").flatMap((pid) => descendantProcesses(pid));
          return below.length > 0 ? below : undefined;
        },
        20_000,
        () => "",
        100,
      );
      await assert.rejects(
        run,
        (error: unknown) =>
          error instanceof RunCancelledError && /abandoned after its 10 s deadline/.test(error.message) && /was killed/.test(error.message),
      );
      assert.ok(Date.now() - started < 30_000, "the run did not wait for its 40 s creates");
      await until(
        "the plugins gone with the CLI",
        () => (plugins.every((pid) => !processAlive(pid)) ? true : undefined),
        10_000,
        () => `still running: ${plugins.filter(processAlive).join(", ")}`,
        100,
      );
      const converged = await engine.up(stack(members(2)));
      assert.equal(converged.succeeded, true);
      assert.equal(serverNames(converged).length, 2);
    });

    it("survives a stack metadata sidecar torn by a killed CLI, on a file backend that writes sidecars", async function () {
      if (engineCase.name !== "automation") {
        console.log("      skipped: the simulated engine has no file backend");
        this.skip();
      }
      // An operator's own file:// URL, without nodefleet's metadata=skip: fileblob writes sidecars.
      const backend = join(dataDir(), "operator-backend");
      mkdirSync(backend, { recursive: true });
      const withSidecars = new AutomationEngine({
        dataDir: join(dataDir(), "sidecars"),
        env: { ...process.env, PULUMI_CONFIG_PASSPHRASE: "contract-tests", NODEFLEET_API_STACK_BACKEND_URL: `file://${backend}` },
        logger: silent,
      });
      assert.equal((await withSidecars.up(stack(members(1)))).succeeded, true);
      const sidecar = join(backend, ".pulumi", "stacks", "nodefleet", "contract.json.attrs");
      assert.ok(existsSync(sidecar), "the operator's backend has sidecars");
      // What a SIGKILL between creating the sidecar and writing it leaves.
      writeFileSync(sidecar, "");
      const after = await withSidecars.up(stack(members(2)));
      assert.equal(after.succeeded, true);
      assert.equal(serverNames(after).length, 2);
      // nodefleet's own backend writes none.
      assert.equal((await engine.up(stack(members(1)))).succeeded, true);
      assert.deepEqual(
        readdirSync(join(dataDir(), "state", ".pulumi", "stacks", "nodefleet")).filter((n) => n.endsWith(".attrs")),
        [],
      );
    });

    it("takes over a stack its backend already holds from a new data directory (a service moved with NODEFLEET_API_STACK_BACKEND_URL)", async function () {
      if (engineCase.name !== "automation") {
        console.log("      skipped: the simulated engine keeps its stacks in its data directory");
        this.skip();
      }
      const backend = join(dataDir(), "kept-backend");
      mkdirSync(backend, { recursive: true });
      const env = { ...process.env, PULUMI_CONFIG_PASSPHRASE: "contract-tests", NODEFLEET_API_STACK_BACKEND_URL: fileBackendUrl(backend) };
      // A secret in the state too (as the API stack's user data is): the new home decrypts it.
      const withSecret = (def: StackDefinition): StackDefinition => ({
        ...def,
        config: { ...def.config, "enginetest:token": { value: "kept-secret-value", secret: true } },
      });
      const before = new AutomationEngine({ dataDir: join(dataDir(), "first-home"), env, logger: silent });
      assert.equal((await before.up(withSecret(stack(members(1))))).succeeded, true);
      const moved = new AutomationEngine({ dataDir: join(dataDir(), "second-home"), env, logger: silent });
      const after = await moved.up(withSecret(stack(members(2))));
      assert.equal(after.succeeded, true, JSON.stringify(after.steps.filter((s) => s.error)));
      assert.equal(serverNames(after).length, 2);
      assert.equal(after.outputs.token, "kept-secret-value");
      assert.deepEqual(
        stepsOf(after, "create").filter((n) => n.startsWith("m")),
        memberResources("m1"),
        "only the new member is created",
      );
    });

    it("prepares a stack's workspace ahead of its first run, and only logs when it cannot", async function () {
      if (engineCase.name !== "automation") {
        console.log("      skipped: the simulated engine has no workspace to prepare");
        this.skip();
      }
      const warnings: string[] = [];
      const home = join(dataDir(), "prepared");
      const prepared = new AutomationEngine({
        dataDir: home,
        env: { ...process.env, PULUMI_CONFIG_PASSPHRASE: "contract-tests" },
        logger: { ...silent, warn: (_record, message) => warnings.push(String(message)) },
      });
      await prepared.prepare(stack(members(1)));
      const settings = readFileSync(join(home, "workspaces", "contract", "Pulumi.contract.yaml"), "utf8");
      assert.match(settings, /enginetest:members/, "the stack's settings are written before any run");
      await prepared.prepare({ ...stack(members(1), "elsewhere"), program: { module: join(home, "no-such-program.js"), args: {} } });
      assert.deepEqual(warnings, ["preparing the stack's workspace failed; its first run tries again"]);
      const run = await prepared.up(stack(members(1)));
      assert.equal(run.succeeded, true);
      assert.deepEqual(
        stepsOf(run, "create").filter((n) => n.startsWith("m")),
        memberResources("m0"),
      );
    });

    it("passes secret config to the program without putting it in CLI arguments or the stack files", async function () {
      if (engineCase.name !== "automation") {
        console.log("      skipped: the simulated engine starts no CLI");
        this.skip();
      }
      const secret = "s3cr3t-kubeconfig-value-0123456789";
      const seenArgs: string[] = [];
      const timer = setInterval(() => {
        for (const pid of pulumiProcessesFor("contract")) {
          try {
            seenArgs.push(readFileSync(`/proc/${pid}/cmdline`, "utf8"));
          } catch {
            // exited
          }
        }
      }, 20);
      let result;
      try {
        result = await engine.up({
          ...stack(members(1)),
          config: { ...stack(members(1)).config, "enginetest:token": { value: secret, secret: true } },
        });
      } finally {
        clearInterval(timer);
      }
      assert.equal(result.outputs.token, secret, "the program read the secret");
      assert.ok(seenArgs.length > 0, "the CLI's arguments were sampled");
      assert.ok(!seenArgs.some((a) => a.includes(secret)), "no CLI argument carried the secret");
      const files = (dir: string): string[] =>
        readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? files(join(dir, e.name)) : [join(dir, e.name)]));
      for (const file of files(dataDir())) assert.ok(!readFileSync(file, "utf8").includes(secret), `${file} holds the secret in clear`);

      // An error quoting the secret is redacted before it is kept (run errors reach GET /operations).
      const failing = {
        ...stack(members(1)).config,
        "enginetest:token": { value: secret, secret: true },
        "enginetest:throwWithToken": { value: "true" },
      };
      await assert.rejects(engine.up({ ...stack(members(1)), config: failing }), (error: unknown) => {
        assert.ok(error instanceof RunFailedError);
        assert.ok(!error.message.includes(secret), error.message);
        assert.match(error.message, /cannot parse kubeconfig: \[secret\]/);
        return true;
      });
    });

    it("recovers from a crash mid-run: the next up converges without duplicates", async function () {
      if (!engineCase.canInjectCrash) {
        console.log("      skipped: crash injection (NODEFLEET_SIM_CRASH_AFTER_STEPS) is a simulated-engine knob");
        this.skip();
      }
      const crashing = engineCase.create(dataDir(), { crashAfterSteps: 12 });
      await assert.rejects(
        crashing.up(stack(members(4))),
        (error: unknown) => error instanceof RunFailedError && /mid-run/.test(error.message),
      );
      const cloud = (engine as SimulatedEngine).cloud;
      const partial = cloud.listServers("nodefleet.io/cluster=contract");
      assert.ok(partial.length < 4, `the crash left a partial fleet (${partial.length} servers)`);

      const converged = await engine.up(stack(members(4)));
      assert.equal(converged.succeeded, true);
      assert.ok(converged.summary.same >= 12, "the steps applied before the crash are kept");
      const servers = cloud.listServers("nodefleet.io/cluster=contract");
      assert.equal(servers.length, 4);
      assert.equal(new Set(servers.map((s) => s.labels["nodefleet.io/member"])).size, 4, "no duplicate member");
      assert.equal(new Set(servers.map((s) => s.name)).size, 4, "no duplicate name");
      for (const s of partial)
        assert.ok(
          servers.some((t) => t.id === s.id),
          `server ${s.name} created before the crash was kept`,
        );
    });
  });
}

describe("automation engine: resource operations at once", function () {
  this.timeout(600_000);
  const MEMBERS = 12;

  before(function () {
    skipUnlessAvailable(this, missingTools("pulumi", "pulumi-resource-random"));
  });

  const dataDir = tempDirPerTest("nodefleet-parallel-");

  /** The most stand-in server creates that were running at one moment during one up of MEMBERS members. */
  async function mostAtOnce(parallel: number | undefined): Promise<number> {
    const dir = join(dataDir(), `parallel-${parallel ?? "default"}`);
    mkdirSync(dir, { recursive: true });
    const trace = join(dir, "creates.log");
    const engine = new AutomationEngine({
      dataDir: dir,
      env: { ...process.env, PULUMI_CONFIG_PASSPHRASE: "contract-tests" },
      logger: silent,
      ...(parallel ? { parallel } : {}),
    });
    const memberList = members(MEMBERS).map((m) => ({ ...m, createDelayMs: 3000, createTrace: trace }));
    const result = await engine.up({
      stackName: "parallel",
      program: { module: PROGRAM_MODULE, args: { mode: "local" } },
      config: { "enginetest:members": { value: memberList }, "enginetest:cluster": { value: "parallel" } },
    });
    assert.ok(result.succeeded, JSON.stringify(result.steps.filter((s) => s.error)));
    const events = readFileSync(trace, "utf8")
      .trim()
      .split("\n")
      .map((line) => line.split(" "))
      .map(([event, at]) => ({ at: Number(at), delta: event === "start" ? 1 : -1 }))
      // At one instant an end comes before a start: overlap is counted only where it is real.
      .sort((a, b) => a.at - b.at || a.delta - b.delta);
    assert.equal(events.length, 2 * MEMBERS);
    let running = 0;
    let most = 0;
    for (const e of events) most = Math.max(most, (running += e.delta));
    return most;
  }

  it("runs no more creates at once than its parallel setting (the CLI's own default is at least four)", async function () {
    const most = await mostAtOnce(3);
    assert.ok(most <= 3, `${most} creates ran at once`);
    assert.ok(most >= 2, `the creates ran one by one (${most})`);
  });

  it("by default runs every member's create of a burst at once, more than the CLI's four per core", async function () {
    assert.equal(await mostAtOnce(undefined), MEMBERS);
  });
});

describe("simulated engine with the real fleet program (stacks/Pulumi.example.yaml)", function () {
  const dataDir = tempDirPerTest("nodefleet-contract-fleet-");

  it("applies the example stack, then converges with nothing to do", async function () {
    const engine = new SimulatedEngine({ dataDir: dataDir(), bootDelayMs: 0, env: {}, logger: silent });
    const config = Object.fromEntries(Object.entries(stackFileConfig("example")).map(([key, value]) => [key, { value }]));
    const definition: StackDefinition = { stackName: "example", program: gitStackProgram({ allowMissingKubeconfig: true }), config };
    const first = await engine.up(definition);
    assert.equal(first.succeeded, true, JSON.stringify(first.steps.filter((s) => s.error)));
    const servers = engine.cloud.listServers("nodefleet.io/cluster=example");
    const hcloud = servers.filter((s) => s.provider === "hcloud");
    assert.equal(hcloud.length, 3, "the static hel1-general pool has 3 replicas; the autoscaled pool starts empty");
    assert.ok(
      hcloud.every((s) => /^10\.0\.1\.\d+$/.test(s.privateIpv4 ?? "")),
      "private addresses come from the configured subnet",
    );
    const second = await engine.up(definition);
    assert.deepEqual(
      second.steps.filter((s) => s.op !== "same").map((s) => `${s.op} ${s.name}`),
      [],
    );
  });
});
