/**
 * An upgrade from the release before nodefleet's own provider plugin, on the local cloud with the real
 * engine: that release (its source from git history, compiled here) serves three autoscaled nodes,
 * then this one takes over its data directory. Its first run (a fourth node, so the preview guard
 * previews every member) replaces and deletes nothing: the three servers keep their ids, their
 * Nodes stay, their dynamic drains, Node removals and token components stay in the state; the new
 * member gets the plugin's resources. Removing an old member still drains and deletes its Node
 * through its own dynamic resources.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type LocalCloud, startLocalCloud } from "../../../automation/local/localCloud";
import { runPulumi } from "../../../automation/local/localStack";
import { apiStackCheckpoint } from "../../support/apiStackState";
import { NodefleetApiError } from "../../../automation/client/nodefleetClient";
import { awaitRunning, claimNames, createClaims } from "../../support/karpenterConformance";
import { UP, editLocalPools, isReady, poolNodes, poolServers } from "../../support/localFleet";
import { localStackProject } from "../../support/localStackProject";
import { type ServeProcess, serveOnLocalCloud, stopServe } from "../../support/serveProcess";
import { BEFORE_PROVIDER_PLUGIN, buildRelease } from "../../../bench/previousRelease";
import { LOCAL_CLOUD_TOOLS, missingTools, skipUnlessAvailable } from "../../support/toolchainRequirement";
import { until } from "../../support/until";

const POOL = "local-burst";
const quiet = { info() {}, warn() {} };

describe("upgrading a scaling API stack made before nodefleet's provider plugin (real engine, local cloud)", function () {
  this.timeout(1_200_000);
  let dir: string;
  let project: string;
  let cloud: LocalCloud;
  let serve: ServeProcess | undefined;
  let oldIds: string[] = [];
  let oldServers = new Map<string, number>();

  const waitFor = <T>(what: string, probe: () => Promise<T | undefined>) =>
    until(what, probe, 600_000, () => `serve said:\n${serve?.stderr().slice(-3000)}`, 1000);
  const stop = () => stopServe(serve);

  before(async function () {
    skipUnlessAvailable(this, missingTools(...LOCAL_CLOUD_TOOLS));
    dir = mkdtempSync(join(tmpdir(), "nodefleet-upgrade-"));
    const previousBin = buildRelease(BEFORE_PROVIDER_PLUGIN, join(dir, "previous"));
    project = localStackProject(join(dir, "project"));
    cloud = await startLocalCloud({ dataDir: join(dir, "data"), hcloudPort: 0, agentIntervalMs: 1000, logger: quiet, projectDir: project });
    editLocalPools(cloud, (pools) => pools.filter((p) => p.name === POOL));
    await runPulumi(UP, project, cloud.env);
    serve = await serveOnLocalCloud(join(dir, "serve"), cloud.env, project, {}, previousBin);
    oldIds = await createClaims(serve.client, claimNames("before", 3), { pool: POOL, instanceType: "cpx31" });
    await awaitRunning(serve.client, oldIds, waitFor, "nodefleet:///local/");
    await waitFor("the three Nodes Ready", async () => ((await poolNodes(cloud, POOL)).filter(isReady).length === 3 ? true : undefined));
    oldServers = new Map((await poolServers(cloud, POOL)).map((s) => [s.name, s.id]));
    await stop();
  });

  after(async function () {
    await stop();
    await cloud?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("made the old members with dynamic resources", function () {
    const state = apiStackCheckpoint(join(dir, "serve"), "local");
    assert.match(state, /pulumi-nodejs:dynamic\/nodefleet:KubernetesNodeDrain/);
    assert.doesNotMatch(state, /nodefleet:kubernetes:NodeDrain/);
    assert.equal(oldServers.size, 3);
  });

  it("adds a member after the upgrade, replacing and deleting nothing, the guard's preview passing", async function () {
    const upgradedAt = new Date().toISOString();
    serve = await serveOnLocalCloud(join(dir, "serve"), cloud.env, project);
    const [newId] = await createClaims(serve.client, claimNames("after", 1), { pool: POOL, instanceType: "cpx31" });
    await awaitRunning(serve.client, [...oldIds, newId!], waitFor, "nodefleet:///local/");
    const servers = new Map((await poolServers(cloud, POOL)).map((s) => [s.name, s.id]));
    for (const [name, id] of oldServers) assert.equal(servers.get(name), id, `${name} kept its server`);
    assert.equal(servers.size, 4);
    const nodes = await waitFor("four Ready Nodes", async () => {
      const ready = (await poolNodes(cloud, POOL)).filter(isReady);
      return ready.length === 4 ? ready : undefined;
    });
    for (const name of oldServers.keys())
      assert.ok(
        nodes.some((n) => n.metadata.name === name),
        `${name}'s Node is still there`,
      );
    const operations = (await serve.client.operations()).filter((o) => o.startedAt >= upgradedAt);
    assert.ok(
      operations.some((o) => o.kind === "preview"),
      "the guard previewed the first run of the new program",
    );
    assert.ok(operations.some((o) => o.kind === "up"));
    assert.deepEqual(
      operations
        .filter((o) => o.result !== "succeeded" || o.summary?.replace !== 0 || o.summary?.delete !== 0)
        .map((o) => `${o.kind} ${o.result} ${JSON.stringify(o.summary)}: ${o.error ?? ""}`),
      [],
      "every run after the upgrade succeeded, replacing and deleting nothing",
    );
    const state = apiStackCheckpoint(join(dir, "serve"), "local");
    const resources = (JSON.parse(state) as { checkpoint: { latest: { resources: Array<{ urn: string }> } } }).checkpoint.latest.resources;
    // The URN's type part ends with the type token (after a dynamic resource's `pulumi-nodejs:dynamic/` prefix).
    const drains = (type: string) => resources.filter((r) => (r.urn.split("::")[2] ?? "").split("$").pop()!.endsWith(type)).length;
    assert.equal(drains("dynamic/nodefleet:KubernetesNodeDrain"), 3, "the old members keep their dynamic drains");
    assert.equal(drains("nodefleet:kubernetes:NodeDrain"), 1, "the new member has the plugin's");
  });

  it("drains and deletes an old member's Node through its own dynamic resources", async function () {
    const [first] = oldIds;
    const view = await serve!.client.getNode(first!);
    await waitFor(`${first} answered 404 to its Delete`, async () => {
      try {
        await serve!.client.deleteNode(first!);
        return undefined;
      } catch (error) {
        return error instanceof NodefleetApiError && error.status === 404 ? true : undefined;
      }
    });
    await waitFor("its Node gone", async () =>
      (await poolNodes(cloud, POOL)).some((n) => n.spec.providerID === view.providerID) ? undefined : true,
    );
    assert.equal((await poolServers(cloud, POOL)).length, 3);
  });
});
