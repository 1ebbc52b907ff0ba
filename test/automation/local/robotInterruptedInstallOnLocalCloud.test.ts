/**
 * Issue 38 part 4, "crash safety", on the real engine: `pulumi up --stack local` is SIGKILLed (the
 * CLI alone; its plugins go on, as after a `kill -9` of the user's pulumi) while the Robot pool's
 * two servers are (1) being installed by installimage in the rescue (install knob 20 s), (2) being
 * booted into the rescue. The killed run's plugins finish what they were doing: the install and its
 * reboot into the installed system, or the boot into rescue. `nodefleet recover --stack local`
 * removes the lock and clears the pending creates; the next `pulumi up` finds each box where the
 * killed run left it: an installed system answering with the host key nodefleet generated for it
 * (pinned, never learnt from the box; robot/pregeneratedHostKey.ts) is not installed again, a rescue
 * running with the pool's keys is adopted without another reset. Each server: installed once (one
 * boot of a freshly installed system), joined once (one `k0s install`), its Node Ready, its boots
 * the one into rescue and the one into the installed system only.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type PendingOperation, fileBackendDir, pendingOperations, stackLocks } from "../../../automation/engine/fileBackendState";
import { type LocalCloud, startLocalCloud } from "../../../automation/local/localCloud";
import { LOCAL_ROBOT_POOL, runPulumi } from "../../../automation/local/localStack";
import { localStackProject } from "../../support/localStackProject";
import { UP, isReady, poolNodes } from "../../support/localFleet";
import { KillableUp } from "../../support/killableUp";
import { runNodefleet } from "../../support/nodefleetCli";
import { skipUnlessRobotMachines } from "../../support/localRobotMachines";
import { processesMentioning } from "../../support/processesMentioning";
import { until } from "../../support/until";

const quiet = { info() {}, warn() {} };
const INSTALL_MS = 20_000;
const RESCUE = "nodefleet:hrobot:RobotRescue";
const COMMAND = "command:remote:Command";
/** Pending creates a kill must not meet: recovery clears them and the next up meets what they made (networks_overlap). */
const NOT_TO_MEET = ["hcloud:index/network:Network", "hcloud:index/networkSubnet:NetworkSubnet"];

type Json = Record<string, any>;

/** One kill: when to kill, and which pending creates it must leave. */
interface KillWindow {
  /** The words of the test's title. */
  readonly during: string;
  /** The pending creates the kill must leave, by type and name suffix, one per server: both there (the network made) is the window. */
  readonly pending: { readonly type: string; readonly suffix: string };
}

function killedUpIsRecovered(window: KillWindow): void {
  describe(`a Robot pool's pulumi up SIGKILLed during ${window.during}, recovered (real engine, Robot machines)`, function () {
    this.timeout(900_000);
    let dir: string;
    let project: string;
    let cloud: LocalCloud;
    /** The user's `pulumi up` the test kills. */
    let up: KillableUp | undefined;

    const servers = () => cloud.robot.state.servers().slice(0, 2);
    const machine = (serverNumber: number) => cloud.robotMachines!.machine(serverNumber);

    before(async function () {
      skipUnlessRobotMachines(this);
      dir = mkdtempSync(join(tmpdir(), "nodefleet-robot-kill-"));
      project = localStackProject(join(dir, "project"));
      cloud = await startLocalCloud({
        dataDir: join(dir, "data"),
        hcloudPort: 0,
        agentIntervalMs: 300,
        logger: quiet,
        projectDir: project,
        robotMachines: true,
        env: { ...process.env, NODEFLEET_SIM_ROBOT_INSTALL_MS: String(INSTALL_MS) },
      });
    });

    after(async function () {
      up?.stop();
      await cloud?.stop();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    it("the next pulumi up after `nodefleet recover` installs each server once and joins it once, with no extra reset", async function () {
      const started = Date.now();
      const seconds = () => ((Date.now() - started) / 1000).toFixed(1);
      const run = KillableUp.start(project, cloud.env);
      up = run;
      const backendDir = fileBackendDir(cloud.env.PULUMI_BACKEND_URL!)!;

      const ours = (op: PendingOperation) =>
        op.type === "creating" && op.resource.type === window.pending.type && op.resource.urn.endsWith(window.pending.suffix);
      // Killed while these creates run, the network and its subnet made: a pending subnet create is
      // cleared by recovery and made again, which a kill during a real install never meets.
      const inWindow = () => {
        try {
          const pending = pendingOperations(backendDir, "nodefleet", "local");
          return pending.filter(ours).length === 2 && !pending.some((op) => NOT_TO_MEET.includes(op.resource.type));
        } catch {
          return false; // the CLI is writing the checkpoint
        }
      };
      await until(
        "both Robot servers in the window",
        async () => inWindow() || undefined,
        300_000,
        () => run.output.slice(-3000),
        100,
      );
      const killedAt = seconds();
      await run.kill();

      const pending = pendingOperations(backendDir, "nodefleet", "local");
      assert.equal(
        pending.filter(ours).length,
        2,
        `the kill left both ${window.pending.suffix} creates pending: ${pending.map((op) => op.resource.urn).join(", ")}`,
      );
      assert.equal(stackLocks(backendDir, "nodefleet", "local").length, 1, "the killed CLI's lock is left");

      // What the killed run was doing settles. The rescue boot, nodefleet's plugin's, goes on after
      // the CLI is gone: both boxes end in the rescue. The install, an SSH session of the command
      // plugin's, ends with the CLI's connection to that plugin: installimage stops where it was
      // and the box stays in the rescue, installed by no one yet (or, had it finished, in the
      // installed system). Either way nothing of the install goes on.
      const settled =
        window.pending.type === RESCUE
          ? () => servers().every((s) => machine(s.serverNumber).system === "rescue")
          : () =>
              processesMentioning("installimageStandIn.js").length === 0 &&
              servers().every((s) => ["rescue", "installed"].includes(machine(s.serverNumber).system));
      const killed = Date.now();
      await until(
        "both machines settled after the kill",
        async () => (Date.now() - killed > 5_000 && settled()) || undefined,
        180_000,
        () =>
          servers()
            .map((s) => `${s.serverNumber}: ${machine(s.serverNumber).system}`)
            .join(", "),
      );
      const settledAt = seconds();

      const recovered = await runNodefleet(["recover", "--stack", "local", "--data-dir", join(dir, "recover"), "--json"], cloud.env, {
        cwd: project,
        timeoutMs: 300_000,
      });
      assert.equal(recovered.code, 0, recovered.stderr.slice(-3000));
      const report = JSON.parse(recovered.stdout) as { removedStaleLocks: number; actions: Json[] };
      assert.ok(report.removedStaleLocks >= 1, "the killed CLI's lock is removed");
      run.stopLeftovers();

      await runPulumi(UP, project, cloud.env).catch((error: Error) => {
        throw new Error(`${error.message}\nrecover said: ${recovered.stdout}`);
      });
      const upAt = seconds();
      const nodes = await until(
        `2 Ready ${LOCAL_ROBOT_POOL} Nodes`,
        async () => {
          const ready = (await poolNodes(cloud, LOCAL_ROBOT_POOL)).filter(isReady);
          return ready.length === 2 ? ready : undefined;
        },
        120_000,
      );
      for (const server of servers()) {
        const box = machine(server.serverNumber);
        assert.equal(box.system, "installed");
        assert.equal(box.installs, 1, `server ${server.serverNumber} installed once`);
        // The ssh reboot into rescue, the install's reboot into the installed system: no second reset.
        assert.deepEqual(
          server.boots.map((b) => `${b.cause}:${b.into}`),
          ["reboot:rescue", "reboot:installed"],
          `server ${server.serverNumber}`,
        );
        assert.deepEqual(
          server.resets.map((r) => r.type),
          [],
          `server ${server.serverNumber}: no Robot reset`,
        );
        assert.equal(server.rescue, null, "no rescue activation left pending");
        const records = box.current!.records().map((r) => `${r.tool} ${r.verb}`);
        assert.equal(records.filter((r) => r === "k0s install").length, 1, `joined once: ${records.join("; ")}`);
        assert.ok(
          nodes.some((n) => n.metadata.name === box.current!.name),
          `a Ready Node for server ${server.serverNumber}`,
        );
      }
      process.stdout.write(
        `      (killed after ${killedAt} s; plugins done after ${settledAt} s; recovered and up done after ${upAt} s; install knob ${INSTALL_MS / 1000} s)\n`,
      );
    });
  });
}

killedUpIsRecovered({
  during: "the install (installimage running in the rescue)",
  pending: { type: COMMAND, suffix: "-install" },
});

killedUpIsRecovered({ during: "the boot into rescue (activated, rebooting)", pending: { type: RESCUE, suffix: "-rescue" } });
