/**
 * An upgrade of the git stack with both bare-metal pools, on the local cloud with the real engine
 * (issue #35 part 2 for bare metal): the release that first ran them (`ELASTIC_METAL_POOL_RELEASE`,
 * compiled from git history) brings up the local stack (Hetzner Cloud, Elastic Metal and Robot
 * pools, all Ready); then this checkout's program takes over the same stack. Its preview replaces
 * and deletes nothing, and its `pulumi up` keeps every server (the same Elastic Metal ids, no
 * Robot reset or boot) and every Node (the same uids), all Ready: whatever this release adds to a
 * member is a create beside what the member was made with.
 */
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { LocalCloud } from "../../../automation/local/localCloud";
import { LOCAL_ELASTIC_METAL_POOL, LOCAL_ROBOT_POOL, runPulumi } from "../../../automation/local/localStack";
import { ELASTIC_METAL_POOL_RELEASE, buildRelease } from "../../../bench/previousRelease";
import { UP, isReady, poolNodes } from "../../support/localFleet";
import { localStackProject } from "../../support/localStackProject";
import { skipUnlessRobotMachines, startRobotLocalCloud, stopLocalCloudLeavingNoMachine } from "../../support/localRobotMachines";

const POOLS = ["local-general", LOCAL_ELASTIC_METAL_POOL, LOCAL_ROBOT_POOL] as const;

type Json = Record<string, any>;

describe("upgrading a git stack with Elastic Metal and Robot pools from the release that first ran them (real engine)", function () {
  this.timeout(1_800_000);
  let dir: string;
  let project: string;
  let cloud: LocalCloud | undefined;
  const warnings: string[] = [];
  let previous: { nodes: Map<string, string>; metal: string[]; robot: Array<{ boots: number; resets: number }> };

  const nodeUids = async () => {
    const entries: Array<[string, string]> = [];
    for (const pool of POOLS)
      for (const node of (await poolNodes(cloud!, pool)).filter(isReady))
        entries.push([node.metadata.name, (node.metadata as unknown as { uid: string }).uid]);
    return new Map(entries);
  };
  const metalServerIds = async () => {
    const response = await fetch(`${cloud!.env.SCW_API_URL}/baremetal/v1/zones/fr-par-2/servers?per_page=50`, {
      headers: { "X-Auth-Token": cloud!.env.SCW_SECRET_KEY! },
    });
    return ((await response.json()) as { servers: Json[] }).servers.map((s) => String(s.id)).sort();
  };
  const robotCycles = () =>
    cloud!.robot.state
      .servers()
      .slice(0, 2)
      .map((s) => ({ boots: s.boots.length, resets: s.resets.length }));

  before(async function () {
    skipUnlessRobotMachines(this, "pulumi-resource-scaleway", "pulumi-resource-command");
    dir = mkdtempSync(join(tmpdir(), "nodefleet-bare-metal-upgrade-"));
    buildRelease(ELASTIC_METAL_POOL_RELEASE, join(dir, "previous"));
    // The previous release's program and plugin first; the same project (and stack) moves to this one below.
    project = localStackProject(join(dir, "project"), join(dir, "previous"));
    cloud = await startRobotLocalCloud(dir, project, warnings, { elasticMetalPool: true, machineBlock: 7 });
    await runPulumi(UP, project, cloud.env).catch((error: Error) => {
      throw new Error(`the previous release's pulumi up: ${error.message}\nlocal cloud warnings:\n${warnings.join("\n")}`);
    });
    const nodes = await nodeUids();
    assert.equal(nodes.size, 7, `3 + 2 + 2 Ready Nodes under the previous release: ${[...nodes.keys()].join(", ")}`);
    previous = { nodes, metal: await metalServerIds(), robot: robotCycles() };
    localStackProject(project);
  });

  after(async function () {
    await stopLocalCloudLeavingNoMachine(cloud, dir);
  });

  it("previews the upgrade without replacing or deleting anything", async function () {
    const out = await runPulumi(["preview", "--stack", "local", "--diff", "--non-interactive"], project, cloud!.env);
    // The summary counts each kind of step: none may take a running member's resource away.
    const summary = out.slice(out.lastIndexOf("Resources:"));
    assert.match(summary, /unchanged/, out.slice(-3000));
    assert.doesNotMatch(summary, /to replace|to delete|to discard/, summary);
    process.stdout.write(
      `      (the upgrade's preview: ${summary
        .split("\n")
        .slice(1, 4)
        .map((l) => l.trim())
        .filter(Boolean)
        .join("; ")})\n`,
    );
  });

  it("keeps every server and Node through the upgrade's pulumi up, all Ready", async function () {
    await runPulumi([...UP, "--suppress-outputs"], project, cloud!.env);
    assert.deepEqual(await metalServerIds(), previous.metal, "the same Elastic Metal servers, none ordered or deleted");
    assert.deepEqual(robotCycles(), previous.robot, "no Robot server reset or rebooted");
    const after = await nodeUids();
    assert.deepEqual([...after.entries()].sort(), [...previous.nodes.entries()].sort(), "the same Nodes (same uids), all Ready");
    const out = await runPulumi(["preview", "--stack", "local", "--diff", "--non-interactive", "--expect-no-changes"], project, cloud!.env);
    assert.doesNotMatch(out, /error:/);
  });
});
