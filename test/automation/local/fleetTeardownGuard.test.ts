/**
 * A teardown of the fleet stack while the scaling API's servers still use its firewall and network
 * (issue #34, item 7). Hetzner's provider removes a firewall from every server before deleting it, so
 * without the guard those servers would run unfiltered. Driven by the real engine with the toolchain's
 * hcloud and command plugins against the fake Hetzner API; what is asserted is read from the API.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AutomationEngine } from "../../../automation/engine/automationEngine";
import type { StackDefinition } from "../../../automation/engine/stackEngine";
import { type FakeHcloud, buildFakeHcloud } from "../../../automation/local/fakeHcloud/fakeHcloudApi";
import { missingTools, skipUnlessAvailable } from "../../support/toolchainRequirement";

const PROGRAM = join(__dirname, "..", "..", "support", "apiMembersGuardProgram.js");
const TOKEN = "g".repeat(64);
const silent = { info() {}, warn() {}, error() {} };

type Json = Record<string, any>;

describe("the fleet stack's teardown while the scaling API's servers use its firewall", function () {
  this.timeout(300_000);
  let dir: string;
  let fake: FakeHcloud;
  let endpoint: string;
  let engine: AutomationEngine;

  const api = async (method: string, path: string, body?: Json): Promise<{ status: number; body: Json }> => {
    const response = await fetch(`${endpoint}${path}`, {
      method,
      headers: { Authorization: `Bearer ${TOKEN}`, ...(body ? { "Content-Type": "application/json" } : {}) },
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
    const text = await response.text();
    return { status: response.status, body: text ? (JSON.parse(text) as Json) : {} };
  };
  const stack = (teardown: boolean): StackDefinition => ({
    stackName: "guard",
    program: { module: PROGRAM },
    config: {
      "hcloud:endpoint": { value: endpoint },
      "hcloud:pollInterval": { value: "50ms" },
      "guardtest:teardown": { value: String(teardown) },
    },
  });
  const firewall = async (): Promise<Json | undefined> => (await api("GET", "/firewalls?name=g1-nodes")).body.firewalls[0];
  const network = async (): Promise<Json | undefined> => (await api("GET", "/networks?name=g1-network")).body.networks[0];

  before(async function () {
    skipUnlessAvailable(this, missingTools("pulumi", "pulumi-resource-hcloud", "pulumi-resource-command"));
    dir = mkdtempSync(join(tmpdir(), "nodefleet-teardown-guard-"));
    fake = buildFakeHcloud({ token: TOKEN, stateFile: join(dir, "hcloud.json"), actionMs: 50 });
    endpoint = await fake.app.listen({ port: 0, host: "127.0.0.1" });
    engine = new AutomationEngine({
      dataDir: join(dir, "data"),
      env: { ...process.env, PULUMI_CONFIG_PASSPHRASE: "teardown-guard", HCLOUD_TOKEN: TOKEN },
      logger: silent,
    });
  });

  after(async function () {
    await fake?.app.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("refuses while an API server uses the firewall, naming it, and leaves its firewall and network on", async function () {
    const up = await engine.up(stack(false));
    assert.equal(up.succeeded, true, JSON.stringify(up.steps.filter((s) => s.error)));
    const fw = (await firewall())!;
    const net = (await network())!;
    const created = await api("POST", "/servers", {
      name: "g1-burst-7",
      server_type: "cpx21",
      image: "ubuntu-24.04",
      location: "fsn1",
      labels: { "nodefleet.io/cluster": "g1", "nodefleet.io/pool": "burst" },
      firewalls: [{ firewall: fw.id }],
      networks: [net.id],
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const serverId = created.body.server.id as number;

    const refused = await engine.up(stack(true));
    assert.equal(refused.succeeded, false, "the teardown went ahead with an API server on the firewall");
    assert.match(JSON.stringify(refused), /g1-burst-7/, "the failure names the API's server");
    const server = (await api("GET", `/servers/${serverId}`)).body.server;
    assert.ok(
      server.public_net.firewalls.some((f: Json) => f.id === fw.id),
      "the API's server kept its firewall",
    );
    assert.ok(
      server.private_net.some((p: Json) => p.network === net.id),
      "the API's server kept its network",
    );
    assert.ok(await firewall(), "the firewall is still there");

    assert.equal((await api("DELETE", `/servers/${serverId}`)).status, 200);
    const teardown = await engine.up(stack(true));
    assert.equal(teardown.succeeded, true, JSON.stringify(teardown.steps.filter((s) => s.error)));
    assert.equal(await firewall(), undefined, "the firewall is deleted once no API server uses it");
    assert.equal(await network(), undefined, "so is the network");
  });
});
