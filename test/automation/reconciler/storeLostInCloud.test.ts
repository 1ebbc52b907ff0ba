/**
 * Fault 1 where the data directory shows nothing: the engine state is remote (NODEFLEET_API_STACK_BACKEND_URL) or
 * went with the directory, and only the cloud shows that a store recorded claims. Run against the
 * fake Hetzner API over HTTP with nodefleet's own Hetzner client, and through `nodefleet serve`.
 */
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as net from "node:net";
import { join } from "node:path";
import { HcloudApiError, HcloudClient } from "../../../automation/hcloud/hcloudClient";
import { CLAIM_STATUSES, type ClaimStatus } from "../../../automation/store/claimStore";
import { buildFakeHcloud, type FakeHcloud } from "../../../automation/local/fakeHcloud/fakeHcloudApi";
import { hcloudInventory } from "../../../automation/reconciler/orphanReclaimer";
import { databasePath } from "../../../automation/store/database";
import { StackStateFile } from "../../../automation/simulated/simulatedCloud";
import { StoreLostError } from "../../../automation/store/storeIntegrity";
import {
  SharedClaimsLostError,
  assertSharedClaimsNotLostInCloud,
  assertStoreNotLostInCloud,
} from "../../../automation/reconciler/storeLostInCloud";
import { tempDataDir } from "../../support/apiHarness";
import { startServe } from "../../support/serveProcess";

const HCLOUD_TOKEN = "f".repeat(64);
/** git's static pools of the clusters below. */
const STATIC = new Set(["hel1-general"]);

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
    await createServer("example-burst-a1", {
      "nodefleet.io/cluster": "example",
      "nodefleet.io/pool": "hel1-burst",
      "nodefleet.io/node": "a1",
    });
    await createServer("example-general-0", {
      "nodefleet.io/cluster": "example",
      "nodefleet.io/pool": "hel1-general",
      "nodefleet.io/node": "g0",
    });
    // Cluster "static-only": git's servers alone.
    await createServer("static-general-0", {
      "nodefleet.io/cluster": "static-only",
      "nodefleet.io/pool": "hel1-general",
      "nodefleet.io/node": "s0",
    });
  });

  after(async () => {
    await fake?.app.close();
  });

  it("is refused when Hetzner holds servers of the cluster outside git's static pools, naming the file, the servers and how to restore", async () => {
    const file = databasePath(tempDataDir());
    await assert.rejects(assertStoreNotLostInCloud(file, inventory, "example", STATIC), (error: Error) => {
      assert.ok(error instanceof StoreLostError, String(error));
      assert.ok(error.message.includes(file), error.message);
      assert.match(
        error.message,
        /is missing, but Hetzner Cloud holds 1 server\(s\) of cluster example outside git's static pools \(example-burst-a1\)/,
      );
      assert.match(error.message, /Restore nodefleet\.db/);
      return true;
    });
    // An empty file is as lost as a missing one.
    fs.writeFileSync(file, "");
    await assert.rejects(
      assertStoreNotLostInCloud(file, inventory, "example", STATIC),
      (error: Error) => error instanceof StoreLostError && /is empty/.test(error.message),
    );
  });

  it("lets a first start through: only servers of static pools, or none, for the cluster", async () => {
    await assertStoreNotLostInCloud(databasePath(tempDataDir()), inventory, "static-only", STATIC);
    await assertStoreNotLostInCloud(databasePath(tempDataDir()), inventory, "new-cluster", STATIC);
  });

  it("asks the cloud nothing when the store holds data", async () => {
    const file = databasePath(tempDataDir());
    fs.writeFileSync(file, "SQLite format 3\0");
    const unreachable = { listClusterServers: () => Promise.reject(new Error("must not be asked")) };
    await assertStoreNotLostInCloud(file, unreachable, "example", STATIC);
  });

  describe("the scale-out mode's shared database", () => {
    const DATABASE = "db.internal:5432/nodefleet";
    /** A shared database holding `n` claims of each cluster (the statuses do not matter: GONE ones show it was used). */
    const database = (counts: Partial<Record<ClaimStatus, number>>) => ({
      countByStatus: () =>
        Promise.resolve({ ...Object.fromEntries(CLAIM_STATUSES.map((s) => [s, 0])), ...counts } as Record<ClaimStatus, number>),
    });

    it("is refused when it holds no claim of the cluster while Hetzner holds servers the API created, naming the database and the servers", async () => {
      await assert.rejects(assertSharedClaimsNotLostInCloud(database({}), DATABASE, inventory, "example", STATIC), (error: Error) => {
        assert.ok(error instanceof SharedClaimsLostError, String(error));
        assert.match(
          error.message,
          /the shared database db\.internal:5432\/nodefleet holds no claim of cluster example, but Hetzner Cloud holds 1 server\(s\)/,
        );
        assert.match(error.message, /\(example-burst-a1\)/);
        assert.match(error.message, /NODEFLEET_DATABASE_URL/);
        return true;
      });
    });

    it("lets a first start through, and asks the cloud nothing once the database holds a claim of the cluster, even a GONE one", async () => {
      await assertSharedClaimsNotLostInCloud(database({}), DATABASE, inventory, "static-only", STATIC);
      const unreachable = { listClusterServers: () => Promise.reject(new Error("must not be asked")) };
      await assertSharedClaimsNotLostInCloud(database({ GONE: 1 }), DATABASE, unreachable, "example", STATIC);
    });

    it("refuses an empty database when the cloud cannot be asked", async () => {
      const unreachable = { listClusterServers: () => Promise.reject(new HcloudApiError(401, "unauthorized", "no")) };
      await assert.rejects(
        assertSharedClaimsNotLostInCloud(database({}), DATABASE, unreachable, "example", STATIC, { retryDelaysMs: [1] }),
        /the shared database db\.internal:5432\/nodefleet holds no claim of cluster example, and whether Hetzner Cloud holds servers the API created/,
      );
    });
  });

  it("refuses to start on an empty store when the cloud cannot be asked, at once on a refusal, without quoting the token", async () => {
    const wrongToken = "0".repeat(64);
    let calls = 0;
    const client = new HcloudClient({ token: wrongToken, baseUrl: endpoint, onRequest: () => (calls += 1) });
    await assert.rejects(
      assertStoreNotLostInCloud(databasePath(tempDataDir()), hcloudInventory(client), "example", STATIC, { retryDelaysMs: [1, 1] }),
      (error: Error) => {
        assert.match(error.message, /could not be checked: Hetzner Cloud API 401 unauthorized.*; start again once the Hetzner API answers/);
        assert.ok(!error.message.includes(wrongToken), error.message);
        return true;
      },
    );
    assert.equal(calls, 1, "a 401 is not retried");
  });

  it("retries a listing that failed for now, and names the cause when Hetzner never answers", async () => {
    let calls = 0;
    const flaky = {
      listClusterServers: async () => {
        calls += 1;
        if (calls < 3)
          throw new TypeError("fetch failed", { cause: Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" }) });
        return inventory.listClusterServers("example");
      },
    };
    await assert.rejects(
      assertStoreNotLostInCloud(databasePath(tempDataDir()), flaky, "example", STATIC, { retryDelaysMs: [1, 1] }),
      StoreLostError,
    );
    assert.equal(calls, 3, "answered on the third attempt");
    // A port nothing listens on any more.
    const gone = net.createServer();
    await new Promise<void>((resolve) => gone.listen(0, "127.0.0.1", resolve));
    const port = (gone.address() as net.AddressInfo).port;
    await new Promise((resolve) => gone.close(resolve));
    const closed = new HcloudClient({ token: HCLOUD_TOKEN, baseUrl: `http://127.0.0.1:${port}` });
    await assert.rejects(
      assertStoreNotLostInCloud(databasePath(tempDataDir()), hcloudInventory(closed), "example", STATIC, { retryDelaysMs: [1, 1] }),
      /could not be checked: Hetzner Cloud API GET http:\/\/127\.0\.0\.1:\d+\/servers failed: connect ECONNREFUSED 127\.0\.0\.1:\d+; start again/,
    );
  });

  it("stops `nodefleet serve --engine automation` before it writes anything to the data directory", async () => {
    const dataDir = tempDataDir("nodefleet-lost-cloud-serve-");
    const started = startServe(dataDir, { HCLOUD_TOKEN, HCLOUD_ENDPOINT: endpoint }, { engine: "automation" });
    // A service that wrongly starts is stopped, so that the failure does not keep the test run alive.
    started.then(
      (serve) => serve.child.kill("SIGKILL"),
      () => undefined,
    );
    await assert.rejects(
      started,
      /exited with 1 before listening:[\s\S]*Hetzner Cloud holds 1 server\(s\) of cluster example outside git's static pools \(example-burst-a1\)/,
    );
    assert.deepEqual(fs.readdirSync(dataDir), [], "no store, no lock, no engine state");
  });

  it("reports the data directory's own evidence first: a definite answer while Hetzner cannot be reached", async () => {
    const dataDir = tempDataDir("nodefleet-lost-cloud-serve-");
    new StackStateFile(dataDir, "example-api").compact({ stack: "example-api", runs: 1, resources: new Map(), outputs: {} });
    const started = startServe(dataDir, { HCLOUD_TOKEN, HCLOUD_ENDPOINT: "http://127.0.0.1:9" }, { engine: "automation" });
    started.then(
      (serve) => serve.child.kill("SIGKILL"),
      () => undefined,
    );
    await assert.rejects(started, (error: Error) => {
      assert.match(
        error.message,
        /exited with 1 before listening:[\s\S]*is missing, but the engine holds state for the servers it recorded/,
      );
      assert.doesNotMatch(error.message, /could not be checked/);
      return true;
    });
  });
});
