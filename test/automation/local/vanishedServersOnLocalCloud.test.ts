/**
 * Servers deleted outside Pulumi (in the console, or by an abuse lock) on the local cloud with the
 * real engine. Deleting a server that is already gone fails upstream (not_found; FIDELITY.md,
 * "Server delete and network attachment") and the hcloud double does the same, so the product has
 * to cope: the next `pulumi up --refresh` of the git stack recreates a static member's vanished
 * server, and the scaling API's Karpenter-style conformance drive deletes a claim whose server
 * vanished without a manual refresh: its Delete ends 404 with no server, Node or state entry left.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type LocalCloud, startLocalCloud } from "../../../automation/local/localCloud";
import { runPulumi } from "../../../automation/local/localStack";
import { apiStackCheckpoint } from "../../support/apiStackState";
import { awaitRunning, claimNames, createClaims, deleteUntilGone } from "../../support/karpenterConformance";
import { UP, allPoolServersReady, isReady, poolNodes, poolServers } from "../../support/localFleet";
import { localStackProject } from "../../support/localStackProject";
import { type ServeProcess, serveOnLocalCloud } from "../../support/serveProcess";
import { LOCAL_CLOUD_TOOLS, missingTools, skipUnlessAvailable } from "../../support/toolchainRequirement";
import { until } from "../../support/until";

const STATIC_POOL = "local-general";
const BURST_POOL = "local-burst";
const quiet = { info() {}, warn() {} };

describe("servers deleted outside Pulumi on the local cloud (real engine)", function () {
  this.timeout(900_000);
  let dir: string;
  let project: string;
  let cloud: LocalCloud;

  /** Deletes a server as the console does, straight at the (fake) Hetzner API. */
  const deleteOutOfBand = async (id: number | string) => {
    const response = await fetch(`${cloud.env.HCLOUD_ENDPOINT}/servers/${id}`, {
      method: "DELETE",
      headers: { Authorization: `Bearer ${cloud.env.HCLOUD_TOKEN}` },
    });
    assert.equal(response.status, 200, await response.text());
  };

  before(async function () {
    skipUnlessAvailable(this, missingTools(...LOCAL_CLOUD_TOOLS));
    dir = mkdtempSync(join(tmpdir(), "nodefleet-vanished-"));
    project = localStackProject(join(dir, "project"));
    cloud = await startLocalCloud({ dataDir: join(dir, "data"), hcloudPort: 0, agentIntervalMs: 300, logger: quiet, projectDir: project });
    await runPulumi(UP, project, cloud.env);
  });

  after(async function () {
    await cloud?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("recreates a static member's vanished server on the next `pulumi up --refresh`, and its Node is Ready again", async function () {
    const [victim, ...others] = await allPoolServersReady(cloud, STATIC_POOL);
    await deleteOutOfBand(victim!.id);
    await runPulumi([...UP, "--refresh"], project, cloud.env);
    const servers = await poolServers(cloud, STATIC_POOL);
    assert.deepEqual(servers.map((s) => s.name).sort(), [victim!.name, ...others.map((s) => s.name)].sort(), "the same members");
    const recreated = servers.find((s) => s.name === victim!.name)!;
    assert.notEqual(recreated.id, victim!.id, "a new server under the member's name");
    assert.deepEqual(
      servers.filter((s) => s.name !== victim!.name).map((s) => s.id),
      others.map((s) => s.id),
      "the other members' servers are untouched",
    );
    await allPoolServersReady(cloud, STATIC_POOL);
    await runPulumi(["preview", "--stack", "local", "--non-interactive", "--expect-no-changes"], project, cloud.env);
  });

  describe("the scaling API's conformance drive with a server deleted out of band", function () {
    let serve: ServeProcess;
    const serveDir = () => join(dir, "serve");
    const waitFor = <T>(what: string, probe: () => Promise<T | undefined>) =>
      until(what, probe, 240_000, () => `serve said:\n${serve.stderr().slice(-3000)}`, 1000);

    before(async function () {
      serve = await serveOnLocalCloud(serveDir(), cloud.env, project);
    });

    after(async function () {
      serve?.child.kill("SIGTERM");
      await serve?.exited();
    });

    it("deletes a claim whose server vanished: Delete ends 404, no server, Node or state entry left", async function () {
      const ids = await createClaims(serve.client, claimNames("vanish", 2), { pool: BURST_POOL, instanceType: "cpx21" });
      const running = await awaitRunning(serve.client, ids, waitFor, "nodefleet:///local/");
      await waitFor("a Ready Node per claim", async () => {
        const ready = (await poolNodes(cloud, BURST_POOL)).filter(isReady).map((n) => n.spec.providerID);
        return running.every((n) => ready.includes(n.providerID)) ? true : undefined;
      });
      const lost = running[0]!;
      await deleteOutOfBand(lost.instanceID!);

      await deleteUntilGone(serve.client, ids, waitFor);
      assert.deepEqual(await poolServers(cloud, BURST_POOL), []);
      await waitFor("no Node of the pool", async () => ((await poolNodes(cloud, BURST_POOL)).length === 0 ? true : undefined));
      const state = apiStackCheckpoint(serveDir(), "local");
      for (const id of ids) assert.ok(!state.includes(id), `the API stack's state names ${id} no more`);
      const failed = (await serve.client.operations()).filter((o) => o.result === "failed");
      assert.deepEqual(failed, [], "no run failed on the vanished server");
    });
  });
});
