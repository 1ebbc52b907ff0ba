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
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { findTool } from "../../../automation/engine/toolchain";
import { parse, stringify } from "yaml";
import { kube } from "../../../automation/local/kubeClient";
import { type LocalCloud, startLocalCloud } from "../../../automation/local/localCloud";
import { TOKEN } from "../../support/apiHarness";
import { type HcloudExchange, hcloudOpenApiViolations, recordHcloudExchanges } from "../../support/hcloudOpenApi";
import { localStackProject, runPulumi, until } from "../../support/localStackProject";
import { type ServeProcess, startServe } from "../../support/serveProcess";
import { missingTools, skipUnlessAvailable } from "../../support/toolchainRequirement";

const quiet = { info() {}, warn() {} };

interface KubeNode {
  metadata: { name: string; labels: Record<string, string> };
  spec: { providerID?: string; taints?: Array<{ key: string; value?: string; effect: string }> };
  status: { conditions?: Array<{ type: string; status: string }>; allocatable?: Record<string, string> };
}

describe("pulumi up --stack local on the local cloud (real engine, real control plane)", function () {
  this.timeout(600_000);
  let dir: string;
  let project: string;
  let cloud: LocalCloud;
  const exchanges: HcloudExchange[] = [];

  before(async function () {
    skipUnlessAvailable(this, missingTools("pulumi", "pulumi-language-nodejs", "pulumi-resource-hcloud", "pulumi-resource-kubernetes", "pulumi-resource-random", "pulumi-resource-time", "etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl"));
    dir = mkdtempSync(join(tmpdir(), "nodefleet-local-stack-"));
    // The repository's project, with its program compiled: the same Pulumi.yaml settings, main in dist.
    project = localStackProject(join(dir, "project"));
    cloud = await startLocalCloud({ dataDir: join(dir, "data"), hcloudPort: 0, agentIntervalMs: 300, logger: quiet, projectDir: project, onFakeHcloud: (fake) => recordHcloudExchanges(fake, exchanges) });
  });

  after(async function () {
    await cloud?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const hcloud = async (path: string) =>
    (await (await fetch(`${cloud.env.HCLOUD_ENDPOINT}${path}`, { headers: { Authorization: `Bearer ${cloud.env.HCLOUD_TOKEN}` } })).json()) as Record<string, any>;

  it("writes the local stack with the kubeconfig as a secret", function () {
    const text = readFileSync(cloud.stackFile!, "utf8");
    assert.match(text, /kubeconfig:\s*\n\s*secure: v1:/, "the kubeconfig is encrypted in the stack file");
    assert.ok(!text.includes("client-key-data"), "no key material in the clear");
    assert.ok(text.includes(cloud.plane.server));
  });

  it("creates the fleet's servers and tokens, and the node agent registers three Ready Nodes", async function () {
    await runPulumi(["up", "--stack", "local", "--yes", "--skip-preview", "--non-interactive"], project, cloud.env);
    const servers = (await hcloud("/servers?label_selector=nodefleet.io/cluster=local")).servers as Array<Record<string, any>>;
    assert.equal(servers.length, 3);
    const [network] = (await hcloud("/networks?name=local-network")).networks;
    const [firewall] = (await hcloud("/firewalls?name=local-nodes")).firewalls;
    const groups = (await hcloud("/placement_groups?label_selector=nodefleet.io/cluster=local")).placement_groups as Array<{ servers: number[] }>;
    for (const server of servers) {
      assert.ok(server.private_net.some((n: Record<string, unknown>) => n.network === network.id), `${server.name} is in the network`);
      assert.ok(server.public_net.firewalls.some((f: Record<string, unknown>) => f.id === firewall.id), `${server.name} is behind the firewall`);
    }
    assert.equal(groups.flatMap((g) => g.servers).length, 3, "the servers are in spread groups");
    const secrets = (await kube(cloud.plane.admin, "GET", "/api/v1/namespaces/kube-system/secrets?fieldSelector=type%3Dbootstrap.kubernetes.io%2Ftoken")) as { items: unknown[] };
    assert.equal(secrets.items.length, 3, "one bootstrap token per server");

    const deadline = Date.now() + 120_000;
    let ready: KubeNode[] = [];
    while (Date.now() < deadline) {
      const nodes = ((await kube(cloud.plane.admin, "GET", "/api/v1/nodes?labelSelector=node.kubernetes.io%2Fpool%3Dlocal-general")) as { items: KubeNode[] }).items;
      ready = nodes.filter((n) => n.status.conditions?.some((c) => c.type === "Ready" && c.status === "True"));
      if (ready.length === 3) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    assert.equal(ready.length, 3, "three Ready Nodes");
    for (const node of ready) {
      assert.match(node.spec.providerID ?? "", /^nodefleet:\/\/\/local\/[a-z0-9-]+$/);
      assert.ok(node.spec.taints?.some((t) => t.key === "nodefleet.io/local" && t.value === "true" && t.effect === "NoSchedule"));
    }
    const listed = execFileSync(findTool("kubectl")!, ["--kubeconfig", cloud.plane.adminKubeconfig, "get", "nodes", "-l", "node.kubernetes.io/pool=local-general", "-o", "name"], { encoding: "utf8" });
    assert.deepEqual(listed.trim().split("\n").sort(), ready.map((n) => `node/${n.metadata.name}`).sort(), "kubectl with the admin kubeconfig shows them");
    const identities = (await kube(cloud.plane.admin, "GET", "/apis/certificates.k8s.io/v1/certificatesigningrequests")) as { items: Array<{ spec: { username: string } }> };
    assert.ok(identities.items.some((c) => c.spec.username.startsWith("system:bootstrap:")), "the kubelets bootstrapped with tokens");
  });

  it("deletes each token Secret once its Node is Ready, then has nothing to change", async function () {
    await runPulumi(["up", "--stack", "local", "--yes", "--skip-preview", "--non-interactive"], project, cloud.env);
    const secrets = (await kube(cloud.plane.admin, "GET", "/api/v1/namespaces/kube-system/secrets?fieldSelector=type%3Dbootstrap.kubernetes.io%2Ftoken")) as { items: unknown[] };
    assert.equal(secrets.items.length, 0, "a registered node's join token is revoked");
    const out = await runPulumi(["preview", "--stack", "local", "--diff", "--non-interactive", "--expect-no-changes"], project, cloud.env);
    assert.doesNotMatch(out, /error:/);
  });

  it("rolls a fleet-wide change one member at a time: a surge server first, an old one deleted only once its replacement is Ready", async function () {
    const generalServers = async () => ((await hcloud("/servers?label_selector=nodefleet.io/pool=local-general")).servers as Array<{ name: string }>).map((s) => s.name).sort();
    const before = await generalServers();
    // A new pool label is in every member's user data: each member needs a new server.
    const file = cloud.stackFile!;
    const doc = parse(readFileSync(file, "utf8")) as { config: Record<string, Array<{ name: string; labels: Record<string, string> }>> };
    doc.config["nodefleet:pools"]!.find((p) => p.name === "local-general")!.labels["nodefleet.io/revision"] = "2";
    writeFileSync(file, stringify(doc));

    await runPulumi(["up", "--stack", "local", "--yes", "--skip-preview", "--non-interactive"], project, cloud.env);
    const surged = await generalServers();
    assert.equal(surged.length, 4, `maxSurge 1: one new server next to the three old ones, got ${surged.join(", ")}`);
    assert.ok(before.every((name) => surged.includes(name)), "no old server deleted before its replacement is Ready");
    const added = surged.find((name) => !before.includes(name))!;
    await until(`the replacement ${added} Ready`, async () => {
      const nodes = ((await kube(cloud.plane.admin, "GET", "/api/v1/nodes?labelSelector=nodefleet.io%2Frevision%3D2")) as { items: KubeNode[] }).items;
      return nodes.some((n) => n.status.conditions?.some((c) => c.type === "Ready" && c.status === "True")) ? true : undefined;
    }, 120_000);

    await runPulumi(["up", "--stack", "local", "--yes", "--skip-preview", "--non-interactive"], project, cloud.env);
    const after = await generalServers();
    assert.equal(after.length, 3, `the replaced member's old server is gone, got ${after.join(", ")}`);
    assert.ok(after.includes(added));
    assert.equal(before.filter((name) => !after.includes(name)).length, 1, "exactly one old server removed");
  });

  describe("nodefleet serve --stack local --engine automation", function () {
    let serve: ServeProcess;

    before(async function () {
      serve = await startServe(join(dir, "serve"), { ...cloud.env, NODEFLEET_BATCH_IDLE_MS: "300", NODEFLEET_API_TOKENS: `local:${TOKEN}` }, { stack: "local", engine: "automation", cwd: project, clusterId: "local", startTimeoutMs: 120_000 });
    });

    after(async function () {
      serve?.child.kill("SIGTERM");
      await serve?.exited();
    });

    const waitFor = <T>(what: string, probe: () => Promise<T | undefined>) => until(what, probe, 180_000, () => `serve said:\n${serve.stderr().slice(-3000)}`);

    it("turns Karpenter-style creates into servers and Ready Nodes, and deletes back to nothing", async function () {
      const ids = ["nodeclaim-local-a", "nodeclaim-local-b"];
      const created = await Promise.all(ids.map((uniqueID) => serve.client.createNode({ uniqueID, pool: "local-burst", instanceType: "cpx21" })));
      const nodeIds = created.map((c) => c.node.nodeID);
      const running = await waitFor("both nodes RUNNING", async () => {
        const nodes = await Promise.all(nodeIds.map((id) => serve.client.getNode(id)));
        return nodes.every((n) => n.status === "RUNNING") ? nodes : undefined;
      });
      const servers = (await hcloud("/servers?label_selector=nodefleet.io/pool=local-burst")).servers as Array<{ labels: Record<string, string> }>;
      assert.deepEqual(servers.map((s) => s.labels["nodefleet.io/node"]).sort(), [...nodeIds].sort(), "one real server per claim");
      for (const node of running) {
        const registered = await waitFor(`Node of ${node.nodeID} Ready`, async () => {
          const nodes = ((await kube(cloud.plane.admin, "GET", "/api/v1/nodes?labelSelector=node.kubernetes.io%2Fpool%3Dlocal-burst")) as { items: KubeNode[] }).items;
          return nodes.find((n) => n.spec.providerID === node.providerID && n.status.conditions?.some((c) => c.type === "Ready" && c.status === "True"));
        });
        assert.equal(registered.spec.providerID, `nodefleet:///local/${node.nodeID}`);
        // The kubelet reports what the API promised Karpenter for the type.
        assert.deepEqual(registered.status.allocatable, Object.fromEntries(Object.entries(node.allocatable ?? {}).filter(([k]) => k in (registered.status.allocatable ?? {}))));
      }

      await Promise.all(nodeIds.map((id) => serve.client.deleteNode(id)));
      await waitFor("the servers gone", async () => ((await hcloud("/servers?label_selector=nodefleet.io/pool=local-burst")).servers.length === 0 ? true : undefined));
      await waitFor("the Nodes gone", async () => {
        const nodes = ((await kube(cloud.plane.admin, "GET", "/api/v1/nodes?labelSelector=node.kubernetes.io%2Fpool%3Dlocal-burst")) as { items: KubeNode[] }).items;
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
