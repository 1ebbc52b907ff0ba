/**
 * The local stack's Elastic Metal pool on the real engine: `nodefleet local up`'s stack (with the
 * pool, as root) and `pulumi up --stack local` (the real CLI, the Scaleway and command plugin
 * doubles) order two servers from the fake Scaleway API on a private network, each installed
 * server becomes a machine, the pool's k0s self-join runs in it over SSH (VLAN through netplan,
 * host firewall, k0s) and its Node registers Ready with the private IPv4 label, the pool's taint and
 * its providerID, next to the Hetzner Cloud pool's three. A second `pulumi up` changes nothing.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse } from "yaml";
import type { LocalCloud } from "../../../automation/local/localCloud";
import { LOCAL_ELASTIC_METAL_POOL, runPulumi } from "../../../automation/local/localStack";
import { PRIVATE_IPV4_LABEL } from "../../../components/scaleway/elasticMetalPlan";
import { localStackProject } from "../../support/localStackProject";
import { UP, isReady, poolNodes } from "../../support/localFleet";
import {
  metalServers as poolServers,
  readyMetalNodes,
  scalewayApi,
  skipUnlessMetalMachinesRun,
  startLocalMetalCloud,
} from "../../support/localElasticMetal";

type Json = Record<string, any>;

describe("the local stack's Elastic Metal pool on the real engine (machines over SSH, real control plane)", function () {
  this.timeout(600_000);
  let dir: string;
  let project: string;
  let cloud: LocalCloud;
  const logged: string[] = [];

  const scw = (path: string) => scalewayApi(cloud, path);
  const metalServers = () => poolServers(cloud);

  before(async function () {
    skipUnlessMetalMachinesRun(this);
    dir = mkdtempSync(join(tmpdir(), "nodefleet-local-metal-"));
    project = localStackProject(join(dir, "project"));
    cloud = await startLocalMetalCloud(dir, project, logged);
  });

  after(async function () {
    await cloud?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("writes the pool into the local stack: two members on a private network, the local key, a taint and labels", function () {
    const config = (parse(readFileSync(cloud.stackFile!, "utf8")) as { config: Record<string, Json[]> }).config;
    const pool = config["nodefleet:pools"]!.find((p) => p.name === LOCAL_ELASTIC_METAL_POOL)!;
    assert.equal(pool.provider, "scaleway-elastic-metal");
    assert.equal(pool.replicas, 2);
    assert.equal(pool.privateNetwork.subnet, "172.16.0.0/22");
    assert.equal(pool.sshKeyIds.length, 1);
    assert.ok(cloud.env.NODEFLEET_SSH_PRIVATE_KEY?.includes("OPENSSH PRIVATE KEY"), "local env gives the pool's private key");
  });

  it("brings the pool's two Nodes Ready over SSH with their private IPv4 label, taint and providerID", async function () {
    const started = Date.now();
    // When each pool's Nodes are all Ready, seconds after the start: what the Elastic Metal pool adds to the run.
    const readyAt: Record<string, number> = {};
    let polling = true;
    const poll = (async () => {
      while (polling) {
        for (const [pool, count] of [["local-general", 3] as const, [LOCAL_ELASTIC_METAL_POOL, 2] as const])
          if (readyAt[pool] === undefined && (await poolNodes(cloud, pool)).filter(isReady).length === count)
            readyAt[pool] = (Date.now() - started) / 1000;
        await new Promise((r) => setTimeout(r, 250));
      }
    })();
    await runPulumi(UP, project, cloud.env);
    const upSeconds = (Date.now() - started) / 1000;
    const nodes = await readyMetalNodes(cloud, 2, logged);
    polling = false;
    await poll;
    const servers = await metalServers();
    assert.equal(servers.length, 2, "two servers ordered, never more");
    const [network] = (await scw(`/vpc/v2/regions/fr-par/private-networks?name=local-metal`)).private_networks as Json[];
    assert.ok(network, "the pool's private network");
    for (const node of nodes) {
      assert.match(node.spec.providerID ?? "", /^nodefleet:\/\/\/local\/[a-z0-9-]+$/);
      assert.ok(
        node.spec.taints?.some((t) => t.key === "nodefleet.io/bare-metal" && t.value === "true" && t.effect === "NoSchedule"),
        JSON.stringify(node.spec.taints),
      );
      const privateIpv4 = node.metadata.labels?.[PRIVATE_IPV4_LABEL] ?? "";
      assert.match(privateIpv4, /^172\.16\.[0-3]\.\d+$/, "the private IPv4 label, from the IPAM address");
      const server = servers.find((s) => s.name === node.metadata.name);
      assert.ok(server, `a server named ${node.metadata.name}`);
      const machine = cloud.scaleway.machines!.machine(server.id)!;
      const records = machine.records().map((r) => `${r.tool} ${r.verb}`);
      for (const expected of ["netplan generate", "netplan apply", "k0s install", "k0s start"])
        assert.ok(records.includes(expected), `${expected} ran in ${node.metadata.name}: ${records.join("; ")}`);
    }
    // The Hetzner Cloud pool next to it.
    assert.equal((await poolNodes(cloud, "local-general")).filter(isReady).length, 3);
    // Where the time goes: servers ordered, Nodes registered (seconds after the start).
    const after = (iso: string) => ((Date.parse(iso) - started) / 1000).toFixed(1);
    const ordered = servers.map((s) => after(s.created_at as string)).join(", ");
    const registered = nodes.map((n) => after((n.metadata as unknown as { creationTimestamp: string }).creationTimestamp)).join(", ");
    process.stdout.write(`      (Elastic Metal servers ordered after ${ordered} s, their Nodes registered after ${registered} s)\n`);
    process.stdout.write(
      `      (Hetzner Cloud Nodes Ready after ${readyAt["local-general"]?.toFixed(1)} s, Elastic Metal ones after ${readyAt[LOCAL_ELASTIC_METAL_POOL]?.toFixed(1)} s, pulumi up done after ${upSeconds.toFixed(1)} s)\n`,
    );
  });

  it("has nothing to change on the next run", async function () {
    await runPulumi(UP, project, cloud.env);
    const out = await runPulumi(["preview", "--stack", "local", "--diff", "--non-interactive", "--expect-no-changes"], project, cloud.env);
    assert.doesNotMatch(out, /error:/);
    assert.equal((await metalServers()).length, 2);
  });
});
