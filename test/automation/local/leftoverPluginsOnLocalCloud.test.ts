/**
 * `nodefleet serve --engine automation` on the local cloud, SIGKILLed with its pulumi CLI (the
 * process group they share) while a run creates a server: the CLI's plugins, in process groups of
 * their own, outlive them. The restarted service stops them before it listens, and the claim then
 * converges to one server. The processes are the first instance's, recorded by pid and start time
 * from its process tree before the kill, so other tests' pulumi processes on the machine do not count.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { descendantProcesses, processGroup, processStartTime } from "../../../automation/engine/cliProcesses";
import { type LocalCloud, startLocalCloud } from "../../../automation/local/localCloud";
import { runPulumi } from "../../../automation/local/localStack";
import { UP, editLocalPools, poolServers } from "../../support/localFleet";
import { localStackProject } from "../../support/localStackProject";
import { type ServeProcess, serveOnLocalCloud, stopServe } from "../../support/serveProcess";
import { LOCAL_CLOUD_TOOLS, missingTools, skipUnlessAvailable } from "../../support/toolchainRequirement";
import { until } from "../../support/until";

const POOL = "local-burst";
const quiet = { info() {}, warn() {} };

interface Recorded {
  readonly pid: number;
  readonly startTime: string;
  readonly command: string;
}

function commandName(pid: number): string {
  try {
    return basename(readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0")[0] ?? "");
  } catch {
    return "";
  }
}

const stillRunning = (recorded: readonly Recorded[]) => recorded.filter((p) => processStartTime(p.pid) === p.startTime);

describe("plugins a SIGKILLed service left running, on the local cloud", function () {
  this.timeout(900_000);
  let dir: string;
  let project: string;
  let cloud: LocalCloud;
  let serve: ServeProcess | undefined;

  const start = async () => (serve = await serveOnLocalCloud(join(dir, "serve"), cloud.env, project));

  before(async function () {
    skipUnlessAvailable(this, missingTools(...LOCAL_CLOUD_TOOLS));
    dir = mkdtempSync(join(tmpdir(), "nodefleet-leftover-plugins-"));
    project = localStackProject(join(dir, "project"));
    // Servers take 20 s to boot: the run's create, and its CLI with the plugins, are live for that long.
    cloud = await startLocalCloud({
      dataDir: join(dir, "data"),
      hcloudPort: 0,
      agentIntervalMs: 1000,
      logger: quiet,
      projectDir: project,
      env: { ...process.env, NODEFLEET_SIM_BOOT_DELAY_MS: "20000" },
    });
    editLocalPools(cloud, (pools) => pools.filter((p) => p.name === POOL));
    await runPulumi(UP, project, cloud.env);
    await start();
  });

  after(async function () {
    await stopServe(serve);
    await cloud?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("stops them when it starts again, and the interrupted create converges", async function () {
    const first = serve!;
    const { node: claim } = await first.client.createNode({ uniqueID: "leftover-1", pool: POOL, instanceType: "cpx31" });
    // The run is creating the server: its CLI and the hcloud plugin are below the service.
    const recorded = await until(
      "the run's pulumi CLI and hcloud plugin",
      async () => {
        const below = descendantProcesses(first.child.pid!).map((pid) => ({
          pid,
          startTime: processStartTime(pid) ?? "",
          command: commandName(pid),
        }));
        const creating = (await poolServers(cloud, POOL)).length > 0;
        return creating && below.some((p) => p.command === "pulumi-resource-hcloud") ? below.filter((p) => p.startTime !== "") : undefined;
      },
      300_000,
      () => first.stderr().slice(-3000),
      200,
    );
    // SIGKILL of the service's process group: the service and its CLI; the plugins run in groups of their own.
    const group = processGroup(first.child.pid!);
    for (const p of [{ pid: first.child.pid! }, ...recorded.filter((r) => processGroup(r.pid) === group)]) process.kill(p.pid, "SIGKILL");
    await first.exited();
    const plugins = recorded.filter((p) => p.command.startsWith("pulumi-resource-"));
    assert.ok(stillRunning(plugins).length > 0, `the kill left plugins running: ${JSON.stringify(recorded)}`);

    const second = await start();
    assert.deepEqual(stillRunning(recorded), [], "no process of the first instance runs once the second listens");
    assert.match(second.stderr(), /leftover_processes/, "the start says what it stopped");

    const node = await until(
      "the claim RUNNING",
      async () => {
        const view = await second.client.getNode(claim.nodeID);
        return view.status === "RUNNING" ? view : undefined;
      },
      600_000,
      () => second.stderr().slice(-3000),
      1000,
    );
    assert.equal(
      (await poolServers(cloud, POOL)).filter((s) => s.labels["nodefleet.io/node"] === node.nodeID).length,
      1,
      "one server for the claim",
    );
  });
});
