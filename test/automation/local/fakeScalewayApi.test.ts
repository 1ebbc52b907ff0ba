/**
 * The fake Scaleway API's behaviour, over HTTP on loopback: pagination and filters, the install
 * duration knob, the late-VLAN knob, the missing-permission knob, Scaleway's error shapes, the
 * offers' published figures and persistence across a restart. (Its wire format is checked against
 * scaleway-sdk-go by fakeScalewaySdk.test.ts.)
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type FakeScaleway, type FakeScalewayOptions, buildFakeScaleway } from "../../../automation/local/fakeScaleway/fakeScalewayApi";
import { until } from "../../support/until";

const SECRET = randomUUID();
const PROJECT = randomUUID();
const ZONE = "/baremetal/v1/zones/fr-par-2";
const PRIVATE_NETWORK_OPTION = "cd4158d7-2d65-49be-8803-c4b8ab6f760c";
const UBUNTU_NOBLE = "7d1914e1-f4ab-47fc-bd8c-b3a23143e87a";
const SSH_KEY = "11111111-2222-4333-8444-555555555555";

describe("fake Scaleway API", function () {
  this.timeout(30_000);
  let directory: string;
  const dir = () => directory;
  let fake: FakeScaleway | undefined;
  let url: string;

  async function start(options: Partial<FakeScalewayOptions> = {}): Promise<FakeScaleway> {
    fake = buildFakeScaleway({
      secretKey: SECRET,
      projectId: PROJECT,
      stateFile: join(dir(), "scw.json"),
      actionMs: 50,
      installMs: 200,
      ...options,
    });
    url = await fake.app.listen({ port: 0, host: "127.0.0.1" });
    return fake;
  }
  async function stop(): Promise<void> {
    await fake?.app.close();
    fake = undefined;
  }
  beforeEach(function () {
    directory = mkdtempSync(join(tmpdir(), "nodefleet-fakescw-"));
  });
  // The fake first: closing writes its last snapshot into the directory.
  afterEach(async function () {
    await stop();
    rmSync(directory, { recursive: true, force: true });
  });
  /** Polls every 50 ms until `holds` (the fake's delays are a few hundred milliseconds). */
  const waitFor = (what: string, holds: () => Promise<boolean>) =>
    until(
      what,
      async () => ((await holds()) ? true : undefined),
      5000,
      () => "",
      50,
    );

  const api = async (method: string, path: string, body?: unknown, token: string = SECRET) => {
    const response = await fetch(`${url}${path}`, {
      method,
      headers: { "X-Auth-Token": token, ...(body !== undefined ? { "Content-Type": "application/json" } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await response.text();
    return { status: response.status, body: (text ? JSON.parse(text) : {}) as Record<string, any> };
  };
  const offerId = async (name: string) => (await api("GET", `${ZONE}/offers?name=${name}`)).body.offers[0].id as string;
  const createServer = async (name: string, tags: string[], offer = "EM-A610R-NVME") =>
    api("POST", `${ZONE}/servers`, {
      offer_id: await offerId(offer),
      name,
      tags,
      option_ids: [PRIVATE_NETWORK_OPTION],
      install: { os_id: UBUNTU_NOBLE, hostname: name, ssh_key_ids: [SSH_KEY] },
    });

  it("serves the offers with Scaleway's published figures and their cloud-init capability", async function () {
    await start();
    const { body } = await api("GET", `${ZONE}/offers?name=EM-A610R-NVME`);
    assert.equal(body.total_count, 1);
    const offer = body.offers[0];
    assert.deepEqual(offer.cpus, [{ name: "AMD Ryzen PRO 3600", core_count: 6, thread_count: 12, frequency: 3600, benchmark: "" }]);
    assert.equal(offer.memories[0].capacity, 32_000_000_000);
    assert.deepEqual(
      offer.disks.map((d: { capacity: number; type: string }) => `${d.capacity} ${d.type}`),
      ["1024209543168 NVMe", "1024209543168 NVMe"],
    );
    assert.ok(offer.tags.includes("cloud-init"));
    const noCloudInit = (await api("GET", `${ZONE}/offers?name=EM-A116X-SSD`)).body.offers[0];
    assert.ok(!noCloudInit.tags.includes("cloud-init"));
    const os = (await api("GET", `${ZONE}/os`)).body.os as Array<{ name: string; version: string; cloud_init_supported: boolean }>;
    assert.ok(os.some((o) => o.name === "Ubuntu" && o.version === "24.04 LTS (Noble Numbat)" && o.cloud_init_supported));
    const options = (await api("GET", `${ZONE}/options?name=Private%20Network`)).body;
    assert.equal(options.options[0].id, PRIVATE_NETWORK_OPTION);
  });

  it("pages servers with page, page_size and total_count and filters them by name and tags", async function () {
    await start();
    for (const name of ["pool-a-1", "pool-a-2", "pool-a-3", "pool-b-1"]) {
      const created = await createServer(name, name.startsWith("pool-a") ? ["pool=a", "cluster=x"] : ["pool=b", "cluster=x"]);
      assert.equal(created.status, 200, JSON.stringify(created.body));
    }
    const page2 = (await api("GET", `${ZONE}/servers?tags=cluster%3Dx&page=2&page_size=3`)).body;
    assert.equal(page2.total_count, 4);
    assert.deepEqual(
      page2.servers.map((s: { name: string }) => s.name),
      ["pool-b-1"],
    );
    const both = (await api("GET", `${ZONE}/servers?tags=cluster%3Dx&tags=pool%3Da`)).body;
    assert.equal(both.total_count, 3, "every given tag must match");
    const named = (await api("GET", `${ZONE}/servers?name=pool-a-2`)).body;
    assert.deepEqual(
      named.servers.map((s: { name: string }) => s.name),
      ["pool-a-2"],
    );
    const beyond = (await api("GET", `${ZONE}/servers?page=9&page_size=3`)).body;
    assert.deepEqual(beyond, { total_count: 4, servers: [] });
    const tooBig = await api("GET", `${ZONE}/servers?page_size=101`);
    assert.equal(tooBig.status, 400);
    assert.equal(tooBig.body.details[0].argument_name, "page_size");
  });

  it("runs an install for as long as the install knob says", async function () {
    await start({ installMs: 600 });
    const { body: server } = await createServer("install-1", []);
    assert.equal(server.status, "delivering");
    assert.equal(server.install.status, "to_install");
    const began = Date.now();
    await waitFor("installing", async () => (await api("GET", `${ZONE}/servers/${server.id}`)).body.install.status === "installing");
    await waitFor("completed", async () => (await api("GET", `${ZONE}/servers/${server.id}`)).body.install.status === "completed");
    assert.ok(Date.now() - began >= 500, `the install completed after ${Date.now() - began} ms, the knob says 600`);
    const reinstall = await api("POST", `${ZONE}/servers/${server.id}/install`, {
      os_id: UBUNTU_NOBLE,
      hostname: "x",
      ssh_key_ids: [SSH_KEY],
    });
    assert.equal(reinstall.body.install.status, "installing");
    const busy = await api("POST", `${ZONE}/servers/${server.id}/reboot`, { boot_type: "normal" });
    assert.equal(busy.status, 409);
    assert.equal(busy.body.type, "transient_state");
    assert.equal(busy.body.current_state, "installing");
  });

  it("reports an attachment's VLAN only once the late-VLAN knob's delay has passed", async function () {
    await start({ vlanDelayMs: 500 });
    const pn = (await api("POST", "/vpc/v2/regions/fr-par/private-networks", { name: "nodes", subnets: ["10.20.0.0/22"] })).body;
    const ip = (await api("POST", "/ipam/v1/regions/fr-par/ips", { source: { private_network_id: pn.id }, address: "10.20.0.9" })).body;
    assert.equal(ip.address, "10.20.0.9/22");
    const { body: server } = await createServer("vlan-1", []);
    const set = await api("PUT", `/baremetal/v3/zones/fr-par-2/servers/${server.id}/private-networks`, {
      per_private_network_ipam_ip_ids: { [pn.id]: [ip.id] },
    });
    assert.equal(set.status, 200, JSON.stringify(set.body));
    const attachment = set.body.server_private_networks[0];
    assert.equal(attachment.vlan, null);
    const list = async () =>
      (await api("GET", `/baremetal/v3/zones/fr-par-2/server-private-networks?server_id=${server.id}`)).body.server_private_networks[0];
    await waitFor("attached", async () => (await list()).status === "attached");
    assert.equal((await list()).vlan, null, "attached, but the VLAN is still held back");
    await waitFor("the VLAN", async () => (await list()).vlan !== null);
    assert.ok(Number.isInteger((await list()).vlan));
    const attachedIp = (await api("GET", `/ipam/v1/regions/fr-par/ips/${ip.id}`)).body;
    assert.deepEqual([attachedIp.resource.type, attachedIp.resource.id], ["baremetal_private_nic", attachment.id]);
    const inUse = await api("DELETE", `/ipam/v1/regions/fr-par/ips/${ip.id}`);
    assert.equal(inUse.status, 412);
    assert.equal(inUse.body.type, "precondition_failed");
  });

  it("refuses with 403 naming the permission set the knob takes away, and lets reads through", async function () {
    const started = await start({ missingPermissions: ["ElasticMetalFullAccess"] });
    assert.equal((await api("GET", `${ZONE}/servers`)).status, 200);
    const denied = await api("POST", `${ZONE}/servers`, { name: "x" });
    assert.equal(denied.status, 403);
    assert.equal(denied.body.type, "permissions_denied");
    assert.match(denied.body.message, /ElasticMetalFullAccess/);
    assert.deepEqual(denied.body.details, [{ resource: "baremetal_server", action: "write" }]);
    started.setMissingPermissions(["IPAMFullAccess", "IPAMReadOnly"]);
    const read = await api("GET", "/ipam/v1/regions/fr-par/ips");
    assert.equal(read.status, 403);
    assert.match(read.body.message, /IPAMReadOnly/);
    assert.equal((await api("GET", `${ZONE}/servers`)).status, 200);
  });

  it("answers in Scaleway's error shapes", async function () {
    await start({ outOfStock: ["EM-B112X-SSD"] });
    const noAuth = await api("GET", `${ZONE}/servers`, undefined, "");
    assert.deepEqual([noAuth.status, noAuth.body.type, noAuth.body.reason], [401, "denied_authentication", "invalid_argument"]);
    const wrong = await api("GET", `${ZONE}/servers`, undefined, randomUUID());
    assert.deepEqual([wrong.status, wrong.body.reason], [401, "not_found"]);
    const missing = randomUUID();
    const notFound = await api("GET", `${ZONE}/servers/${missing}`);
    assert.deepEqual(notFound.body, {
      message: "resource is not found",
      type: "not_found",
      resource: "baremetal_server",
      resource_id: missing,
    });
    const noName = await api("POST", `${ZONE}/servers`, { offer_id: await offerId("EM-A116X-SSD") });
    assert.equal(noName.status, 400);
    assert.deepEqual(noName.body.details, [{ argument_name: "name", reason: "required", help_message: "is required" }]);
    const cloudInit = await api("POST", `${ZONE}/servers`, {
      offer_id: await offerId("EM-A116X-SSD"),
      name: "x",
      user_data: "I2Nsb3VkLWNvbmZpZw==",
    });
    assert.deepEqual([cloudInit.status, cloudInit.body.message], [503, "cloud-init is not supported on this offer"]);
    const soldOut = await createServer("sold-out", [], "EM-B112X-SSD");
    assert.deepEqual([soldOut.status, soldOut.body.type], [409, "out_of_stock"]);
    const badZone = await api("GET", "/baremetal/v1/zones/xx-yyy-9/servers");
    assert.equal(badZone.body.details[0].argument_name, "zone");
    const { body: server } = await createServer("no-pn-option", []);
    const pn = (await api("POST", "/vpc/v2/regions/fr-par/private-networks", { name: "n" })).body;
    await api("DELETE", `${ZONE}/servers/${server.id}/options/${PRIVATE_NETWORK_OPTION}`);
    const withoutOption = await api("POST", `/baremetal/v3/zones/fr-par-2/servers/${server.id}/private-networks`, {
      private_network_id: pn.id,
    });
    assert.deepEqual([withoutOption.status, withoutOption.body.precondition], [412, "attribute_must_be_set"]);
  });

  it("keeps its servers, networks and IPs across a restart", async function () {
    await start();
    const { body: server } = await createServer("kept-1", ["kept"]);
    const pn = (await api("POST", "/vpc/v2/regions/fr-par/private-networks", { name: "kept" })).body;
    await stop();
    await start();
    assert.equal((await api("GET", `${ZONE}/servers/${server.id}`)).body.name, "kept-1");
    assert.equal((await api("GET", `/vpc/v2/regions/fr-par/private-networks/${pn.id}`)).body.name, "kept");
  });
});
