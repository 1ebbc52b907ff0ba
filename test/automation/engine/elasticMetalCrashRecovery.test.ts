/**
 * Issue 37 part 5: crash recovery's plan for pending Elastic Metal creates, against the local
 * cloud's fake Scaleway API (real HTTP on 127.0.0.1, through the service's ElasticMetalApi). A
 * server found by its exact name with every one of the member's tags is adopted with its zoned id
 * (or deleted when told to); none found clears the pending create; a same-named server without our
 * tags (Scaleway takes two servers of one name) is left alone and reported. The adopted state
 * leaves out the inputs upstream's create sets after the install, so the next up sets them.
 */
import { strict as assert } from "node:assert";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type PendingCreateAction,
  adoptPendingCreates,
  elasticMetalServerLookup,
  planPendingCreates,
  serverLookups,
} from "../../../automation/engine/crashRecovery";
import type { PendingOperation } from "../../../automation/engine/fileBackendState";
import { type FakeScaleway, buildFakeScaleway } from "../../../automation/local/fakeScaleway/fakeScalewayApi";
import { ElasticMetalApi } from "../../../automation/scaleway/elasticMetalApi";
import { memberTags, orderElasticMetalServer } from "../../support/fakeScalewayServers";

const SCW_KEY = "6f1a2b3c-4d5e-4f60-8a7b-9c0d1e2f3a4b";
const PROJECT = "11111111-2222-4333-a444-555555555555";
const ZONE = "fr-par-2";
const SERVER = "scaleway:elasticmetal/server:Server";

function pendingServer(urn: string, name: string, tags: readonly string[], zone: string | null = ZONE): PendingOperation {
  return {
    type: "creating",
    resource: {
      urn,
      type: SERVER,
      custom: true,
      inputs: {
        name,
        hostname: name,
        ...(zone ? { zone } : {}),
        offer: "fr-par-2/offer",
        tags: [...tags],
        options: [{ id: "fr-par-2/cd4158d7-2d65-49be-8803-c4b8ab6f760c" }],
        privateNetworks: [{ id: "fr-par/pn", ipamIpIds: ["fr-par/ip"] }],
      },
    },
  };
}

describe("crash recovery of Elastic Metal creates", function () {
  this.timeout(30_000);
  let directory: string;
  let scaleway: FakeScaleway;
  let apiUrl: string;
  let api: ElasticMetalApi;
  let calls: string[];
  const ours = memberTags("c1", "metal", "metal-0");
  const order = (name: string, tags: readonly string[], zone = ZONE) =>
    orderElasticMetalServer({ apiUrl, secretKey: SCW_KEY, projectId: PROJECT }, zone, name, tags);
  const serverNamed = (name: string) => scaleway.state.all("servers").filter((s) => s.name === name);

  beforeEach(async function () {
    directory = mkdtempSync(join(tmpdir(), "nodefleet-em-recovery-"));
    scaleway = buildFakeScaleway({
      secretKey: SCW_KEY,
      projectId: PROJECT,
      stateFile: join(directory, "scw.json"),
      actionMs: 20,
      installMs: 0,
    });
    apiUrl = await scaleway.app.listen({ port: 0, host: "127.0.0.1" });
    calls = [];
    api = new ElasticMetalApi({ apiUrl, secretKey: SCW_KEY, projectId: PROJECT }, (operation) => calls.push(operation));
  });

  afterEach(async function () {
    await scaleway.app.close();
    rmSync(directory, { recursive: true, force: true });
  });

  it("adopts the server of that exact name with every tag, by its zoned id; a longer name holding it is not it", async function () {
    await order("c1-metal-0-spare", ours); // Scaleway matches names by substring
    await order("c1-metal-0", ours);
    const [found] = serverNamed("c1-metal-0");
    const actions = await planPendingCreates([pendingServer("urn:m0", "c1-metal-0", ours)], serverLookups({ scaleway: api }), "import");
    assert.deepEqual(actions, [
      { action: "import", urn: "urn:m0", type: SERVER, server: { id: `${ZONE}/${found!.id}`, name: "c1-metal-0", marks: ours } },
    ]);
    assert.deepEqual(calls, ["list_servers"], "one list request");
  });

  it("records the adopted server without the options and private networks its create sets after the install", async function () {
    await order("c1-metal-0", ours);
    const pending = [pendingServer("urn:m0", "c1-metal-0", ours)];
    const actions = await planPendingCreates(pending, serverLookups({ scaleway: api }), "import");
    const edited = adoptPendingCreates({ resources: [], pending_operations: pending }, actions);
    const [adopted] = edited.resources!;
    assert.equal(adopted!.id, `${ZONE}/${serverNamed("c1-metal-0")[0]!.id}`);
    const inputs = adopted!.inputs as Record<string, unknown>;
    assert.deepEqual(Object.keys(inputs).sort(), ["hostname", "name", "offer", "tags", "zone"]);
    assert.deepEqual(adopted!.outputs, inputs, "the refresh reads the rest");
    assert.deepEqual(edited.pending_operations, []);
  });

  it("clears a create that never reached Scaleway", async function () {
    const actions = await planPendingCreates([pendingServer("urn:m0", "c1-metal-0", ours)], serverLookups({ scaleway: api }), "import");
    assert.equal(actions[0]!.action, "clear");
    assert.match((actions[0] as { reason: string }).reason, /server c1-metal-0 was never created/);
  });

  it("leaves a same-named server without our tags alone, even when told to delete, and says so", async function () {
    await order("c1-metal-0", memberTags("another-cluster", "metal", "metal-0"));
    await order("c1-metal-0", ours.slice(0, 2)); // the node tag missing
    const actions = await planPendingCreates([pendingServer("urn:m0", "c1-metal-0", ours)], serverLookups({ scaleway: api }), "delete");
    assert.equal(actions[0]!.action, "clear");
    assert.match((actions[0] as { reason: string }).reason, /a server named c1-metal-0 exists without our tags; left alone/);
    assert.equal(serverNamed("c1-metal-0").length, 2, "both left where they are");
  });

  it("deletes the found server when the strategy is delete", async function () {
    await order("c1-metal-0", ours);
    const lookups = serverLookups({ scaleway: api });
    const [action] = await planPendingCreates([pendingServer("urn:m0", "c1-metal-0", ours)], lookups, "delete");
    assert.equal(action!.action, "delete");
    await lookups[SERVER]!.remove((action as Extract<PendingCreateAction, { server: unknown }>).server);
    assert.deepEqual(serverNamed("c1-metal-0"), []);
  });

  it("reads every page, and looks in the provider's default zone when the create named none", async function () {
    for (let i = 0; i < 101; i++) await order(`c1-metal-0-${i}`, ours, "fr-par-1");
    await order("c1-metal-0", ours, "fr-par-1");
    const actions = await planPendingCreates(
      [pendingServer("urn:m0", "c1-metal-0", ours, null)],
      { [SERVER]: elasticMetalServerLookup(api) },
      "import",
    );
    assert.equal(actions[0]!.action, "import", JSON.stringify(actions));
    assert.match((actions[0] as { server: { id: string } }).server.id, /^fr-par-1\//);
    assert.deepEqual(calls, ["list_servers", "list_servers"], "two pages of 100");
  });

  it("names the missing key when a pending Elastic Metal create must be looked up without one", async function () {
    await assert.rejects(
      planPendingCreates([pendingServer("urn:m0", "c1-metal-0", ours)], serverLookups({}), "import"),
      /must look up Elastic Metal server c1-metal-0 at Scaleway but SCW_SECRET_KEY is not set/,
    );
  });
});
