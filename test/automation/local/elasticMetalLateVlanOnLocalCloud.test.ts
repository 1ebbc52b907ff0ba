/**
 * A VLAN tag Scaleway reports late, on the real engine: the fake Scaleway API holds every
 * attachment's tag back for 40 s after it is `attached` (NODEFLEET_SIM_SCW_VLAN_DELAY_MS), so the
 * Scaleway plugin double records VLAN 0 for each server, as upstream does. A first `pulumi up` whose
 * VLAN wait is 0 (NODEFLEET_SCW_VLAN_WAIT_SECONDS) fails, naming the server and telling the user to
 * run `pulumi up` again; the next plain `pulumi up` (no --refresh, the default wait) reads the tag
 * live, joins both members and brings their Nodes Ready, and a preview after it, reading the tag
 * live too, has nothing to change. No server is ordered twice.
 */
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type LocalCloud, startLocalCloud } from "../../../automation/local/localCloud";
import { LOCAL_ELASTIC_METAL_POOL, runPulumi } from "../../../automation/local/localStack";
import { SSHD } from "../../../automation/local/machines/openSshServer";
import { VLAN_WAIT_ENV } from "../../../components/scaleway/elasticMetalVlan";
import { localStackProject } from "../../support/localStackProject";
import { UP, isReady, poolNodes } from "../../support/localFleet";
import { LOCAL_CLOUD_TOOLS, missingTools, skipUnlessAvailable } from "../../support/toolchainRequirement";
import { until } from "../../support/until";

const quiet = { info() {}, warn() {} };
const ZONE = "fr-par-2";
const VLAN_DELAY_MS = 40_000;

type Json = Record<string, any>;

describe("the local stack's Elastic Metal pool when Scaleway reports the VLAN tag late (real engine)", function () {
  this.timeout(900_000);
  let dir: string;
  let project: string;
  let cloud: LocalCloud;
  const logged: string[] = [];

  const scw = async (path: string): Promise<Json> => {
    const response = await fetch(`${cloud.env.SCW_API_URL}${path}`, { headers: { "X-Auth-Token": cloud.env.SCW_SECRET_KEY! } });
    return (await response.json()) as Json;
  };
  const metalServers = async (): Promise<Json[]> =>
    ((await scw(`/baremetal/v1/zones/${ZONE}/servers?per_page=50`)).servers as Json[]).filter((s) =>
      (s.tags as string[]).includes(`nodefleet.io/pool=${LOCAL_ELASTIC_METAL_POOL}`),
    );
  /** Each state server's recorded VLAN tags. */
  const recordedVlans = async (): Promise<number[][]> => {
    const state = JSON.parse(await runPulumi(["stack", "export", "--stack", "local"], project, cloud.env)) as Json;
    return (state.deployment.resources as Json[])
      .filter((r) => r.type === "scaleway:elasticmetal/server:Server")
      .map((r) => ((r.outputs?.privateNetworks ?? []) as Json[]).map((pn) => pn.vlan as number));
  };

  before(async function () {
    const missing = [SSHD, "/usr/bin/ssh", "/usr/bin/unshare"].filter((tool) => !existsSync(tool));
    skipUnlessAvailable(
      this,
      missing.length ? `${missing.join(", ")} not installed (Debian: openssh-server, openssh-client, util-linux)` : undefined,
    );
    skipUnlessAvailable(this, process.getuid?.() === 0 ? undefined : "the machines' sandbox needs root (mount namespaces, port 22)");
    skipUnlessAvailable(this, missingTools(...LOCAL_CLOUD_TOOLS, "pulumi-resource-scaleway", "pulumi-resource-command"));
    dir = mkdtempSync(join(tmpdir(), "nodefleet-local-late-vlan-"));
    project = localStackProject(join(dir, "project"));
    cloud = await startLocalCloud({
      dataDir: join(dir, "data"),
      hcloudPort: 0,
      agentIntervalMs: 300,
      logger: { ...quiet, warn: (_fields: unknown, message: string) => logged.push(message) },
      projectDir: project,
      elasticMetalPool: true,
      env: { ...process.env, NODEFLEET_SIM_SCW_VLAN_DELAY_MS: String(VLAN_DELAY_MS) },
    });
  });

  after(async function () {
    await cloud?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("fails a run that may not wait, naming the server and the next step, and keeps both servers", async function () {
    const started = Date.now();
    const failure = await runPulumi(UP, project, { ...cloud.env, [VLAN_WAIT_ENV]: "0" }).then(
      () => assert.fail("the run succeeded although no VLAN tag was reported"),
      (error: Error) => error.message,
    );
    assert.match(failure, /node local-local-metal-\d+: server fr-par-2\/[0-9a-f-]{36} still reports no VLAN tag .* after 0 s/);
    assert.match(failure, /run `pulumi up` again, which reads the tag live and joins the node \(no --refresh needed\)/);
    const servers = await metalServers();
    assert.equal(servers.length, 2, "both servers ordered once");
    const vlans = await recordedVlans();
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
    await runPulumi(UP, project, cloud.env);
    const upSeconds = (Date.now() - started) / 1000;
    const nodes = await until(
      `2 Ready ${LOCAL_ELASTIC_METAL_POOL} Nodes`,
      async () => {
        const ready = (await poolNodes(cloud, LOCAL_ELASTIC_METAL_POOL)).filter(isReady);
        return ready.length === 2 ? ready : undefined;
      },
      120_000,
      () => logged.join("\n"),
    );
    const servers = await metalServers();
    assert.equal(servers.length, 2, "no server ordered twice");
    for (const node of nodes) {
      const server = servers.find((s) => s.name === node.metadata.name);
      assert.ok(server, `a server named ${node.metadata.name}`);
      const records = cloud.scaleway
        .machines!.machine(server.id)!
        .records()
        .map((r) => `${r.tool} ${r.verb}`);
      assert.ok(records.includes("netplan generate"), `the VLAN interface was rendered in ${node.metadata.name}: ${records.join("; ")}`);
    }
    const vlans = await recordedVlans();
    process.stdout.write(`      (second run done after ${upSeconds.toFixed(1)} s; the state's VLAN tags now: ${JSON.stringify(vlans)})\n`);
    assert.deepEqual(vlans, [[0], [0]], "no refresh ran: the state still holds 0, the join used the tag read live");
    // A preview reads the tag live too: the joins it would render are the ones that ran, so it
    // proposes nothing for the pool (the Hetzner pool's token Secrets go on this next run, as always).
    const preview = await runPulumi(["preview", "--stack", "local", "--diff", "--non-interactive"], project, cloud.env);
    assert.doesNotMatch(preview, /error:/);
    assert.doesNotMatch(preview, /\[urn=[^\]]*ElasticMetalNodePool[^\]]*\]/, "no change proposed for the Elastic Metal pool");
  });
});
