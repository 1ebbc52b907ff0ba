/**
 * The local stack's Elastic Metal pool through cloud-init, on a private network another fleet
 * shares by name, on the real engine (issue #37: "Cloud-init offers run the user data through the
 * same sandbox", "a private network shared by name with other fleets is used, not refused").
 *
 * The pool's `bootstrap: ssh` is taken out, so `auto` picks cloud-init for EM-A610R-NVME (an offer
 * Scaleway tags `cloud-init`); before the first `pulumi up --stack local`, a private network of the
 * pool's name and subnet but without its tags (another fleet's) is created through the fake
 * Scaleway API. The run creates the servers with the join as `cloud_init` user data, each machine
 * runs it at first boot (machineCloudInit.ts), the `-vlan` command delivers the VLAN id it waits
 * for, and the `-join` over SSH, after `cloud-init status --wait`, finds the node joined. The Nodes
 * are Ready with the private IPv4 label, the taint and the providerID; the servers are on the
 * shared network, no second one exists, and it is never changed or deleted, also not when the pool
 * is removed from the stack.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { LocalCloud } from "../../../automation/local/localCloud";
import { LOCAL_ELASTIC_METAL_POOL, runPulumi } from "../../../automation/local/localStack";
import { CLOUD_INIT_OUTPUT_LOG } from "../../../automation/local/machines/machineCloudInit";
import { SELF_JOIN_SCRIPT_PATH } from "../../../components/bootstrap/selfJoinScript";
import { PRIVATE_IPV4_LABEL } from "../../../components/scaleway/elasticMetalPlan";
import { localStackProject } from "../../support/localStackProject";
import { UP, editLocalPool, editLocalPools } from "../../support/localFleet";
import {
  METAL_ZONE,
  elasticMetalPoolServers,
  readyMetalNodes,
  scalewayApi,
  skipUnlessElasticMetalMachines,
  startLocalMetalCloud,
} from "../../support/localElasticMetal";

const REGION = "fr-par";
const NETWORK = "local-metal";
const SUBNET = "172.16.0.0/22";
/** Another fleet's tags: not the pool's cluster and pool tags. */
const OTHER_FLEET_TAGS = ["team=other", "nodefleet.io/cluster=another"];
const PN_WRITES = [
  "POST /vpc/v2/regions/{region}/private-networks",
  "PATCH /vpc/v2/regions/{region}/private-networks/{id}",
  "DELETE /vpc/v2/regions/{region}/private-networks/{id}",
];

type Json = Record<string, any>;

describe("the local stack's Elastic Metal pool through cloud-init, on another fleet's private network (real engine)", function () {
  this.timeout(600_000);
  let dir: string;
  let project: string;
  let cloud: LocalCloud;
  let shared: Json;
  const logged: string[] = [];

  const scw = (path: string, method = "GET", body?: unknown) => scalewayApi(cloud, path, method, body);
  const metalServers = () => elasticMetalPoolServers(cloud);
  const networksNamed = async (): Promise<Json[]> =>
    ((await scw(`/vpc/v2/regions/${REGION}/private-networks?name=${NETWORK}`)).private_networks as Json[]).filter(
      (n) => n.name === NETWORK,
    );
  /** Requests that would change a private network, by route (the test's own create is the one POST). */
  const networkWrites = () => Object.fromEntries(PN_WRITES.map((route) => [route, cloud.scaleway.requestCounts.get(route) ?? 0]));
  /** The shared network as the other fleet made it: same id, name, tags, subnets and update time. */
  const assertSharedUntouched = async () => {
    const networks = await networksNamed();
    assert.equal(networks.length, 1, `one network named ${NETWORK}, never a second: ${JSON.stringify(networks)}`);
    const [network] = networks;
    assert.deepEqual(
      { id: network!.id, tags: network!.tags, subnets: network!.subnets, updated_at: network!.updated_at },
      { id: shared.id, tags: shared.tags, subnets: shared.subnets, updated_at: shared.updated_at },
      "the shared network is as its fleet left it",
    );
    assert.deepEqual(
      networkWrites(),
      { [PN_WRITES[0]!]: 1, [PN_WRITES[1]!]: 0, [PN_WRITES[2]!]: 0 },
      "no write but the other fleet's create",
    );
  };
  before(async function () {
    skipUnlessElasticMetalMachines(this);
    dir = mkdtempSync(join(tmpdir(), "nodefleet-local-metal-ci-"));
    project = localStackProject(join(dir, "project"));
    cloud = await startLocalMetalCloud(dir, project, logged);
    // `auto`: the offer decides, and EM-A610R-NVME runs cloud-init.
    editLocalPool(cloud, LOCAL_ELASTIC_METAL_POOL, (pool) => {
      assert.equal(pool.offer, "EM-A610R-NVME");
      assert.deepEqual(pool.privateNetwork, { name: NETWORK, subnet: SUBNET });
      delete pool.bootstrap;
    });
    // Another fleet's network of the pool's name and subnet, made before this stack ever ran.
    shared = await scw(`/vpc/v2/regions/${REGION}/private-networks`, "POST", { name: NETWORK, subnets: [SUBNET], tags: OTHER_FLEET_TAGS });
  });

  after(async function () {
    await cloud?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("joins both members through cloud-init, then the SSH join finds them joined; Ready with label, taint and providerID", async function () {
    const started = Date.now();
    const out = await runPulumi(UP, project, cloud.env);
    const upSeconds = (Date.now() - started) / 1000;
    assert.match(out, new RegExp(`attaching to the shared private network ${NETWORK}`), "the pool says it attaches to the shared one");
    const nodes = await readyMetalNodes(cloud, 2, logged);
    const servers = await metalServers();
    assert.equal(servers.length, 2, "two servers ordered, never more");
    for (const node of nodes) {
      const name = node.metadata.name;
      assert.match(node.spec.providerID ?? "", /^nodefleet:\/\/\/local\/[a-z0-9-]+$/);
      assert.ok(
        node.spec.taints?.some((t) => t.key === "nodefleet.io/bare-metal" && t.value === "true" && t.effect === "NoSchedule"),
        JSON.stringify(node.spec.taints),
      );
      assert.match(
        node.metadata.labels[PRIVATE_IPV4_LABEL] ?? "",
        /^172\.16\.[0-3]\.\d+$/,
        "the private IPv4 label, from the IPAM address",
      );
      const server = servers.find((s) => s.name === name);
      assert.ok(server, `a server named ${name}`);
      const userData = Buffer.from(server.user_data as string, "base64").toString("utf8");
      assert.match(userData, /^#cloud-config\n/, "the server was created with the join as cloud-init user data");
      assert.ok(userData.includes(SELF_JOIN_SCRIPT_PATH));

      // What ran in the machine, in order: cloud-init's run, whose runcmd joined (k0s installed
      // and started while it ran), then the SSH join, which found the node joined and installed nothing.
      const machine = cloud.scaleway.machines!.machine(server.id)!;
      const records = machine.records().map((r) => `${r.tool} ${r.verb}${r.tool === "cloud-init" ? ` ${r.subject}` : ""}`);
      const at = (record: string) => records.indexOf(record);
      const ranRuncmd = at("cloud-init scripts_user runcmd");
      const finished = at("cloud-init final done");
      assert.ok(at(`cloud-init write_files ${SELF_JOIN_SCRIPT_PATH}`) >= 0, records.join("; "));
      assert.ok(ranRuncmd >= 0 && finished > ranRuncmd, `cloud-init ran the join and ended well: ${records.join("; ")}`);
      for (const expected of ["netplan apply", "k0s install", "k0s start"]) {
        assert.equal(records.filter((r) => r === expected).length, 1, `${expected} once in ${name}: ${records.join("; ")}`);
        assert.ok(at(expected) > ranRuncmd && at(expected) < finished, `${expected} ran inside cloud-init's run: ${records.join("; ")}`);
      }
      assert.match(machine.ownFile(CLOUD_INIT_OUTPUT_LOG) ?? "", new RegExp(`nodefleet: joined as ${name}`), "cloud-init's output");
    }
    // The join over SSH ran after `cloud-init status --wait`, once per member, and found each joined.
    assert.equal((out.match(/already joined: the kubelet holds its own credentials/g) ?? []).length, 2, out.slice(-3000));
    assert.deepEqual(
      logged.filter((l) => /cloud-init/.test(l)),
      [],
      "no cloud-init trouble said",
    );

    // The servers are on the shared network, through IPAM addresses of it; the pool created none.
    for (const server of servers) {
      const attached = (await scw(`/baremetal/v3/zones/${METAL_ZONE}/server-private-networks?server_id=${server.id}`))
        .server_private_networks as Json[];
      assert.deepEqual(
        attached.map((a) => a.private_network_id),
        [shared.id],
        `${server.name} is attached to the shared network`,
      );
    }
    const state = JSON.parse(await runPulumi(["stack", "export", "--stack", "local"], project, cloud.env)) as {
      deployment: { resources?: Array<{ type: string }> };
    };
    assert.ok(
      !(state.deployment.resources ?? []).some((r) => r.type === "scaleway:network/privateNetwork:PrivateNetwork"),
      "not managed here",
    );
    await assertSharedUntouched();
    process.stdout.write(`      (pulumi up done after ${upSeconds.toFixed(1)} s)\n`);
  });

  it("has nothing to change on the next run", async function () {
    await runPulumi(UP, project, cloud.env);
    const out = await runPulumi(["preview", "--stack", "local", "--diff", "--non-interactive", "--expect-no-changes"], project, cloud.env);
    assert.doesNotMatch(out, /error:/);
    assert.equal((await metalServers()).length, 2);
    await assertSharedUntouched();
  });

  it("removing the pool deletes its servers and addresses, never the shared network", async function () {
    const started = Date.now();
    editLocalPools(cloud, (pools) => pools.filter((p) => p.name !== LOCAL_ELASTIC_METAL_POOL));
    await runPulumi(UP, project, cloud.env);
    assert.deepEqual(await metalServers(), [], "the pool's servers are gone");
    const addresses = ((await scw(`/ipam/v1/regions/${REGION}/ips?private_network_id=${shared.id}`)).ips as Json[]).length;
    assert.equal(addresses, 0, "the pool's IPAM addresses in the shared network are released");
    await assertSharedUntouched();
    process.stdout.write(`      (the pool removed in ${((Date.now() - started) / 1000).toFixed(1)} s)\n`);
  });
});
