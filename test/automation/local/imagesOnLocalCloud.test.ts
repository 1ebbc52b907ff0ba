/**
 * Images by name, id and label selector, per architecture, on the local cloud with the real engine
 * (issue #39 part 3): an arm64 (cax11) static pool runs end to end; its `imageSelector` is refused at
 * preview while no x86 snapshot matches for its listed cpx21, then picks the newest arm snapshot
 * (not the newer x86 one) and rolls the pool to it one member at a time, and again for a newer
 * snapshot; an x86-only image id on cax11 is refused at preview; an autoscaled pool mixing
 * cpx21 and cax11 gets each member the image of its architecture through the scaling API, by name
 * and then by `imageSelector` (the newest matching snapshot of each architecture), where a newer
 * x86 snapshot drifts (ImageDrift) the x86 member only.
 */
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runPulumi } from "../../../automation/local/localStack";
import { awaitRunning, deleteUntilGone } from "../../support/karpenterConformance";
import {
  type PoolServer,
  allPoolServersReady,
  driveRollout,
  editLocalPool,
  editLocalPools,
  hcloudGet,
  isReady,
  poolNodes,
  poolServers,
} from "../../support/localFleet";
import { type LocalCloudWithServe, startLocalCloudWithServe, stopLocalCloudWithServe } from "../../support/localCloudWithServe";
import { until } from "../../support/until";
import { LOCAL_CLOUD_TOOLS, missingTools, skipUnlessAvailable } from "../../support/toolchainRequirement";

const POOL = "local-general";
const SELECTOR = "nodefleet.test/image=node";
const PREVIEW = ["preview", "--stack", "local", "--non-interactive"];

/** The image a server of the fake boots: its id, type and architecture. */
async function serverImage(started: LocalCloudWithServe, id: number): Promise<{ id: number; type: string; architecture: string }> {
  return (await hcloudGet(started.cloud, `/servers/${id}`)).server.image;
}

describe("images by label and architecture on the local cloud (real engine)", function () {
  this.timeout(1_200_000);
  let dir: string | undefined;
  let started: LocalCloudWithServe | undefined;

  /** POSTs to the fake Hetzner API; answers its JSON. */
  const hcloudPost = async (path: string, body: unknown): Promise<Record<string, any>> => {
    const { env } = started!.cloud;
    const response = await fetch(`${env.HCLOUD_ENDPOINT}${path}`, {
      method: "POST",
      headers: { Authorization: `Bearer ${env.HCLOUD_TOKEN}`, "Content-Type": "application/json" },
      body: JSON.stringify(body),
    });
    assert.ok(response.ok, `POST ${path}: ${response.status} ${await response.clone().text()}`);
    return (await response.json()) as Record<string, any>;
  };
  /** A snapshot labelled for the selector, of server `id`; once its action is done. */
  const snapshotOf = async (id: number): Promise<number> => {
    const taken = await hcloudPost(`/servers/${id}/actions/create_image`, { type: "snapshot", labels: { "nodefleet.test/image": "node" } });
    await until(
      "the snapshot's action done",
      async () => {
        const action = (await hcloudGet(started!.cloud, `/actions/${taken.action.id}`)).action;
        return action.status === "success" ? true : undefined;
      },
      30_000,
    );
    return Number(taken.image.id);
  };
  const refusedAtPreview = async (pattern: RegExp) => {
    const { cloud, project } = started!;
    const error = await runPulumi(PREVIEW, project, cloud.env).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    assert.ok(error, "the preview is refused");
    assert.match(error.message, pattern);
    const problems = error.message.split("\n").filter((line) => /nodefleet:pools\[/.test(line));
    assert.equal(problems.length, 1, `exactly the one problem: ${problems.join("\n")}`);
  };
  const rollTo = async (image: number) => {
    const { cloud, project } = started!;
    const bootsImage = (s: PoolServer) => (s as PoolServer & { image?: { id: number } }).image?.id === image;
    const observed = await driveRollout({
      cloud,
      project,
      pool: POOL,
      members: 2,
      maxSurge: 1,
      maxUnavailable: 0,
      isNew: bootsImage,
      maxRuns: 8,
    });
    for (const [run, deleted] of observed.deletedByRun.entries())
      assert.ok(deleted.length <= 1, `run ${run + 1} deleted ${deleted.join(", ")}`);
    for (const [run, servers] of observed.serversAfterRun.entries())
      assert.ok(servers.length <= 3, `run ${run + 1}: ${servers.join(", ")}`);
    assert.ok(observed.serversAfterRun.length >= 2, "more than one run: never all members at once");
    return observed;
  };

  before(async function () {
    skipUnlessAvailable(this, missingTools(...LOCAL_CLOUD_TOOLS));
    dir = mkdtempSync(join(tmpdir(), "nodefleet-images-"));
    started = await startLocalCloudWithServe(dir, (cloud) =>
      editLocalPools(cloud, (pools) =>
        pools.map((p) =>
          p.name === POOL
            ? { ...p, replicas: 2, serverTypes: ["cax11", "cpx21"], rollout: { maxSurge: 1, maxUnavailable: 0, drainTimeoutSeconds: 60 } }
            : { ...p, serverTypes: ["cpx21", "cax11"] },
        ),
      ),
    );
  });

  after(async function () {
    await stopLocalCloudWithServe(dir, started);
  });

  it("runs an arm64 (cax11) static pool end to end on the arm image of its name", async () => {
    const servers = await allPoolServersReady(started!.cloud, POOL);
    assert.equal(servers.length, 2);
    for (const s of servers) {
      assert.equal(s.server_type.name, "cax11");
      const image = await serverImage(started!, s.id);
      assert.deepEqual([image.type, image.architecture], ["system", "arm"]);
    }
    assert.equal((await poolNodes(started!.cloud, POOL)).filter(isReady).length, 2);
  });

  let armSnapshot = 0;
  /** The newest snapshots matching SELECTOR per architecture, as the tests below take them. */
  let x86Source = 0;
  let newestX86 = 0;
  let newestArm = 0;
  it("refuses at preview a selector with no image for a listed type's architecture, naming the field and the rule", async () => {
    const [member] = await poolServers(started!.cloud, POOL);
    armSnapshot = await snapshotOf(member!.id);
    editLocalPool(started!.cloud, POOL, (pool) => {
      delete pool.image;
      pool.imageSelector = SELECTOR;
    });
    await refusedAtPreview(
      /nodefleet:pools\[0\]\.imageSelector: no image matches "nodefleet\.test\/image=node" for the x86 architecture \(server type cpx21 is x86/,
    );
  });

  it("picks the newest matching snapshot of the members' architecture and rolls the pool to it one member at a time", async () => {
    // A newer x86 snapshot: what the selector would pick if it ignored the architecture.
    const x86 = await hcloudPost("/servers", { name: "x86-source", server_type: "cpx21", image: "ubuntu-24.04", location: "hel1" });
    await until(
      "the x86 source running",
      async () => ((await hcloudGet(started!.cloud, `/servers/${x86.server.id}`)).server.status === "running" ? true : undefined),
      60_000,
    );
    x86Source = x86.server.id;
    const x86Snapshot = await snapshotOf(x86.server.id);
    newestX86 = x86Snapshot;
    await rollTo(armSnapshot);
    for (const s of await poolServers(started!.cloud, POOL)) {
      const image = await serverImage(started!, s.id);
      assert.deepEqual([image.id, image.type, image.architecture], [armSnapshot, "snapshot", "arm"], `${s.name} boots the arm snapshot`);
    }
    assert.notEqual(x86Snapshot, armSnapshot);
  });

  it("rolls a newer arm snapshot through the pool one member at a time", async () => {
    const [member] = await poolServers(started!.cloud, POOL);
    const newer = await snapshotOf(member!.id);
    newestArm = newer;
    await rollTo(newer);
    assert.equal((await poolNodes(started!.cloud, POOL)).filter(isReady).length, 2);
  });

  it("refuses at preview an x86-only image id for an arm64 type, naming the field and the rule", async () => {
    const x86Image = (await hcloudGet(started!.cloud, "/images?name=ubuntu-24.04&architecture=x86")).images[0].id as number;
    editLocalPool(started!.cloud, POOL, (pool) => {
      delete pool.imageSelector;
      pool.image = String(x86Image);
    });
    await refusedAtPreview(new RegExp(`nodefleet:pools\\[0\\]\\.image: image ${x86Image} is x86 only, but server type cax11 is arm64`));
  });

  it("gives each member of an autoscaled pool mixing cpx21 and cax11 the image of its architecture", async () => {
    const { serve, cloud } = started!;
    const waitFor = <T>(what: string, probe: () => Promise<T | undefined>) =>
      until(what, probe, 600_000, () => `serve said:\n${serve.stderr().slice(-3000)}`, 1000);
    const x86 = await serve.client.createNode({ uniqueID: "mixed-x86", pool: "local-burst", instanceType: "cpx21" });
    const arm = await serve.client.createNode({ uniqueID: "mixed-arm", pool: "local-burst", instanceType: "cax11" });
    const ids = [x86.node.nodeID, arm.node.nodeID];
    await awaitRunning(serve.client, ids, waitFor, "nodefleet:///local/");
    const servers = (await hcloudGet(cloud, "/servers?label_selector=nodefleet.io/pool=local-burst")).servers as Array<Record<string, any>>;
    assert.deepEqual(servers.map((s) => [s.server_type.name, s.image.name, s.image.architecture]).sort(), [
      ["cax11", "ubuntu-24.04", "arm"],
      ["cpx21", "ubuntu-24.04", "x86"],
    ]);
    await waitFor("both Nodes Ready", async () =>
      (await poolNodes(cloud, "local-burst")).filter(isReady).length === 2 ? true : undefined,
    );
    await deleteUntilGone(serve.client, ids, waitFor);
  });

  it("boots an autoscaled pool's cpx21 and cax11 members on the newest matching snapshot of each architecture, and drifts the x86 one for a newer x86 snapshot", async () => {
    const { serve, cloud } = started!;
    const waitFor = <T>(what: string, probe: () => Promise<T | undefined>) =>
      until(what, probe, 600_000, () => `serve said:\n${serve.stderr().slice(-3000)}`, 1000);
    // serve re-reads the stack file: the pool now boots snapshots by label (x86 and arm ones match).
    editLocalPool(cloud, "local-burst", (pool) => {
      delete pool.image;
      pool.imageSelector = SELECTOR;
    });
    const x86 = await serve.client.createNode({ uniqueID: "selector-x86", pool: "local-burst", instanceType: "cpx21" });
    const arm = await serve.client.createNode({ uniqueID: "selector-arm", pool: "local-burst", instanceType: "cax11" });
    assert.deepEqual([x86.node.imageID, arm.node.imageID], [String(newestX86), String(newestArm)]);
    const ids = [x86.node.nodeID, arm.node.nodeID];
    await awaitRunning(serve.client, ids, waitFor, "nodefleet:///local/");
    const bootedImages = async () =>
      new Map(
        ((await hcloudGet(cloud, "/servers?label_selector=nodefleet.io/pool=local-burst")).servers as Array<Record<string, any>>).map(
          (s) => [s.labels["nodefleet.io/node"] as string, [s.server_type.name, s.image.id, s.image.type, s.image.architecture]],
        ),
      );
    const booted = await bootedImages();
    assert.deepEqual(booted.get(x86.node.nodeID), ["cpx21", newestX86, "snapshot", "x86"]);
    assert.deepEqual(booted.get(arm.node.nodeID), ["cax11", newestArm, "snapshot", "arm"]);
    await waitFor("both Nodes Ready", async () =>
      (await poolNodes(cloud, "local-burst")).filter(isReady).length === 2 ? true : undefined,
    );
    for (const id of ids) assert.equal((await serve.client.getNode(id)).drifted, false, `${id} is current`);

    // A newer x86 snapshot: the next x86 admission resolves it, and the x86 member (only) drifts.
    const newerX86 = await snapshotOf(x86Source);
    const next = await serve.client.createNode({ uniqueID: "selector-x86-next", pool: "local-burst", instanceType: "cpx21" });
    assert.equal(next.node.imageID, String(newerX86));
    await waitFor("the next x86 member RUNNING", async () =>
      (await serve.client.getNode(next.node.nodeID)).status === "RUNNING" ? true : undefined,
    );
    assert.deepEqual((await bootedImages()).get(next.node.nodeID), ["cpx21", newerX86, "snapshot", "x86"]);
    const drifted = await serve.client.getNode(x86.node.nodeID);
    assert.deepEqual([drifted.drifted, drifted.driftReason], [true, "ImageDrift"]);
    assert.match(drifted.driftDetails ?? "", new RegExp(`image: ${newestX86} -> ${newerX86}`));
    const listed = new Map((await serve.client.listNodes("local-burst")).map((n) => [n.nodeID, n.drifted]));
    assert.deepEqual(
      [listed.get(x86.node.nodeID), listed.get(arm.node.nodeID), listed.get(next.node.nodeID)],
      [true, false, false],
      "only the x86 member admitted before the newer x86 snapshot drifts",
    );
    await deleteUntilGone(serve.client, [...ids, next.node.nodeID], waitFor);
  });
});
