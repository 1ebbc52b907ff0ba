/**
 * A VLAN tag Scaleway reports late, on the real engine: the fake Scaleway API holds every
 * attachment's tag back after it is `attached` (NODEFLEET_SIM_SCW_VLAN_DELAY_MS), so the Scaleway
 * plugin double records VLAN 0 for each server, as upstream does. Held back 15 s, one plain
 * `pulumi up` waits for the tags (read live, bounded) and brings both Nodes Ready. Held back 40 s,
 * a first `pulumi up` whose VLAN wait is 0 (NODEFLEET_SCW_VLAN_WAIT_SECONDS) fails, naming the
 * server and telling the user to run `pulumi up` again; the next plain `pulumi up` (no --refresh,
 * the default wait) reads the tag live, joins both members and brings their Nodes Ready, and a
 * preview after it, reading the tag live too, proposes nothing for the pool. No server is ordered
 * twice.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type LocalCloud, startLocalCloud } from "../../../automation/local/localCloud";
import { LOCAL_ELASTIC_METAL_POOL, runPulumi } from "../../../automation/local/localStack";
import { VLAN_WAIT_ENV } from "../../../components/scaleway/elasticMetalVlan";
import { localStackProject } from "../../support/localStackProject";
import { UP, isReady, poolNodes } from "../../support/localFleet";
import { elasticMetalPoolServers, skipUnlessElasticMetalMachines } from "../../support/localElasticMetal";
import { until } from "../../support/until";

const quiet = { info() {}, warn() {} };
const ZONE = "fr-par-2";

type Json = Record<string, any>;

/** A local cloud with the Elastic Metal pool whose fake holds VLAN tags back `vlanDelayMs`, set up and torn down by the calling suite. */
function lateVlanCloud(vlanDelayMs: number) {
  const t = {
    dir: "",
    project: "",
    cloud: undefined as unknown as LocalCloud,
    logged: [] as string[],
    metalServers: () => elasticMetalPoolServers(t.cloud, ZONE),
    /** Each state server's recorded VLAN tags. */
    async recordedVlans(): Promise<number[][]> {
      const state = JSON.parse(await runPulumi(["stack", "export", "--stack", "local"], t.project, t.cloud.env)) as Json;
      return (state.deployment.resources as Json[])
        .filter((r) => r.type === "scaleway:elasticmetal/server:Server")
        .map((r) => ((r.outputs?.privateNetworks ?? []) as Json[]).map((pn) => pn.vlan as number));
    },
    /** Both members' Nodes Ready, each having rendered its VLAN interface, and two servers in all. */
    async assertBothJoined(): Promise<void> {
      await until(
        `2 Ready ${LOCAL_ELASTIC_METAL_POOL} Nodes`,
        async () => ((await poolNodes(t.cloud, LOCAL_ELASTIC_METAL_POOL)).filter(isReady).length === 2 ? true : undefined),
        120_000,
        () => t.logged.join("\n"),
      );
      const servers = await t.metalServers();
      assert.equal(servers.length, 2, "no server ordered twice");
      for (const server of servers) {
        const records = t.cloud.scaleway
          .machines!.machine(server.id)!
          .records()
          .map((r) => `${r.tool} ${r.verb}`);
        assert.ok(records.includes("netplan generate"), `the VLAN interface was rendered in ${server.name}: ${records.join("; ")}`);
      }
    },
  };
  before(async function () {
    skipUnlessElasticMetalMachines(this);
    t.dir = mkdtempSync(join(tmpdir(), "nodefleet-local-late-vlan-"));
    t.project = localStackProject(join(t.dir, "project"));
    t.cloud = await startLocalCloud({
      dataDir: join(t.dir, "data"),
      hcloudPort: 0,
      agentIntervalMs: 300,
      logger: { ...quiet, warn: (_fields: unknown, message: string) => t.logged.push(message) },
      projectDir: t.project,
      elasticMetalPool: true,
      env: { ...process.env, NODEFLEET_SIM_SCW_VLAN_DELAY_MS: String(vlanDelayMs) },
    });
  });
  after(async function () {
    await t.cloud?.stop();
    if (t.dir) rmSync(t.dir, { recursive: true, force: true });
  });
  return t;
}

describe("the local stack's Elastic Metal pool when Scaleway reports the VLAN tag 15 s late (real engine)", function () {
  this.timeout(900_000);
  const t = lateVlanCloud(15_000);

  it("waits for the tags in one plain pulumi up and brings both Nodes Ready", async function () {
    const started = Date.now();
    await runPulumi(UP, t.project, t.cloud.env);
    const upSeconds = (Date.now() - started) / 1000;
    await t.assertBothJoined();
    const vlans = await t.recordedVlans();
    process.stdout.write(`      (pulumi up done after ${upSeconds.toFixed(1)} s; the state's VLAN tags: ${JSON.stringify(vlans)})\n`);
    assert.deepEqual(vlans, [[0], [0]], "the provider recorded 0; the joins used the tags read live");
  });
});

describe("the local stack's Elastic Metal pool when Scaleway reports the VLAN tag 40 s late (real engine)", function () {
  this.timeout(900_000);
  const t = lateVlanCloud(40_000);

  it("fails a run that may not wait, naming the server and the next step, and keeps both servers", async function () {
    const started = Date.now();
    const failure = await runPulumi(UP, t.project, { ...t.cloud.env, [VLAN_WAIT_ENV]: "0" }).then(
      () => assert.fail("the run succeeded although no VLAN tag was reported"),
      (error: Error) => error.message,
    );
    assert.match(failure, /node local-local-metal-\d+: server fr-par-2\/[0-9a-f-]{36} still reports no VLAN tag .* after 0 s/);
    assert.match(failure, /run `pulumi up` again, which reads the tag live and joins the node \(no --refresh needed\)/);
    const servers = await t.metalServers();
    assert.equal(servers.length, 2, "both servers ordered once");
    const vlans = await t.recordedVlans();
    process.stdout.write(
      `      (first run failed after ${((Date.now() - started) / 1000).toFixed(1)} s; the state's VLAN tags: ${JSON.stringify(vlans)})\n`,
    );
    assert.ok(
      vlans.some((tags) => tags.includes(0)),
      "the provider recorded a tag not reported yet as 0",
    );
  });

  it("joins both members on the next plain pulumi up (no --refresh), ordering no server again", async function () {
    const started = Date.now();
    await runPulumi(UP, t.project, t.cloud.env);
    const upSeconds = (Date.now() - started) / 1000;
    await t.assertBothJoined();
    const vlans = await t.recordedVlans();
    process.stdout.write(`      (second run done after ${upSeconds.toFixed(1)} s; the state's VLAN tags now: ${JSON.stringify(vlans)})\n`);
    assert.deepEqual(vlans, [[0], [0]], "no refresh ran: the state still holds 0, the join used the tag read live");
    // A preview reads the tag live too: the joins it would render are the ones that ran, so it
    // proposes nothing for the pool (the Hetzner pool's token Secrets go on this next run, as always).
    const preview = await runPulumi(["preview", "--stack", "local", "--diff", "--non-interactive"], t.project, t.cloud.env);
    assert.doesNotMatch(preview, /error:/);
    assert.doesNotMatch(preview, /\[urn=[^\]]*ElasticMetalNodePool[^\]]*\]/, "no change proposed for the Elastic Metal pool");
  });
});
