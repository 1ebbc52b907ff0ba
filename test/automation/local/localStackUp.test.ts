/**
 * The local cloud end to end with the real engine, as a user runs it: `nodefleet local up` writes the
 * `local` stack, then `pulumi up --stack local` (the real CLI, the Node.js language host, nodefleet's
 * hcloud plugin, the Kubernetes provider) creates the network, firewall, placement group and three
 * servers in the fake Hetzner API and three bootstrap-token Secrets in the real control plane, and the
 * node agent registers three Ready Nodes through the real bootstrap path with the pool's labels,
 * taints and providerID. A second `pulumi up` changes nothing.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { findTool } from "../../../automation/engine/toolchain";
import { parse } from "yaml";
import { kube } from "../../../automation/local/kubeClient";
import { type LocalCloud, startLocalCloud } from "../../../automation/local/localCloud";
import { type HcloudExchange, hcloudOpenApiViolations, recordHcloudExchanges } from "../../support/hcloudOpenApi";
import {
  type PoolNode,
  UP,
  allPoolServersReady,
  driveRollout,
  editLocalPool,
  editLocalPools,
  hcloudGet,
  isReady,
  poolNodes,
  poolServers,
  setLocalK0sVersion,
  setLocalNetworkRange,
} from "../../support/localFleet";
import { runPulumi } from "../../../automation/local/localStack";
import { localStackProject } from "../../support/localStackProject";
import { runNodefleet } from "../../support/nodefleetCli";
import { until } from "../../support/until";
import { type ServeProcess, serveOnLocalCloud } from "../../support/serveProcess";
import { LOCAL_CLOUD_TOOLS, missingTools, skipUnlessAvailable } from "../../support/toolchainRequirement";

const quiet = { info() {}, warn() {} };

describe("pulumi up --stack local on the local cloud (real engine, real control plane)", function () {
  this.timeout(600_000);
  let dir: string;
  let project: string;
  let cloud: LocalCloud;
  const exchanges: HcloudExchange[] = [];

  before(async function () {
    skipUnlessAvailable(this, missingTools(...LOCAL_CLOUD_TOOLS, "kubectl"));
    dir = mkdtempSync(join(tmpdir(), "nodefleet-local-stack-"));
    // The repository's project, with its program compiled: the same Pulumi.yaml settings, main in dist.
    project = localStackProject(join(dir, "project"));
    cloud = await startLocalCloud({
      dataDir: join(dir, "data"),
      hcloudPort: 0,
      agentIntervalMs: 300,
      logger: quiet,
      projectDir: project,
      onFakeHcloud: (fake) => recordHcloudExchanges(fake, exchanges),
    });
  });

  after(async function () {
    await cloud?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("writes the local stack with no secure value: the kubeconfig comes from the environment the local cloud prints", function () {
    const text = readFileSync(cloud.stackFile!, "utf8");
    assert.doesNotMatch(text, /secure:/);
    assert.match(text, /kubeconfigFromEnvironment: true/);
    assert.ok(!text.includes("client-key-data"), "no key material in the file");
    assert.ok(text.includes(cloud.plane.server));
    const burst = (
      parse(text) as {
        config: { "nodefleet:pools": Array<{ name: string; mode: string; serverTypes: string[]; limits?: { maxNodes?: number } }> };
      }
    ).config["nodefleet:pools"].find((p) => p.mode === "autoscaled")!;
    assert.ok((burst.limits?.maxNodes ?? 0) >= 40 && burst.serverTypes.length >= 2, JSON.stringify(burst));
  });

  it("creates the fleet's servers and tokens, and the node agent registers three Ready Nodes", async function () {
    await runPulumi(["up", "--stack", "local", "--yes", "--skip-preview", "--non-interactive"], project, cloud.env);
    const servers = (await hcloudGet(cloud, "/servers?label_selector=nodefleet.io/cluster=local")).servers as Array<Record<string, any>>;
    assert.equal(servers.length, 3);
    const [network] = (await hcloudGet(cloud, "/networks?name=local-network")).networks;
    const [firewall] = (await hcloudGet(cloud, "/firewalls?name=local-nodes")).firewalls;
    const groups = (await hcloudGet(cloud, "/placement_groups?label_selector=nodefleet.io/cluster=local")).placement_groups as Array<{
      servers: number[];
    }>;
    for (const server of servers) {
      assert.ok(
        server.private_net.some((n: Record<string, unknown>) => n.network === network.id),
        `${server.name} is in the network`,
      );
      assert.ok(
        server.public_net.firewalls.some((f: Record<string, unknown>) => f.id === firewall.id),
        `${server.name} is behind the firewall`,
      );
    }
    assert.equal(groups.flatMap((g) => g.servers).length, 3, "the servers are in spread groups");
    const secrets = (await kube(
      cloud.plane.admin,
      "GET",
      "/api/v1/namespaces/kube-system/secrets?fieldSelector=type%3Dbootstrap.kubernetes.io%2Ftoken",
    )) as { items: unknown[] };
    assert.equal(secrets.items.length, 3, "one bootstrap token per server");

    const deadline = Date.now() + 120_000;
    let ready: PoolNode[] = [];
    while (Date.now() < deadline) {
      ready = (await poolNodes(cloud, "local-general")).filter(isReady);
      if (ready.length === 3) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    assert.equal(ready.length, 3, "three Ready Nodes");
    for (const node of ready) {
      assert.match(node.spec.providerID ?? "", /^nodefleet:\/\/\/local\/[a-z0-9-]+$/);
      assert.ok(node.spec.taints?.some((t) => t.key === "nodefleet.io/local" && t.value === "true" && t.effect === "NoSchedule"));
    }
    const listed = execFileSync(
      findTool("kubectl")!,
      ["--kubeconfig", cloud.plane.adminKubeconfig, "get", "nodes", "-l", "node.kubernetes.io/pool=local-general", "-o", "name"],
      { encoding: "utf8" },
    );
    assert.deepEqual(
      listed.trim().split("\n").sort(),
      ready.map((n) => `node/${n.metadata.name}`).sort(),
      "kubectl with the admin kubeconfig shows them",
    );
    const identities = (await kube(cloud.plane.admin, "GET", "/apis/certificates.k8s.io/v1/certificatesigningrequests")) as {
      items: Array<{ spec: { username: string } }>;
    };
    assert.ok(
      identities.items.some((c) => c.spec.username.startsWith("system:bootstrap:")),
      "the kubelets bootstrapped with tokens",
    );
  });

  it("deletes each token Secret once its Node is Ready, then has nothing to change", async function () {
    await runPulumi(["up", "--stack", "local", "--yes", "--skip-preview", "--non-interactive"], project, cloud.env);
    const secrets = (await kube(
      cloud.plane.admin,
      "GET",
      "/api/v1/namespaces/kube-system/secrets?fieldSelector=type%3Dbootstrap.kubernetes.io%2Ftoken",
    )) as { items: unknown[] };
    assert.equal(secrets.items.length, 0, "a registered node's join token is revoked");
    const out = await runPulumi(["preview", "--stack", "local", "--diff", "--non-interactive", "--expect-no-changes"], project, cloud.env);
    assert.doesNotMatch(out, /error:/);
  });

  it("sets firewall rules changed outside Pulumi back after a refresh, with every server still behind the firewall", async function () {
    const [firewall] = (await hcloudGet(cloud, "/firewalls?name=local-nodes")).firewalls;
    const declared = JSON.stringify(firewall.rules);
    // Someone opens SSH to the world in the console.
    const opened = [...firewall.rules, { direction: "in", protocol: "tcp", port: "22", source_ips: ["0.0.0.0/0"], destination_ips: [] }];
    const response = await fetch(`${cloud.env.HCLOUD_ENDPOINT}/firewalls/${firewall.id}/actions/set_rules`, {
      method: "POST",
      headers: { Authorization: `Bearer ${cloud.env.HCLOUD_TOKEN}`, "Content-Type": "application/json" },
      body: JSON.stringify({ rules: opened }),
    });
    assert.equal(response.status, 201);
    await runPulumi(["refresh", "--stack", "local", "--yes", "--skip-preview", "--non-interactive"], project, cloud.env);
    const preview = await runPulumi(["preview", "--stack", "local", "--diff", "--non-interactive"], project, cloud.env);
    assert.match(preview, /~ hcloud:index\/firewall:Firewall/, "the refreshed drift is a diff of the firewall");
    await runPulumi(["up", "--stack", "local", "--yes", "--skip-preview", "--non-interactive"], project, cloud.env);
    const [after] = (await hcloudGet(cloud, "/firewalls?name=local-nodes")).firewalls;
    assert.equal(JSON.stringify(after.rules), declared, "the declared rules are back");
    const servers = (await hcloudGet(cloud, "/servers?label_selector=nodefleet.io/cluster=local")).servers as Array<Record<string, any>>;
    assert.equal(servers.length, 3);
    for (const server of servers)
      assert.ok(
        server.public_net.firewalls.some((f: Record<string, unknown>) => f.id === firewall.id),
        `${server.name} is still behind the firewall`,
      );
    // Rules the API spells otherwise (an empty destination list) are not a perpetual diff.
    await runPulumi(["preview", "--stack", "local", "--refresh", "--non-interactive", "--expect-no-changes"], project, cloud.env);
  });

  it("keeps running servers whose state holds another nodefleet's rendering of the same user data: nothing is replaced", async function () {
    const exported = await runPulumi(["stack", "export", "--stack", "local", "--show-secrets", "--non-interactive"], project, cloud.env);
    const stateFile = join(dir, "state-before-renderer-change.json");
    writeFileSync(stateFile, exported);
    const deployment = JSON.parse(exported) as {
      deployment: { resources: Array<{ type: string; inputs?: Record<string, any>; outputs?: Record<string, any> }> };
    };
    const serversInState = deployment.deployment.resources.filter((r) => r.type === "hcloud:index/server:Server");
    assert.equal(serversInState.length, 3);
    // What an older renderer wrote: the same inputs, another text (a secret, shown in the clear by --show-secrets).
    for (const server of serversInState) {
      for (const bag of [server.inputs!, server.outputs!]) {
        const userData = bag.userData as { plaintext: string };
        assert.equal(typeof userData?.plaintext, "string", "the user data is a secret in the state");
        userData.plaintext = JSON.stringify(`${JSON.parse(userData.plaintext) as string}\n# rendered by another nodefleet\n`);
      }
    }
    const tampered = join(dir, "state-older-renderer.json");
    writeFileSync(tampered, JSON.stringify(deployment));
    const servers = (await poolServers(cloud, "local-general")).map((s) => s.id).sort();
    await runPulumi(["stack", "import", "--stack", "local", "--file", tampered, "--non-interactive"], project, cloud.env);
    try {
      // Hetzner replaces a server for new user data, and its name is taken by the running one.
      await runPulumi(["preview", "--stack", "local", "--diff", "--non-interactive", "--expect-no-changes"], project, cloud.env);
      await runPulumi(UP, project, cloud.env);
      assert.deepEqual((await poolServers(cloud, "local-general")).map((s) => s.id).sort(), servers, "no server was replaced");
    } finally {
      await runPulumi(["stack", "import", "--stack", "local", "--file", stateFile, "--non-interactive"], project, cloud.env);
    }
  });

  it("refuses a changed network range before declaring anything, naming the field; nothing is replaced", async function () {
    const [network] = (await hcloudGet(cloud, "/networks?name=local-network")).networks;
    const servers = (await poolServers(cloud, "local-general")).map((s) => s.id).sort();
    setLocalNetworkRange(cloud, "10.0.0.0/15");
    try {
      await assert.rejects(
        runPulumi(UP, project, cloud.env),
        /nodefleet:network\.ipRange: cannot change on an existing network \(10\.0\.0\.0\/16 -> 10\.0\.0\.0\/15\)/,
      );
    } finally {
      setLocalNetworkRange(cloud, "10.0.0.0/16");
    }
    const [after] = (await hcloudGet(cloud, "/networks?name=local-network")).networks;
    assert.deepEqual([after.id, after.ip_range], [network.id, "10.0.0.0/16"], "the network is the same one");
    assert.deepEqual((await poolServers(cloud, "local-general")).map((s) => s.id).sort(), servers, "no server was touched");
  });

  it("rolls a fleet-wide change one member at a time: a surge server first, an old one deleted only once its replacement is Ready", async function () {
    const before = new Set((await poolServers(cloud, "local-general")).map((s) => s.name));
    // A new pool label is in every member's user data: each member needs a new server.
    editLocalPool(cloud, "local-general", (pool) => ((pool.labels as Record<string, string>)["example.com/revision"] = "2"));
    const rollout = await driveRollout({
      cloud,
      project,
      pool: "local-general",
      members: 3,
      maxSurge: 1,
      maxUnavailable: 0,
      isNew: (s) => !before.has(s.name),
      maxRuns: 8,
    });
    // The default rollout, step by step: surge one, then delete its predecessor (deletions end a run).
    assert.deepEqual(
      rollout.serversAfterRun.map((names) => names.length),
      [4, 3, 4, 3, 4, 3],
    );
    assert.deepEqual(
      rollout.deletedByRun.map((names) => names.length),
      [0, 1, 0, 1, 0, 1],
    );
    const nodes = (await poolNodes(cloud, "local-general")).filter(isReady);
    assert.equal(nodes.length, 3);
    assert.ok(
      nodes.every((n) => n.metadata.labels["example.com/revision"] === "2"),
      "every Node has the new label",
    );
  });

  it("scales the static pool 3 -> 5 -> 2: new members join, removed members' servers and Nodes are gone", async function () {
    editLocalPool(cloud, "local-general", (pool) => (pool.replicas = 5));
    // What the pull request workflow runs, as a process: `nodefleet preview --engine automation`.
    const before = (await poolServers(cloud, "local-general")).map((s) => s.id).sort();
    const previewed = await runNodefleet(["preview", "--stack", "local", "--engine", "automation", "--json"], cloud.env, {
      cwd: project,
      timeoutMs: 300_000,
    });
    assert.equal(previewed.code, 0, previewed.stderr);
    assert.match(previewed.stderr, /provider plugins hcloud \S+ \(toolchain\), kubernetes \S+ \(toolchain\)/);
    const report = JSON.parse(previewed.stdout) as {
      stacks: Array<{ stack: string; engine: string; simulated: boolean; summary: Record<string, number> }>;
    };
    assert.deepEqual([report.stacks[0]!.stack, report.stacks[0]!.engine, report.stacks[0]!.simulated], ["local", "automation", false]);
    assert.ok((report.stacks[0]!.summary.create ?? 0) >= 2, JSON.stringify(report.stacks[0]!.summary));
    assert.deepEqual((await poolServers(cloud, "local-general")).map((s) => s.id).sort(), before, "a preview creates nothing");
    await runPulumi(UP, project, cloud.env);
    const five = await allPoolServersReady(cloud, "local-general");
    assert.equal(five.length, 5);
    assert.equal(new Set(five.map((s) => s.labels["nodefleet.io/node"])).size, 5, "five members");

    editLocalPool(cloud, "local-general", (pool) => (pool.replicas = 2));
    await runPulumi(UP, project, cloud.env);
    const two = await poolServers(cloud, "local-general");
    assert.equal(two.length, 2);
    assert.ok(
      two.every((s) => five.some((f) => f.id === s.id)),
      "the kept members keep their servers",
    );
    const nodes = await poolNodes(cloud, "local-general");
    assert.deepEqual(nodes.map((n) => n.metadata.name).sort(), two.map((s) => s.name).sort(), "the removed members' Nodes are deleted");
  });

  it("rolls a k0s version change create-before-delete, each new server joining with a fresh token", async function () {
    const old = await poolServers(cloud, "local-general");
    const tokensBefore = new Set(
      (
        (await kube(
          cloud.plane.admin,
          "GET",
          "/api/v1/namespaces/kube-system/secrets?fieldSelector=type%3Dbootstrap.kubernetes.io%2Ftoken",
        )) as { items: Array<{ metadata: { name: string } }> }
      ).items.map((s) => s.metadata.name),
    );
    assert.equal(tokensBefore.size, 0, "the registered members' tokens were revoked");
    const joinedWith = new Set<string>();
    setLocalK0sVersion(cloud, "v1.33.5+k0s.0");
    editLocalPool(cloud, "local-general", (pool) => (pool.rollout = { maxSurge: 2, maxUnavailable: 0 }));
    const rollout = await driveRollout({
      cloud,
      project,
      pool: "local-general",
      members: 2,
      maxSurge: 2,
      maxUnavailable: 0,
      isNew: (s) => !old.some((o) => o.id === s.id),
      maxRuns: 3,
      afterRun: async () => {
        const secrets = (await kube(
          cloud.plane.admin,
          "GET",
          "/api/v1/namespaces/kube-system/secrets?fieldSelector=type%3Dbootstrap.kubernetes.io%2Ftoken",
        )) as { items: Array<{ metadata: { name: string } }> };
        for (const secret of secrets.items) joinedWith.add(secret.metadata.name);
      },
    });
    assert.deepEqual(
      rollout.serversAfterRun.map((names) => names.length),
      [4, 2],
      "both surge at once, then both old servers go",
    );
    assert.equal(joinedWith.size, 2, "a new bootstrap token per new server");
    const nodes = (await poolNodes(cloud, "local-general")).filter(isReady);
    assert.deepEqual(
      nodes.map((n) => n.status.nodeInfo?.kubeletVersion),
      ["v1.33.5+k0s", "v1.33.5+k0s"],
      "the new members run the new version",
    );
  });

  it("removes the pool: its servers, placement groups, Nodes and tokens are gone", async function () {
    editLocalPools(cloud, (pools) => pools.filter((p) => p.name !== "local-general"));
    await runPulumi(UP, project, cloud.env);
    assert.deepEqual(await poolServers(cloud, "local-general"), []);
    assert.deepEqual(await poolNodes(cloud, "local-general"), []);
    const groups = (await hcloudGet(cloud, "/placement_groups?label_selector=nodefleet.io/pool=local-general"))
      .placement_groups as unknown[];
    assert.deepEqual(groups, []);
    const secrets = (await kube(
      cloud.plane.admin,
      "GET",
      "/api/v1/namespaces/kube-system/secrets?fieldSelector=type%3Dbootstrap.kubernetes.io%2Ftoken",
    )) as { items: unknown[] };
    assert.deepEqual(secrets.items, []);
    // The cluster's network and firewall stay for the other pool.
    assert.equal((await hcloudGet(cloud, "/networks?name=local-network")).networks.length, 1);
  });

  describe("nodefleet serve --stack local --engine automation", function () {
    let serve: ServeProcess;

    before(async function () {
      serve = await serveOnLocalCloud(join(dir, "serve"), cloud.env, project);
    });

    after(async function () {
      serve?.child.kill("SIGTERM");
      await serve?.exited();
    });

    const waitFor = <T>(what: string, probe: () => Promise<T | undefined>) =>
      until(what, probe, 180_000, () => `serve said:\n${serve.stderr().slice(-3000)}`);

    it("turns Karpenter-style creates into servers and Ready Nodes, and deletes back to nothing", async function () {
      // Prepared at start (its CLI processes off the first create's path), before anything asked for a node.
      await waitFor("the API stack's workspace prepared", async () =>
        existsSync(join(dir, "serve", "workspaces", "local-api", "Pulumi.local-api.yaml")) ? true : undefined,
      );
      const ids = ["nodeclaim-local-a", "nodeclaim-local-b"];
      const created = await Promise.all(
        ids.map((uniqueID) => serve.client.createNode({ uniqueID, pool: "local-burst", instanceType: "cpx21" })),
      );
      const nodeIds = created.map((c) => c.node.nodeID);
      const running = await waitFor("both nodes RUNNING", async () => {
        const nodes = await Promise.all(nodeIds.map((id) => serve.client.getNode(id)));
        return nodes.every((n) => n.status === "RUNNING") ? nodes : undefined;
      });
      const servers = (await hcloudGet(cloud, "/servers?label_selector=nodefleet.io/pool=local-burst")).servers as Array<{
        labels: Record<string, string>;
      }>;
      assert.deepEqual(servers.map((s) => s.labels["nodefleet.io/node"]).sort(), [...nodeIds].sort(), "one real server per claim");
      for (const node of running) {
        const registered = await waitFor(`Node of ${node.nodeID} Ready`, async () => {
          return (await poolNodes(cloud, "local-burst")).find((n) => n.spec.providerID === node.providerID && isReady(n));
        });
        assert.equal(registered.spec.providerID, `nodefleet:///local/${node.nodeID}`);
        // The kubelet reports what the API promised Karpenter for the type.
        assert.deepEqual(
          registered.status.allocatable,
          Object.fromEntries(Object.entries(node.allocatable ?? {}).filter(([k]) => k in (registered.status.allocatable ?? {}))),
        );
      }

      await Promise.all(nodeIds.map((id) => serve.client.deleteNode(id)));
      await waitFor("the servers gone", async () =>
        (await hcloudGet(cloud, "/servers?label_selector=nodefleet.io/pool=local-burst")).servers.length === 0 ? true : undefined,
      );
      await waitFor("the Nodes gone", async () => {
        const nodes = await poolNodes(cloud, "local-burst");
        return nodes.length === 0 ? true : undefined;
      });
    });
  });

  // After the nested runs above (mocha runs a describe's own tests before its nested describes).
  describe("every exchange", function () {
    it("spoke Hetzner's published API in every exchange of the plugin, the engine and the service", function () {
      assert.ok(exchanges.length > 50, `${exchanges.length} exchanges`);
      assert.deepEqual(exchanges.flatMap(hcloudOpenApiViolations), []);
    });
  });
});
