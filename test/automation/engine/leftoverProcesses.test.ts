/**
 * Plugins left running by a dead pulumi CLI: the owner mark and what is stopped by it (stand-in
 * `sleep` processes: a dead owner's on this data directory, never a live owner's, another
 * directory's or a reused pid), and the real engine stopping the plugins of a CLI SIGKILLed mid-run
 * once that run has ended.
 */
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";
import { AutomationEngine } from "../../../automation/engine/automationEngine";
import { descendantProcesses, processStartTime, pulumiProcessesFor } from "../../../automation/engine/cliProcesses";
import { OWNER_MARK, dataDirKey, leftoversOfEndedEngines, ownerMark, stopProcesses } from "../../../automation/engine/leftoverProcesses";
import type { StackDefinition } from "../../../automation/engine/stackEngine";
import { tempDirPerTest } from "../../support/tempDirPerTest";
import { until } from "../../support/until";
import { missingTools, skipUnlessAvailable } from "../../support/toolchainRequirement";

const PROGRAM_MODULE = join(__dirname, "..", "..", "support", "engineTestProgram.js");

/** A pid no process has (above the kernel's pid_max of 2^22). */
const DEAD_PID = 5_000_000;

describe("leftover pulumi processes", function () {
  const dir = tempDirPerTest("nodefleet-leftovers-");
  const children: ChildProcess[] = [];
  const sleeper = (mark: string): ChildProcess => {
    const child = spawn("sleep", ["600"], { env: { ...process.env, [OWNER_MARK]: mark }, stdio: "ignore" });
    children.push(child);
    return child;
  };
  const running = (child: ChildProcess) => processStartTime(child.pid!) !== undefined;

  afterEach(() => {
    for (const child of children.splice(0)) child.kill("SIGKILL");
  });

  it("stops the marked processes of a dead engine on this data directory, and only those", async function () {
    const key = dataDirKey(dir());
    const ofDeadEngine = sleeper(`${key}:${DEAD_PID}:1`);
    // The owner's pid is alive but started at another time: a reused pid, so the owner is dead.
    const ofReusedPid = sleeper(`${key}:${process.pid}:1`);
    const ofLiveEngine = sleeper(ownerMark(dir()));
    const elsewhere = sleeper(`${"0".repeat(16)}:${DEAD_PID}:1`);
    const unmarked = spawn("sleep", ["600"], { stdio: "ignore" });
    children.push(unmarked);
    await until(
      "the sleepers started",
      async () => (children.every((c) => processStartTime(c.pid!) !== undefined) ? true : undefined),
      10_000,
      () => "",
      20,
    );

    const found = leftoversOfEndedEngines(dir()).map((p) => p.pid);
    assert.deepEqual(found.sort(), [ofDeadEngine.pid!, ofReusedPid.pid!].sort());
    await stopProcesses(leftoversOfEndedEngines(dir()));
    assert.ok(!running(ofDeadEngine) && !running(ofReusedPid), "the dead engine's processes are gone");
    assert.ok(
      running(ofLiveEngine) && running(elsewhere) && running(unmarked),
      "a live engine's, another directory's and unmarked processes run on",
    );
  });

  it("never signals a pid whose start time is not the one it was found with", async function () {
    const key = dataDirKey(dir());
    const child = sleeper(`${key}:${DEAD_PID}:1`);
    await until(
      "the sleeper started",
      async () => (running(child) ? true : undefined),
      10_000,
      () => "",
      20,
    );
    const [found] = leftoversOfEndedEngines(dir());
    assert.equal(found?.pid, child.pid);
    // As if the process had ended and its pid been given to another.
    const signalled = await stopProcesses([{ ...found!, startTime: String(Number(found!.startTime) + 1) }], 200);
    assert.deepEqual(signalled, []);
    assert.ok(running(child));
  });
});

describe("leftover pulumi processes of the real engine", function () {
  this.timeout(300_000);
  const dir = tempDirPerTest("nodefleet-leftovers-engine-");

  before(function () {
    skipUnlessAvailable(this, missingTools("pulumi", "pulumi-resource-random"));
  });

  it("stops the plugins of a CLI SIGKILLed mid-run once the run ends", async function () {
    const engine = new AutomationEngine({
      dataDir: dir(),
      env: { ...process.env, PULUMI_CONFIG_PASSPHRASE: "leftovers" },
      logger: { info() {}, warn() {}, error() {} },
    });
    const def: StackDefinition = {
      stackName: "leftovers",
      program: { module: PROGRAM_MODULE, args: { mode: "local" } },
      config: {
        "enginetest:members": { value: [{ name: "m0", serverType: "cpx21", createDelayMs: 60_000 }] },
        "enginetest:cluster": { value: "leftovers" },
      },
    };
    const run = engine.up(def);
    run.catch(() => undefined);
    // The CLI with its plugins (random, the dynamic-provider host) while the slow create runs.
    const [cli, plugins] = await until(
      "the CLI's plugins",
      async () => {
        const clis = pulumiProcessesFor("leftovers");
        const below = clis.flatMap((pid) => descendantProcesses(pid));
        return clis.length === 1 && below.length >= 2
          ? ([clis[0]!, below.map((pid) => ({ pid, startTime: processStartTime(pid) }))] as const)
          : undefined;
      },
      60_000,
      () => "",
      100,
    );
    // The CLI alone: its plugins run in process groups of their own and outlive it.
    process.kill(cli, "SIGKILL");
    await assert.rejects(run);
    const left = plugins.filter((p) => p.startTime !== undefined && processStartTime(p.pid) === p.startTime);
    assert.deepEqual(left, [], "no plugin of the killed CLI runs once the run has ended");
  });
});
