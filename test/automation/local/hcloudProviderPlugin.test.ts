/**
 * nodefleet's hcloud provider plugin (toolchain/providers/cmd/pulumi-resource-hcloud), driven by the
 * real engine against the local cloud's fake Hetzner API: every resource the fleet declares is
 * created, updated in place or replaced as terraform-provider-hcloud would, delete protection is
 * enforced by the API, look-ups find what the fleet created, and a refresh notices a server deleted
 * behind Pulumi's back. What the test checks is read back from the API, not from Pulumi's outputs.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AutomationEngine } from "../../../automation/engine/automationEngine";
import type { RunResult, StackDefinition } from "../../../automation/engine/stackEngine";
import { type FakeHcloud, buildFakeHcloud } from "../../../automation/local/fakeHcloud/fakeHcloudApi";
import { type HcloudExchange, hcloudOpenApiViolations, recordHcloudExchanges } from "../../support/hcloudOpenApi";
import { missingTools, skipUnlessAvailable } from "../../support/toolchainRequirement";
import { serverUserData } from "../../support/hcloudResourcesProgram";
import { previewGuardViolations } from "../../../automation/reconciler/runOutcome";

const PROGRAM = join(__dirname, "..", "..", "support", "hcloudResourcesProgram.js");
const TOKEN = "p".repeat(64);
const SERVER = "hcloud:index/server:Server";
const silent = { info() {}, warn() {}, error() {} };
/** What terraform-provider-hcloud's StateFunc records of a server's user data. */
const userDataHash = (text: string) => createHash("sha1").update(text).digest("base64");
/** What the state keeps of both servers' user data at generation 1 (revisions 1 and 2). */
const GENERATION_ONE_USER_DATA = [userDataHash(serverUserData(0, 1)), userDataHash(serverUserData(1, 1))];

type Json = Record<string, any>;

/** The test program's stack against the fake at `endpoint`, with hcloud provider settings, at a revision with `count` servers. */
function resourcesStack(
  stackName: string,
  endpoint: string,
  provider: Record<string, string>,
  revision: number,
  count: number,
  program: Record<string, string> = {},
): StackDefinition {
  const settings = Object.fromEntries(Object.entries(provider).map(([key, value]) => [`hcloud:${key}`, { value }]));
  return {
    stackName,
    program: { module: PROGRAM },
    config: {
      ...settings,
      "hcloud:endpoint": { value: endpoint },
      "hcloudtest:revision": { value: String(revision) },
      "hcloudtest:servers": { value: String(count) },
      ...Object.fromEntries(Object.entries(program).map(([key, value]) => [`hcloudtest:${key}`, { value }])),
    },
  };
}

describe("the hcloud provider plugin on the real engine, against the fake Hetzner API", function () {
  this.timeout(300_000);
  let dir: string;
  let fake: FakeHcloud;
  let endpoint: string;
  let engine: AutomationEngine;
  const exchanges: HcloudExchange[] = [];
  /** Every request as `METHOD /path?query`, in order. */
  const requests: string[] = [];

  const api = async (path: string): Promise<Json> => {
    const response = await fetch(`${endpoint}${path}`, { headers: { Authorization: `Bearer ${TOKEN}` } });
    return (await response.json()) as Json;
  };
  const servers = async (): Promise<Json[]> => (await api("/servers?label_selector=nodefleet.io/cluster=t1")).servers;
  const stack = (revision: number, count: number) => resourcesStack("hcloud", endpoint, { pollInterval: "50ms" }, revision, count);
  const serverSteps = (run: RunResult) => run.steps.filter((s) => s.type === SERVER).map((s) => s.op);
  const failed = (run: RunResult) => JSON.stringify(run.steps.filter((s) => s.error));

  before(async function () {
    skipUnlessAvailable(this, missingTools("pulumi", "pulumi-resource-hcloud"));
    dir = mkdtempSync(join(tmpdir(), "nodefleet-hcloud-plugin-"));
    fake = buildFakeHcloud({ token: TOKEN, stateFile: join(dir, "hcloud.json"), actionMs: 50 });
    recordHcloudExchanges(fake, exchanges);
    fake.app.addHook("onRequest", async (request) => void requests.push(`${request.method} ${request.url}`));
    endpoint = await fake.app.listen({ port: 0, host: "127.0.0.1" });
    engine = new AutomationEngine({
      dataDir: join(dir, "data"),
      env: { ...process.env, PULUMI_CONFIG_PASSPHRASE: "hcloud-plugin", HCLOUD_TOKEN: TOKEN },
      logger: silent,
    });
  });

  after(async function () {
    await fake?.app.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("creates the network, subnet, firewall, placement group and servers, and the look-ups find them", async function () {
    const run = await engine.up(stack(1, 2));
    assert.equal(run.succeeded, true, failed(run));
    const [network] = (await api("/networks?name=t1-network")).networks;
    assert.deepEqual(
      network.subnets.map((s: Json) => s.ip_range),
      ["10.0.1.0/24"],
    );
    const [firewall] = (await api("/firewalls?name=t1-nodes")).firewalls;
    assert.equal(firewall.rules.length, 2);
    const created = await servers();
    assert.equal(created.length, 2);
    const [group] = (await api("/placement_groups?name=t1-pg-0")).placement_groups;
    assert.deepEqual([...group.servers].sort(), created.map((s) => s.id).sort(), "both servers are in the spread group");
    for (const server of created) {
      assert.equal(server.server_type.name, "cpx21");
      assert.equal(server.labels.revision, "1");
      assert.ok(
        server.private_net.some((n: Json) => n.network === network.id),
        "attached to the network at create",
      );
    }
    assert.deepEqual([...(run.outputs.serverIds as string[])].sort(), created.map((s) => String(s.id)).sort());
    assert.equal(run.outputs.lookedUpNetworkId, network.id, "getNetwork by name and selector");
    assert.equal(run.outputs.lookedUpFirewallRules, 2, "getFirewall returns the rules");
    // As upstream's StateFunc: the state keeps the user data's base64 SHA-1, the inputs the text.
    assert.deepEqual(run.outputs.userDataStates, GENERATION_ONE_USER_DATA);
  });

  it("updates type, labels, rules and protection in place, keeping the servers", async function () {
    const before = (await servers()).map((s) => s.id).sort();
    const run = await engine.up(stack(2, 2));
    assert.equal(run.succeeded, true, failed(run));
    assert.deepEqual(serverSteps(run), ["update", "update"]);
    const after = await servers();
    assert.deepEqual(after.map((s) => s.id).sort(), before, "no server was replaced");
    for (const server of after) {
      assert.equal(server.server_type.name, "cpx31", "resized through change_type");
      assert.equal(server.labels.revision, "2");
      assert.equal(server.protection.delete, true);
      // As upstream: powered off for the change and left off (terraform-provider-hcloud powers nothing on).
      assert.equal(server.status, "off", "left off after the resize");
    }
    const [firewall] = (await api("/firewalls?name=t1-nodes")).firewalls;
    assert.deepEqual(firewall.rules.find((r: Json) => r.port === "10250").source_ips, ["203.0.113.10/32", "203.0.113.11/32"]);
    assert.deepEqual(run.outputs.userDataStates, GENERATION_ONE_USER_DATA, "an update keeps the hash");
  });

  it("is refused by the API when it deletes a delete-protected server", async function () {
    const run = await engine.up(stack(2, 1));
    assert.equal(run.succeeded, false);
    assert.match(failed(run), /protect/i);
    assert.equal((await servers()).length, 2, "the protected server is still there");
  });

  it("replaces a named server whose user data changed by deleting the old one first, as the bridge does", async function () {
    const lift = await engine.up(stack(1, 2));
    assert.equal(lift.succeeded, true, failed(lift));
    const before = (await servers()).map((s) => s.id);
    // The preview reports each as a replace step, which the API stack's guard refuses for a member.
    const preview = await engine.preview(stack(3, 2));
    assert.deepEqual(
      previewGuardViolations(preview.steps, []).map((v) => [v.op, v.type]),
      [
        ["replace", SERVER],
        ["replace", SERVER],
      ],
    );
    const from = requests.length;
    const run = await engine.up(stack(3, 2));
    assert.equal(run.succeeded, true, failed(run));
    assert.deepEqual(serverSteps(run), ["replace", "replace"]);
    const after = (await servers()).map((s) => s.id);
    assert.equal(after.length, 2);
    assert.ok(
      after.every((id) => !before.includes(id)),
      "both servers are new",
    );
    // The name is explicit, so each old server is deleted before its replacement is created: the
    // two replacements run in parallel, but no create ever gets ahead of the deletes.
    const order = requests.slice(from).filter((r) => /^(POST \/servers$|DELETE \/servers\/\d+)/.test(r));
    let deleted = 0;
    for (const request of order) {
      if (request.startsWith("DELETE")) deleted++;
      else assert.ok(deleted > order.slice(0, order.indexOf(request)).filter((r) => r.startsWith("POST")).length, order.join(", "));
    }
    assert.equal(deleted, 2, order.join(", "));
  });

  it("shows on refresh a firewall removed from a server by hand, and the next up applies it again", async function () {
    const [server] = await servers();
    const [firewall] = (await api("/firewalls?name=t1-nodes")).firewalls;
    const removed = await fetch(`${endpoint}/firewalls/${firewall.id}/actions/remove_from_resources`, {
      method: "POST",
      headers: { Authorization: `Bearer ${TOKEN}`, "Content-Type": "application/json" },
      body: JSON.stringify({ remove_from: [{ type: "server", server: { id: server.id } }] }),
    });
    assert.equal(removed.status, 201);
    await new Promise((resolve) => setTimeout(resolve, 200)); // the fake's action
    const detached = (await api(`/servers/${server.id}`)).server;
    assert.deepEqual(detached.public_net.firewalls, [], "detached outside Pulumi");
    const refresh = await engine.refresh(stack(3, 2));
    assert.ok(
      refresh.steps.some((s) => s.type === SERVER && s.op === "update" && s.keys.includes("firewallIds")),
      JSON.stringify(refresh.steps.map((s) => [s.op, s.name, s.keys])),
    );
    const run = await engine.up(stack(3, 2));
    assert.equal(run.succeeded, true, failed(run));
    assert.deepEqual(
      serverSteps(run).filter((op) => op !== "same"),
      ["update"],
      "only the detached server changes",
    );
    const repaired = (await api(`/servers/${server.id}`)).server;
    assert.deepEqual(
      repaired.public_net.firewalls.map((f: Json) => f.id),
      [firewall.id],
      "the firewall is applied again",
    );
  });

  it("notices on refresh a server deleted outside Pulumi, and deletes everything on scale to zero", async function () {
    const [victim] = await servers();
    const response = await fetch(`${endpoint}/servers/${victim.id}`, { method: "DELETE", headers: { Authorization: `Bearer ${TOKEN}` } });
    assert.equal(response.status, 200);
    const refresh = await engine.refresh(stack(3, 2));
    assert.ok(
      refresh.steps.some((s) => s.type === SERVER && s.op === "delete"),
      JSON.stringify(refresh.steps.map((s) => [s.op, s.name])),
    );
    const down = await engine.up(stack(3, 0));
    assert.equal(down.succeeded, true, failed(down));
    assert.equal((await servers()).length, 0);
  });

  it("spoke Hetzner's published API in every exchange (requests and answers validated against its OpenAPI document)", function () {
    assert.ok(exchanges.length > 50, `${exchanges.length} exchanges`);
    assert.deepEqual(exchanges.flatMap(hcloudOpenApiViolations), []);
  });
});

describe("the hcloud provider plugin resolves a server's image as terraform-provider-hcloud does", function () {
  this.timeout(300_000);
  let dir: string;

  before(function () {
    skipUnlessAvailable(this, missingTools("pulumi", "pulumi-resource-hcloud"));
    dir = mkdtempSync(join(tmpdir(), "nodefleet-hcloud-image-"));
  });

  after(function () {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("looks the image up by name for the server type's architecture, so an arm (cax) server boots the arm image", async function () {
    const fake = buildFakeHcloud({ token: TOKEN, stateFile: join(dir, "hcloud.json"), actionMs: 50 });
    const requests: string[] = [];
    fake.app.addHook("onRequest", async (request) => void requests.push(`${request.method} ${request.url}`));
    const endpoint = await fake.app.listen({ port: 0, host: "127.0.0.1" });
    try {
      const engine = new AutomationEngine({
        dataDir: join(dir, "data"),
        env: { ...process.env, PULUMI_CONFIG_PASSPHRASE: "hcloud-image", HCLOUD_TOKEN: TOKEN },
        logger: silent,
      });
      const run = await engine.up(resourcesStack("arm", endpoint, { pollInterval: "50ms" }, 1, 1, { serverType: "cax11" }));
      assert.equal(run.succeeded, true, JSON.stringify(run.steps.filter((s) => s.error)));
      const [server] = fake.state.servers;
      const listed = await fetch(`${endpoint}/servers/${server!.id}`, { headers: { Authorization: `Bearer ${TOKEN}` } });
      const { server: created } = (await listed.json()) as Json;
      assert.deepEqual([created.server_type.name, created.image.name, created.image.architecture], ["cax11", "ubuntu-24.04", "arm"]);
      // Upstream's sequence before the create: the type (for its architecture), the image for it, the placement group.
      const lookups = requests
        .filter((r) => /^GET \/(server_types|images|placement_groups\/\d+)\b/.test(r))
        .map((r) => {
          const url = new URL(r.split(" ")[1]!, "http://fake");
          const query = ["name", "architecture", "include_deprecated"].filter((k) => url.searchParams.has(k));
          return `${url.pathname.replace(/\d+$/, "{id}")} ${query.map((k) => `${k}=${url.searchParams.get(k)}`).join(" ")}`.trim();
        });
      assert.deepEqual(lookups, [
        "/server_types name=cax11",
        "/images name=ubuntu-24.04 architecture=arm include_deprecated=true",
        "/placement_groups/{id}",
      ]);
    } finally {
      await fake.app.close();
    }
  });
});

describe("the hcloud provider plugin polls a running action as terraform-provider-hcloud does", function () {
  this.timeout(300_000);
  /** Every action the fake starts runs this long: long enough to tell the poll schedules apart. */
  const ACTION_MS = 2000;
  let dir: string;
  let engine: AutomationEngine;

  before(function () {
    skipUnlessAvailable(this, missingTools("pulumi", "pulumi-resource-hcloud"));
    dir = mkdtempSync(join(tmpdir(), "nodefleet-hcloud-poll-"));
    engine = new AutomationEngine({
      dataDir: join(dir, "data"),
      env: { ...process.env, PULUMI_CONFIG_PASSPHRASE: "hcloud-poll", HCLOUD_TOKEN: TOKEN },
      logger: silent,
    });
  });

  after(function () {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** Brings one of each resource up against a fresh fake; the fake's action polls per action it started, and the run. */
  async function pollsPerAction(name: string, poll: Record<string, string>): Promise<{ polls: number; run: RunResult }> {
    const fake = buildFakeHcloud({ token: TOKEN, stateFile: join(dir, `${name}.json`), actionMs: ACTION_MS });
    const endpoint = await fake.app.listen({ port: 0, host: "127.0.0.1" });
    try {
      const run = await engine.up(resourcesStack(name, endpoint, poll, 1, 1));
      const started = fake.state.actions.length;
      return { polls: started === 0 ? 0 : (fake.requestCounts.get("GET /actions") ?? 0) / started, run };
    } finally {
      await fake.app.close();
    }
  }

  it("doubles the wait from 500ms by default, from pollInterval when set, and repeats pollInterval with pollFunction constant", async function () {
    const constant = await pollsPerAction("constant", { pollInterval: "100ms", pollFunction: "constant" });
    const exponential = await pollsPerAction("exponential", { pollInterval: "100ms" });
    const byDefault = await pollsPerAction("default", {});
    for (const { run } of [constant, exponential, byDefault])
      assert.equal(run.succeeded, true, JSON.stringify(run.steps.filter((s) => s.error)));
    // 2 s of action: every 100ms is about 20 polls (fewer when polls answer slowly); 100, 200, 400,
    // 800ms about 5; 500ms, 1s, 2s about 3.
    assert.ok(constant.polls >= 12, `constant: ${constant.polls} polls per action`);
    assert.ok(exponential.polls >= 3 && exponential.polls <= 6, `exponential from 100ms: ${exponential.polls} polls per action`);
    assert.ok(byDefault.polls >= 1 && byDefault.polls <= 3, `default: ${byDefault.polls} polls per action`);
  });

  it("refuses a poll function it does not know, naming the setting", async function () {
    // The provider's configure fails, so the CLI's up fails as a whole (the engine rejects with its output).
    await assert.rejects(
      pollsPerAction("unknown", { pollFunction: "fibonacci" }),
      /pollFunction: must be "constant" or "exponential", not "fibonacci"/,
    );
  });
});
