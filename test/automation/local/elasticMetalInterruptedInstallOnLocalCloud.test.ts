/**
 * Issue 37 part 5, "the kill during install", on the real engine: `pulumi up --stack local` is
 * SIGKILLed while the fake Scaleway API installs the Elastic Metal pool's two servers (install knob
 * 25 s). The killed CLI leaves its stack lock and two pending creates; Scaleway takes a second
 * server of a name, so a plain `pulumi cancel` and `pulumi up` would order two more boxes (the CLI
 * only warns about pending creates). `nodefleet recover --stack local`, the documented way
 * (docs/operations.md), removes the lock and adopts both servers by name and tags; the next
 * `pulumi up` attaches what the killed create had not (option, private network) and joins them:
 * two servers in the fake, each ordered and installed once, each joined once, two Nodes Ready.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileBackendDir, pendingOperations, stackLocks } from "../../../automation/engine/fileBackendState";
import { type LocalCloud, startLocalCloud } from "../../../automation/local/localCloud";
import { LOCAL_ELASTIC_METAL_POOL, runPulumi } from "../../../automation/local/localStack";
import { localStackProject } from "../../support/localStackProject";
import { UP, isReady, poolNodes } from "../../support/localFleet";
import { KillableUp } from "../../support/killableUp";
import { runNodefleet } from "../../support/nodefleetCli";
import { elasticMetalPoolServers, scalewayGet, skipUnlessElasticMetalMachines } from "../../support/localElasticMetal";
import { until } from "../../support/until";

const quiet = { info() {}, warn() {} };
const ZONE = "fr-par-2";
const INSTALL_MS = 25_000;
const SERVER = "scaleway:elasticmetal/server:Server";
const HCLOUD_SERVER = "hcloud:index/server:Server";

type Json = Record<string, any>;

describe("an Elastic Metal install interrupted by a SIGKILL of pulumi up, on the real engine", function () {
  this.timeout(900_000);
  let dir: string;
  let project: string;
  let cloud: LocalCloud;
  /** Every Elastic Metal order, install and reboot the fake answered, as `METHOD path`. */
  const calls: string[] = [];
  /** The user's `pulumi up` the test kills. */
  let up: KillableUp | undefined;

  const scw = (path: string) => scalewayGet(cloud, path);
  const metalServers = () => elasticMetalPoolServers(cloud, ZONE);

  before(async function () {
    skipUnlessElasticMetalMachines(this);
    dir = mkdtempSync(join(tmpdir(), "nodefleet-metal-kill-"));
    project = localStackProject(join(dir, "project"));
    cloud = await startLocalCloud({
      dataDir: join(dir, "data"),
      hcloudPort: 0,
      agentIntervalMs: 300,
      logger: quiet,
      projectDir: project,
      elasticMetalPool: true,
      env: { ...process.env, NODEFLEET_SIM_SCW_INSTALL_MS: String(INSTALL_MS) },
      onFakeScaleway: (fake) =>
        fake.app.addHook("onRequest", async (request) => {
          const path = request.url.split("?")[0]!;
          if (request.method === "POST" && /^\/baremetal\/v1\/zones\/[^/]+\/servers(\/[^/]+\/(install|reboot))?$/.test(path))
            calls.push(`${request.method} ${path}`);
        }),
    });
  });

  after(async function () {
    up?.stop();
    await cloud?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("adopts both servers after `nodefleet recover`, and the next up joins them: two boxes, each installed and joined once", async function () {
    const started = Date.now();
    const seconds = () => ((Date.now() - started) / 1000).toFixed(1);
    const run = KillableUp.start(project, cloud.env);
    up = run;

    const backendDir = fileBackendDir(cloud.env.PULUMI_BACKEND_URL!)!;
    // Killed while only servers are being created (the rest of the run is done): the two Elastic
    // Metal ones installing, maybe Hetzner's booting. Other pending creates (a subnet, say) are
    // cleared by recovery and created again, which a kill during a real 30-60 minute install never meets.
    const onlyServersPending = () => {
      try {
        return pendingOperations(backendDir, "nodefleet", "local").every((op) => [SERVER, HCLOUD_SERVER].includes(op.resource.type));
      } catch {
        return false; // the CLI is writing the checkpoint
      }
    };
    const installing = await until(
      "both Elastic Metal servers installing, and only servers pending",
      async () => {
        const servers = await metalServers();
        return servers.length === 2 && servers.every((s) => s.install?.status === "installing") && onlyServersPending()
          ? servers
          : undefined;
      },
      300_000,
      () => run.output.slice(-3000),
      250,
    );
    const installingAt = seconds();
    await run.kill();

    const state = JSON.parse(await runPulumi(["stack", "export", "--stack", "local"], project, cloud.env)) as Json;
    const pending = ((state.deployment.pending_operations ?? []) as Json[]).filter(
      (op) => op.type === "creating" && op.resource.type === SERVER,
    );
    assert.equal(pending.length, 2, `the kill left both server creates pending: ${JSON.stringify(state.deployment.pending_operations)}`);
    assert.equal(stackLocks(backendDir, "nodefleet", "local").length, 1, "the killed CLI's lock is left: `pulumi up` refuses to start");

    const recovered = await runNodefleet(["recover", "--stack", "local", "--data-dir", join(dir, "recover"), "--json"], cloud.env, {
      cwd: project,
      timeoutMs: 300_000,
    });
    assert.equal(recovered.code, 0, recovered.stderr.slice(-3000));
    const report = JSON.parse(recovered.stdout) as { removedStaleLocks: number; actions: Json[] };
    const recoveredAt = seconds();
    assert.ok(report.removedStaleLocks >= 1, "the killed CLI's lock is removed");
    const adopted = report.actions.filter((a) => a.action === "import" && a.type === SERVER);
    assert.deepEqual(
      adopted.map((a) => a.server.id).sort(),
      installing.map((s) => `${ZONE}/${s.id}`).sort(),
      `both servers adopted by their zoned ids: ${recovered.stdout}`,
    );
    // The CLI's plugins, left running by the kill, stop here (they would hold nothing the next run needs).
    run.stopLeftovers();

    await runPulumi(UP, project, cloud.env).catch((error: Error) => {
      throw new Error(`${error.message}\nrecover said: ${recovered.stdout}`);
    });
    const upAt = seconds();
    const nodes = await until(
      `2 Ready ${LOCAL_ELASTIC_METAL_POOL} Nodes`,
      async () => {
        const ready = (await poolNodes(cloud, LOCAL_ELASTIC_METAL_POOL)).filter(isReady);
        return ready.length === 2 ? ready : undefined;
      },
      120_000,
    );
    const servers = await metalServers();
    assert.deepEqual(servers.map((s) => s.id).sort(), installing.map((s) => s.id).sort(), "the same two servers, never a second order");
    const orders = calls.filter((c) => /\/servers$/.test(c));
    const reinstalls = calls.filter((c) => /\/(install|reboot)$/.test(c));
    assert.equal(orders.length, 2, `two orders: ${calls.join("; ")}`);
    assert.deepEqual(reinstalls, [], "no install or reboot after the order's own install");
    for (const server of servers) {
      assert.equal(server.install?.status, "completed");
      assert.ok(
        nodes.some((n) => n.metadata.name === server.name),
        `a Ready Node for ${server.name}`,
      );
      const records = cloud.scaleway
        .machines!.machine(server.id)!
        .records()
        .map((r) => `${r.tool} ${r.verb}`);
      assert.equal(records.filter((r) => r === "k0s install").length, 1, `joined once: ${records.join("; ")}`);
    }
    const attached = (await scw(`/baremetal/v3/zones/${ZONE}/server-private-networks`)).server_private_networks as Json[];
    for (const server of servers)
      assert.equal(attached.filter((a) => a.server_id === server.id).length, 1, `${server.name} attached to the private network once`);
    process.stdout.write(
      `      (servers installing after ${installingAt} s, killed; recovered after ${recoveredAt} s; up done after ${upAt} s; install knob ${INSTALL_MS / 1000} s)\n`,
    );
  });
});
