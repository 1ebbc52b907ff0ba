/**
 * The preview guard only when needed, with the real engine (`nodefleet serve --engine automation`
 * on the local cloud): runs that only add members or remove terminating ones go straight to the up
 * (no `preview` operation), a delete among them still refreshes what it deletes (its server was
 * deleted out of band first), and a state edited outside the service (the checkpoint changed so
 * that the up would replace a live member's server) brings the guard back, which refuses the run;
 * with the state restored to what the service left, the next run passes unguarded again.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, readdirSync, renameSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { LocalCloud } from "../../../automation/local/localCloud";
import { editLocalPools, poolServers } from "../../support/localFleet";
import type { ServeProcess } from "../../support/serveProcess";
import { LOCAL_CLOUD_TOOLS, missingTools, skipUnlessAvailable } from "../../support/toolchainRequirement";
import { until } from "../../support/until";
import { type LocalCloudWithServe, startLocalCloudWithServe, stopLocalCloudWithServe } from "../../support/localCloudWithServe";

const POOL = "local-burst";

interface CheckpointResource {
  urn: string;
  type: string;
  id?: string;
  inputs?: Record<string, unknown>;
  outputs?: Record<string, unknown>;
}

describe("the preview guard only when needed, on the automation engine against the local cloud", function () {
  this.timeout(900_000);
  let dir: string;
  let cloud: LocalCloud;
  let serve: ServeProcess;
  let started: LocalCloudWithServe | undefined;

  const waitFor = <T>(what: string, probe: () => Promise<T | undefined>) =>
    until(what, probe, 300_000, () => `serve said:\n${serve?.stderr().slice(-3000)}`, 500);
  const kinds = async () => (await serve.client.operations()).map((o) => o.kind).reverse();
  const running = async (uniqueID: string) => {
    const { node } = await serve.client.createNode({ uniqueID, pool: POOL });
    return waitFor(`${uniqueID} RUNNING`, async () => {
      const current = await serve.client.getNode(node.nodeID);
      return current.status === "RUNNING" ? current : undefined;
    });
  };
  const checkpointFile = () => {
    const stacks = join(dir, "serve", "state", ".pulumi", "stacks");
    const file = readdirSync(stacks, { recursive: true, encoding: "utf8" }).find((f) => f.endsWith("local-api.json"));
    assert.ok(file, "the API stack's checkpoint");
    return join(stacks, file);
  };
  const replaceFile = (file: string, content: Buffer | string) => {
    writeFileSync(`${file}.edit`, content);
    renameSync(`${file}.edit`, file);
  };

  before(async function () {
    skipUnlessAvailable(this, missingTools(...LOCAL_CLOUD_TOOLS));
    dir = mkdtempSync(join(tmpdir(), "nodefleet-guard-local-"));
    started = await startLocalCloudWithServe(dir, (cloud) => editLocalPools(cloud, (pools) => pools.filter((p) => p.name === POOL)));
    ({ cloud, serve } = started);
  });

  after(async function () {
    await stopLocalCloudWithServe(dir, started);
  });

  it("adds and removes members without a preview once the first run left its fingerprint, refreshing what it deletes", async function () {
    await running("first");
    assert.deepEqual(await kinds(), ["preview", "up"], "the first run is guarded: no fingerprint yet");
    const second = await running("second");
    assert.deepEqual(await kinds(), ["preview", "up", "up"], "nothing that could move the first member changed: no preview");

    // Deleted in the console first: the run's delete of it would fail (not_found) without a refresh.
    const response = await fetch(`${cloud.env.HCLOUD_ENDPOINT}/servers/${second.instanceID}`, {
      method: "DELETE",
      headers: { Authorization: `Bearer ${cloud.env.HCLOUD_TOKEN}` },
    });
    assert.equal(response.status, 200, await response.text());
    await serve.client.deleteNode(second.nodeID);
    await waitFor("second gone", async () => ((await serve.client.getNode(second.nodeID).catch(() => undefined)) ? undefined : true));
    const operations = (await serve.client.operations()).reverse();
    assert.deepEqual(
      operations.map((o) => [o.kind, o.result]),
      [
        ["preview", "succeeded"],
        ["up", "succeeded"],
        ["up", "succeeded"],
        ["up", "succeeded"],
      ],
      "the delete went through unguarded, its vanished server refreshed away first",
    );
  });

  it("guards again after the state was edited outside the service, refuses the replacement it would make, and skips again once restored", async function () {
    const [member] = await poolServers(cloud, POOL);
    assert.ok(member, "the first member's server");
    const file = checkpointFile();
    const original = readFileSync(file);
    const checkpoint = JSON.parse(original.toString("utf8")) as { checkpoint: { latest: { resources: CheckpointResource[] } } };
    const server = checkpoint.checkpoint.latest.resources.find(
      (r) => r.type === "hcloud:index/server:Server" && r.id === String(member.id),
    );
    assert.ok(server, "the member's server in the state");
    // As a hand edit (or an import of another state) would: the program's image no longer matches, a
    // replacement (user data would not do: a member that joined ignores changes of it).
    for (const side of [server.inputs, server.outputs]) if (side) side.image = "debian-12";
    replaceFile(file, JSON.stringify(checkpoint, null, 4));

    const before = (await serve.client.operations()).length;
    const third = await serve.client.createNode({ uniqueID: "third", pool: POOL });
    const ready = await waitFor("degraded by the guard", async () => {
      const r = await serve.client.readiness();
      return r.body.status === "degraded" ? r : undefined;
    });
    assert.match(JSON.stringify(ready.body.details), /preview guard refused the run: it would replace /);
    const since = (await serve.client.operations()).slice(0, -before).reverse();
    assert.equal(since[0]?.kind, "preview", "the state changed outside the service: the guard ran");
    assert.deepEqual(
      (await poolServers(cloud, POOL)).map((s) => s.id),
      [member.id],
      "nothing replaced, nothing created",
    );

    replaceFile(file, original);
    await waitFor("third RUNNING", async () => ((await serve.client.getNode(third.node.nodeID)).status === "RUNNING" ? true : undefined));
    const last = (await serve.client.operations())[0]!;
    assert.equal(last.kind, "up");
    assert.equal(last.result, "succeeded");
    assert.ok(
      (await poolServers(cloud, POOL)).some((s) => s.id === member.id),
      "the first member's server was never replaced",
    );
  });
});
