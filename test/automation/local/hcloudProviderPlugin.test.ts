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
      assert.equal(server.status, "running", "powered on again after the resize");
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

  it("replaces a server whose user data changed: the new one first, then the old one deleted", async function () {
    const lift = await engine.up(stack(1, 2));
    assert.equal(lift.succeeded, true, failed(lift));
    const before = (await servers()).map((s) => s.id);
    const run = await engine.up(stack(3, 2));
    assert.equal(run.succeeded, true, failed(run));
    assert.deepEqual(serverSteps(run), ["replace", "replace"]);
    const after = (await servers()).map((s) => s.id);
    assert.equal(after.length, 2);
    assert.ok(
      after.every((id) => !before.includes(id)),
      "both servers are new",
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
