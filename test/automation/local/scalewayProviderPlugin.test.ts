/**
 * nodefleet's Scaleway provider plugin (toolchain/providers/cmd/pulumi-resource-scaleway), driven by
 * the real engine against the local cloud's fake Scaleway API: what the Elastic Metal pool declares
 * is created after the look-ups, installed, attached to its private network with its IPAM address,
 * updated in place (tags, a new OS reinstalls), replaced on a new offer (the old server detached
 * and deleted), bounded by customTimeouts, refreshed away when deleted behind Pulumi's back, and
 * destroyed. What the test checks is read back from the fake API, not only from Pulumi's outputs.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AutomationEngine } from "../../../automation/engine/automationEngine";
import type { RunResult, StackDefinition } from "../../../automation/engine/stackEngine";
import { type FakeScaleway, buildFakeScaleway } from "../../../automation/local/fakeScaleway/fakeScalewayApi";
import { ELASTIC_METAL_OSES } from "../../../automation/local/fakeScaleway/fakeScalewayCatalog";
import { missingTools, skipUnlessAvailable } from "../../support/toolchainRequirement";
import { SCW_TEST_SSH_KEY, SCW_TEST_ZONE, scwTestOsVersion } from "../../support/scalewayResourcesProgram";

const PROGRAM = join(__dirname, "..", "..", "support", "scalewayResourcesProgram.js");
const SECRET_KEY = "5f0c1a8e-3c1d-4b7e-9a2f-0d4e6b8c1a2f";
const PROJECT_ID = "8a1c5e2f-6b3d-4f70-9c1e-2d3f4a5b6c7d";
const SERVER = "scaleway:elasticmetal/server:Server";
const silent = { info() {}, warn() {}, error() {} };
const osIdOf = (revision: number) => ELASTIC_METAL_OSES.find((o) => o.name === "Ubuntu" && o.version === scwTestOsVersion(revision))!.id;

type Json = Record<string, any>;

describe("the Scaleway provider plugin on the real engine, against the fake Scaleway API", function () {
  this.timeout(600_000);
  let dir: string;
  let fake: FakeScaleway;
  let endpoint: string;
  let engine: AutomationEngine;

  const api = async (path: string, method = "GET"): Promise<Json> => {
    const response = await fetch(`${endpoint}${path}`, { method, headers: { "X-Auth-Token": SECRET_KEY } });
    return response.status === 204 ? {} : ((await response.json()) as Json);
  };
  const servers = async (): Promise<Json[]> => (await api(`/baremetal/v1/zones/${SCW_TEST_ZONE}/servers?name=scwtest-server`)).servers;
  const attachments = async (serverId: string): Promise<Json[]> =>
    (await api(`/baremetal/v3/zones/${SCW_TEST_ZONE}/server-private-networks?server_id=${serverId}`)).server_private_networks;
  const stack = (revision: number, program: Record<string, string> = {}): StackDefinition => ({
    stackName: "scaleway",
    program: { module: PROGRAM },
    config: {
      // The zone from the provider's config; endpoint and credentials from SCW_* (as `local env` gives them).
      "scaleway:zone": { value: SCW_TEST_ZONE },
      "scwtest:revision": { value: String(revision) },
      ...Object.fromEntries(Object.entries(program).map(([key, value]) => [`scwtest:${key}`, { value }])),
    },
  });
  const serverSteps = (run: RunResult) => run.steps.filter((s) => s.type === SERVER).map((s) => s.op);
  const failed = (run: RunResult) => JSON.stringify(run.steps.filter((s) => s.error));
  const bare = (id: string) => id.split("/").pop()!;

  before(async function () {
    skipUnlessAvailable(this, missingTools("pulumi", "pulumi-resource-scaleway"));
    dir = mkdtempSync(join(tmpdir(), "nodefleet-scaleway-plugin-"));
    fake = buildFakeScaleway({
      secretKey: SECRET_KEY,
      projectId: PROJECT_ID,
      stateFile: join(dir, "scaleway.json"),
      actionMs: 50,
      installMs: 1500,
    });
    endpoint = await fake.app.listen({ port: 0, host: "127.0.0.1" });
    engine = new AutomationEngine({
      dataDir: join(dir, "data"),
      env: {
        ...process.env,
        PULUMI_CONFIG_PASSPHRASE: "scaleway-plugin",
        SCW_API_URL: endpoint,
        SCW_ACCESS_KEY: "SCWNODEFLEETTEST0000",
        SCW_SECRET_KEY: SECRET_KEY,
        SCW_DEFAULT_PROJECT_ID: PROJECT_ID,
        SCW_DEFAULT_ORGANIZATION_ID: PROJECT_ID,
        SCW_DEFAULT_REGION: "fr-par",
        // Kept out of the way: a developer's own ~/.config/scw/config.yaml must not reach the test.
        SCW_CONFIG_PATH: join(dir, "no-scw-config.yaml"),
      },
      logger: silent,
    });
  });

  after(async function () {
    await fake?.app.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("creates the network, the address and the installed server on it, and the look-ups answer zoned ids", async function () {
    const run = await engine.up(stack(1));
    assert.equal(run.succeeded, true, failed(run));
    const [server] = await servers();
    assert.ok(server, "the server was ordered");
    assert.equal(server.install.status, "completed", "create waited for the install");
    assert.equal(server.install.os_id, osIdOf(1));
    assert.deepEqual(server.install.ssh_key_ids, [SCW_TEST_SSH_KEY]);
    assert.equal(server.offer_name, "EM-A116X-SSD");
    assert.ok(
      server.options.some((o: Json) => o.name === "Private Network"),
      "the option was added",
    );
    const [attachment] = await attachments(server.id);
    assert.equal(attachment.status, "attached", "create waited for the attachment");
    assert.equal(attachment.private_network_id, bare(run.outputs.networkId as string));
    assert.deepEqual(attachment.ipam_ip_ids, [bare(run.outputs.ipId as string)], "attached with its IPAM address");
    // Ids carry their locality, as upstream's (zonal.NewIDString, regional.NewIDString).
    assert.equal(run.outputs.serverId, `${SCW_TEST_ZONE}/${server.id}`);
    assert.match(run.outputs.networkId as string, /^fr-par\/[0-9a-f-]{36}$/);
    assert.match(run.outputs.offerId as string, new RegExp(`^${SCW_TEST_ZONE}/[0-9a-f-]{36}$`));
    assert.equal(run.outputs.osId, `${SCW_TEST_ZONE}/${osIdOf(1)}`);
    assert.equal(run.outputs.offerCores, 4, "getOffer answers the offer's CPU");
    assert.equal(run.outputs.offerName, "EM-A116X-SSD");
    assert.equal(run.outputs.osName, "Ubuntu");
    assert.equal(run.outputs.lookedUpNetworkId, run.outputs.networkId, "getPrivateNetwork finds it by name");
    assert.deepEqual(run.outputs.lookedUpSubnets, ["172.16.8.0/22"]);
    const attached = run.outputs.attached as Json[];
    assert.equal(attached.length, 1);
    assert.equal(attached[0]!.id, run.outputs.networkId);
    assert.equal(attached[0]!.status, "attached");
    assert.ok(Number(attached[0]!.vlan) > 0, `a VLAN is reported: ${JSON.stringify(attached)}`);
    const ip = await api(`/ipam/v1/regions/fr-par/ips/${bare(run.outputs.ipId as string)}`);
    assert.equal(run.outputs.ipAddressCidr, ip.address);
    assert.equal(run.outputs.ipAddress, String(ip.address).split("/")[0]);
    assert.ok(String(run.outputs.publicIpv4 ?? "").length > 0, "the public IPv4 is read back");
  });

  it("updates tags in place and reinstalls in place for a new OS, keeping the server", async function () {
    const [before] = await servers();
    const run = await engine.up(stack(2));
    assert.equal(run.succeeded, true, failed(run));
    assert.deepEqual(serverSteps(run), ["update"]);
    const [after] = await servers();
    assert.equal(after.id, before.id, "no new server");
    assert.equal(after.install.os_id, osIdOf(2), "reinstalled with the new OS");
    assert.equal(after.install.status, "completed", "the update waited for the install");
    assert.deepEqual(after.tags, ["scwtest", "rev=2"]);
    const network = await api(`/vpc/v2/regions/fr-par/private-networks/${bare(run.outputs.networkId as string)}`);
    assert.deepEqual(network.tags, ["scwtest", "rev=2"], "the network's tags updated in place");
  });

  it("fails an update that outlives customTimeouts.update, naming the setting", async function () {
    // Revision 1's OS again: a reinstall of 1.5 s, polled every 5 s (upstream's interval), cannot fit in 1 s.
    const run = await engine.up(stack(1, { updateTimeout: "1s" }));
    assert.equal(run.succeeded, false);
    assert.match(failed(run), /customTimeouts\.update|timeout/i);
    // The reinstall the timed-out run started goes on; until it ends the API refuses changes to the
    // server as in a transient state, and upstream does not wait for it before an update either.
    const deadline = Date.now() + 60_000;
    while ((await servers())[0]?.install?.status !== "completed") {
      assert.ok(Date.now() < deadline, "the reinstall never completed");
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    const back = await engine.up(stack(1));
    assert.equal(back.succeeded, true, failed(back));
    const [server] = await servers();
    assert.equal(server.install.os_id, osIdOf(1));
  });

  it("replaces the server for a new offer: the old one is detached and deleted", async function () {
    const [before] = await servers();
    const run = await engine.up(stack(3));
    assert.equal(run.succeeded, true, failed(run));
    const step = run.steps.find((s) => s.type === SERVER)!;
    assert.equal(step.op, "replace");
    assert.deepEqual(step.replaceKeys, ["offer"]);
    const now = await servers();
    assert.equal(now.length, 1, `one server: ${JSON.stringify(now.map((s) => [s.id, s.status]))}`);
    assert.notEqual(now[0]!.id, before.id);
    assert.equal(now[0]!.offer_name, "EM-A215R-HDD");
    assert.deepEqual(await attachments(before.id), [], "the old server's attachment is gone");
    assert.equal((await attachments(now[0]!.id)).length, 1);
  });

  it("notices on refresh a server deleted outside Pulumi, and destroys everything", async function () {
    const [server] = await servers();
    for (const attachment of await attachments(server.id))
      await api(`/baremetal/v3/zones/${SCW_TEST_ZONE}/servers/${server.id}/private-networks/${attachment.private_network_id}`, "DELETE");
    await api(`/baremetal/v1/zones/${SCW_TEST_ZONE}/servers/${server.id}`, "DELETE");
    for (let i = 0; i < 100 && (await servers()).length > 0; i++) await new Promise((r) => setTimeout(r, 100));
    const refresh = await engine.refresh(stack(3));
    assert.ok(
      refresh.steps.some((s) => s.type === SERVER && s.op === "delete"),
      JSON.stringify(refresh.steps.map((s) => [s.op, s.name])),
    );
    const destroyed = await engine.up(stack(0));
    assert.equal(destroyed.succeeded, true, failed(destroyed));
    assert.deepEqual(await servers(), []);
    assert.deepEqual((await api("/vpc/v2/regions/fr-par/private-networks?name=scwtest-pn")).private_networks, []);
    assert.deepEqual((await api(`/ipam/v1/regions/fr-par/ips?project_id=${PROJECT_ID}`)).ips, []);
  });

  it("fails a run whose key lacks a permission set, naming the action refused (docs/operations.md maps it to the set)", async function () {
    fake.setMissingPermissions(["IPAMFullAccess"]);
    try {
      const run = await engine.up(stack(1));
      assert.equal(run.succeeded, false);
      // scaleway-sdk-go words a 403 permissions_denied by its details (action and resource), not the set.
      assert.match(failed(run), /insufficient permissions: write ip/, failed(run));
      assert.deepEqual(await servers(), [], "no server is ordered without its address");
    } finally {
      fake.setMissingPermissions([]);
    }
    const destroyed = await engine.up(stack(0));
    assert.equal(destroyed.succeeded, true, failed(destroyed));
  });
});
