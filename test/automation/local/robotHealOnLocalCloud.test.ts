/**
 * Healing of a Robot pool's members by `serve` on the local cloud (issue #38 part 5), with the real
 * engine and the Robot machines: the local stack's Robot pool is installed and joined by `pulumi
 * up`, then `serve --stack local` watches its Nodes. A machine that hangs once (SSH and kubelet
 * silent until its next boot) goes NotReady, gets the software reset (the SSH rung is skipped, see
 * docs/operations.md) and comes back Ready, the Node's remediation condition saying so; a machine
 * that hangs at every boot gets sw, then hw, never power, and is reported permanently failed on
 * its Node, in the log and in the metric. The other member is never reset.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { LocalCloud } from "../../../automation/local/localCloud";
import { LOCAL_ROBOT_POOL, runPulumi } from "../../../automation/local/localStack";
import { REMEDIATION_CONDITION_TYPE } from "../../../automation/heal/remediationCondition";
import { UP, editLocalPools, isReady, poolNodes } from "../../support/localFleet";
import { localStackProject } from "../../support/localStackProject";
import { type ServeProcess, serveOnLocalCloud, stopServe } from "../../support/serveProcess";
import { skipUnlessRobotMachines, startRobotLocalCloud } from "../../support/localRobotMachines";
import { until } from "../../support/until";

/** Each rung waits this long for the Node (the machines reboot in seconds; Kubernetes marks a silent Node NotReady after about 40-50 s). */
const RUNG_WAIT_MS = 60_000;

describe("serve heals a Robot pool's hanging machines on the local cloud (real engine, Robot machines)", function () {
  this.timeout(1_500_000);
  let dir: string;
  let cloud: LocalCloud | undefined;
  let serve: ServeProcess | undefined;
  const warnings: string[] = [];

  const servers = () => cloud!.robot.state.servers().slice(0, 2);
  /** Resets through the API before serve started (the install's own are not the healer's). */
  let installResets = new Map<number, number>();
  const resetsOf = (serverNumber: number) =>
    servers()
      .find((s) => s.serverNumber === serverNumber)!
      .resets.slice(installResets.get(serverNumber) ?? 0)
      .map((r) => r.type);
  const nodeOf = async (suffix: string) => (await poolNodes(cloud!, LOCAL_ROBOT_POOL)).find((n) => n.metadata.name.endsWith(suffix));
  const remediation = async (suffix: string) =>
    ((await nodeOf(suffix))?.status.conditions ?? []).find((c) => c.type === REMEDIATION_CONDITION_TYPE) as unknown as
      { status: string; reason: string } | undefined;
  const waitFor = <T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 600_000) =>
    until(
      what,
      probe,
      timeoutMs,
      () => `serve said:\n${serve?.stderr().slice(-3000)}\nlocal cloud:\n${warnings.slice(-20).join("\n")}`,
      1000,
    );

  before(async function () {
    skipUnlessRobotMachines(this);
    dir = mkdtempSync(join(tmpdir(), "nodefleet-robot-heal-"));
    const project = localStackProject(join(dir, "project"));
    cloud = await startRobotLocalCloud(dir, project, warnings);
    editLocalPools(cloud, (pools) => pools.filter((p) => p.name === LOCAL_ROBOT_POOL));
    await runPulumi(UP, project, cloud.env);
    await waitFor("two Ready Robot Nodes", async () =>
      (await poolNodes(cloud!, LOCAL_ROBOT_POOL)).filter(isReady).length === 2 ? true : undefined,
    );
    installResets = new Map(servers().map((s) => [s.serverNumber, s.resets.length]));
    serve = await serveOnLocalCloud(join(dir, "serve"), cloud.env, project, {
      NODEFLEET_LOG_LEVEL: "info",
      NODEFLEET_HEAL_INTERVAL_MS: "1000",
      NODEFLEET_HEAL_NOT_READY_MS: "1000",
      NODEFLEET_HEAL_RUNG_WAIT_MS: String(RUNG_WAIT_MS),
    });
  });

  after(async function () {
    await stopServe(serve);
    await cloud?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("a machine that hangs once goes NotReady, gets the sw reset and is Ready again, the other member untouched", async function () {
    const [first, second] = servers().map((s) => s.serverNumber) as [number, number];
    await cloud!.robotMachines!.hang(first);
    await waitFor("m1 NotReady", async () => ((await nodeOf("m1")) && !isReady((await nodeOf("m1"))!) ? true : undefined));
    await waitFor("m1 on the ladder, then Ready again", async () => {
      const condition = await remediation("m1");
      const node = await nodeOf("m1");
      return condition?.status === "False" && condition.reason === "Healthy" && node && isReady(node) ? true : undefined;
    });
    assert.deepEqual(resetsOf(first), ["sw"], "one software reset, nothing more");
    assert.deepEqual(resetsOf(second), [], "the other member is never reset");
  });

  it("a machine that never recovers gets sw then hw, never power, and is reported permanently failed", async function () {
    const [first, second] = servers().map((s) => s.serverNumber) as [number, number];
    await cloud!.robotMachines!.breakForGood(second);
    const condition = await waitFor(
      "m2 permanently failed",
      async () => {
        const c = await remediation("m2");
        return c?.reason === "PermanentFailure" ? c : undefined;
      },
      900_000,
    );
    assert.equal(condition.status, "True");
    assert.deepEqual(resetsOf(second), ["sw", "hw"], "sw, then hw; never power");
    assert.deepEqual(resetsOf(first), ["sw"], "the healed member is not touched again");
    assert.match(serve!.stderr(), /permanently failed/);
    const metrics = await (await fetch(`${serve!.baseUrl}/metrics`)).text();
    assert.match(metrics, /nodefleet_remediations_total\{[^}]*action="failed"[^}]*\} 1/);
  });
});
