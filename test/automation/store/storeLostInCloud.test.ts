/**
 * Fault 1 where the data directory shows nothing: the engine state is remote (PULUMI_BACKEND_URL) or
 * went with the directory, and only the cloud shows that a store recorded claims. Run against the
 * fake Hetzner API over HTTP with nodefleet's own Hetzner client, and through `nodefleet serve`.
 */
import assert from "node:assert/strict";
import * as fs from "node:fs";
import { join } from "node:path";
import { HcloudClient } from "../../../automation/engine/hcloudClient";
import { buildFakeHcloud, type FakeHcloud } from "../../../automation/local/fakeHcloud/fakeHcloudApi";
import { hcloudInventory } from "../../../automation/reconciler/orphanReclaimer";
import { databasePath } from "../../../automation/store/database";
import { StoreLostError } from "../../../automation/store/storeIntegrity";
import { assertStoreNotLostInCloud } from "../../../automation/store/storeLostInCloud";
import { tempDataDir } from "../../support/apiHarness";
import { startServe } from "../../support/serveProcess";

const HCLOUD_TOKEN = "f".repeat(64);
const AUTOSCALED = new Set(["hel1-burst"]);

describe("a store lost over the cloud", function () {
  this.timeout(60_000);
  let fake: FakeHcloud;
  let endpoint: string;
  let inventory: ReturnType<typeof hcloudInventory>;

  const createServer = async (name: string, labels: Record<string, string>) => {
    const response = await fetch(`${endpoint}/servers`, {
      method: "POST",
      headers: { Authorization: `Bearer ${HCLOUD_TOKEN}`, "Content-Type": "application/json" },
      body: JSON.stringify({ name, server_type: "cx22", image: "ubuntu-24.04", location: "hel1", labels }),
    });
    assert.equal(response.status, 201, await response.text());
  };

  before(async () => {
    fake = buildFakeHcloud({ token: HCLOUD_TOKEN, stateFile: join(tempDataDir("nodefleet-lost-cloud-"), "hcloud.json"), actionMs: 10 });
    endpoint = await fake.app.listen({ host: "127.0.0.1", port: 0 });
    inventory = hcloudInventory(new HcloudClient({ token: HCLOUD_TOKEN, baseUrl: endpoint }));
    // Cluster "example": one server the API created (autoscaled pool) and one of git's static pool.
    await createServer("example-burst-a1", { "nodefleet.io/cluster": "example", "nodefleet.io/pool": "hel1-burst", "nodefleet.io/node": "a1" });
    await createServer("example-general-0", { "nodefleet.io/cluster": "example", "nodefleet.io/pool": "hel1-general", "nodefleet.io/node": "g0" });
    // Cluster "static-only": git's servers alone.
    await createServer("static-general-0", { "nodefleet.io/cluster": "static-only", "nodefleet.io/pool": "hel1-general", "nodefleet.io/node": "s0" });
  });

  after(async () => {
    await fake?.app.close();
  });

  it("is refused when Hetzner holds servers of an autoscaled pool, naming the file, the servers and how to restore", async () => {
    const file = databasePath(tempDataDir());
    await assert.rejects(assertStoreNotLostInCloud(file, inventory, "example", AUTOSCALED), (error: Error) => {
      assert.ok(error instanceof StoreLostError, String(error));
      assert.ok(error.message.includes(file), error.message);
      assert.match(error.message, /is missing, but Hetzner Cloud holds 1 server\(s\) of the autoscaled pools of cluster example \(example-burst-a1\)/);
      assert.match(error.message, /Restore nodefleet\.db/);
      return true;
    });
    // An empty file is as lost as a missing one.
    fs.writeFileSync(file, "");
    await assert.rejects(assertStoreNotLostInCloud(file, inventory, "example", AUTOSCALED), (error: Error) => error instanceof StoreLostError && /is empty/.test(error.message));
  });

  it("lets a first start through: only servers of static pools, or none, for the cluster", async () => {
    await assertStoreNotLostInCloud(databasePath(tempDataDir()), inventory, "static-only", AUTOSCALED);
    await assertStoreNotLostInCloud(databasePath(tempDataDir()), inventory, "new-cluster", AUTOSCALED);
  });

  it("asks the cloud nothing when the store holds data", async () => {
    const file = databasePath(tempDataDir());
    fs.writeFileSync(file, "SQLite format 3\0");
    const unreachable = { listClusterServers: () => Promise.reject(new Error("must not be asked")) };
    await assertStoreNotLostInCloud(file, unreachable, "example", AUTOSCALED);
  });

  it("refuses to start on an empty store when the cloud cannot be asked, without quoting the token", async () => {
    const wrongToken = "0".repeat(64);
    const refused = hcloudInventory(new HcloudClient({ token: wrongToken, baseUrl: endpoint }));
    await assert.rejects(assertStoreNotLostInCloud(databasePath(tempDataDir()), refused, "example", AUTOSCALED), (error: Error) => {
      assert.match(error.message, /could not be checked: .+; start again once the Hetzner API answers/);
      assert.ok(!error.message.includes(wrongToken), error.message);
      return true;
    });
  });

  it("stops `nodefleet serve --engine automation` before it writes anything to the data directory", async () => {
    const dataDir = tempDataDir("nodefleet-lost-cloud-serve-");
    const started = startServe(dataDir, { HCLOUD_TOKEN, HCLOUD_ENDPOINT: endpoint }, { engine: "automation" });
    // A service that wrongly starts is stopped, so that the failure does not keep the test run alive.
    started.then((serve) => serve.child.kill("SIGKILL"), () => undefined);
    await assert.rejects(started, /exited with 1 before listening:[\s\S]*Hetzner Cloud holds 1 server\(s\) of the autoscaled pools of cluster example \(example-burst-a1\)/);
    assert.deepEqual(fs.readdirSync(dataDir), [], "no store, no lock, no engine state");
  });
});
