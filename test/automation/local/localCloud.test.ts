/**
 * `nodefleet local up`'s parts together: a server created in the fake Hetzner API with the user
 * data nodefleet renders becomes a Ready Node of the real control plane through the node agent; a
 * user data that could not join in reality (expired token, refused label) never becomes a Node and
 * says why; the environment files are written; a second local cloud on the same data directory is
 * refused; a restart keeps the servers and the cluster.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { encodeK0sJoinToken } from "../../../components/bootstrap/k0sJoinToken";
import { renderK0sWorkerCloudConfig } from "../../../components/bootstrap/k0sWorkerCloudConfig";
import { kubeletSchema } from "../../../components/fleet/fleetSpec";
import { KubeApiError, kube } from "../../../automation/local/kubeClient";
import { type LocalCloud, startLocalCloud } from "../../../automation/local/localCloud";
import { DataDirLockedError } from "../../../automation/store/dataDirLock";
import { BIN } from "../../support/serveProcess";
import { type HcloudExchange, hcloudOpenApiViolations, recordHcloudExchanges } from "../../support/hcloudOpenApi";
import { missingTools, skipUnlessAvailable } from "../../support/toolchainRequirement";

const quiet = { info() {}, warn() {} };

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe("local cloud: fake Hetzner API, real control plane, node agent", function () {
  this.timeout(240_000);
  let dir: string;
  let cloud: LocalCloud;
  const warnings: string[] = [];
  const exchanges: HcloudExchange[] = [];

  before(async function () {
    skipUnlessAvailable(this, missingTools("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"));
    dir = mkdtempSync(join(tmpdir(), "nodefleet-local-cloud-"));
    cloud = await startLocalCloud({
      dataDir: dir,
      hcloudPort: 0,
      agentIntervalMs: 200,
      logger: { info() {}, warn: (record) => warnings.push(JSON.stringify(record)) },
      onFakeHcloud: (fake) => recordHcloudExchanges(fake, exchanges),
    });
  });

  after(async function () {
    await cloud?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  async function token(id: string, expiresInMs: number): Promise<string> {
    const expiration = new Date(Date.now() + expiresInMs).toISOString().replace(/\.\d{3}Z$/, "Z");
    await kube(cloud.plane.admin, "POST", "/api/v1/namespaces/kube-system/secrets", {
      apiVersion: "v1",
      kind: "Secret",
      type: "bootstrap.kubernetes.io/token",
      metadata: { name: `bootstrap-token-${id}`, namespace: "kube-system" },
      stringData: { "token-id": id, "token-secret": "0123456789abcdef", expiration, "usage-bootstrap-authentication": "true" },
    });
    return `${id}.0123456789abcdef`;
  }

  async function createServer(name: string, bootstrapToken: string, edit: (userData: string) => string = (u) => u): Promise<number> {
    const userData = edit(
      renderK0sWorkerCloudConfig({
        k0sVersion: "v1.33.4+k0s.0",
        joinToken: encodeK0sJoinToken({ apiServer: cloud.plane.server, caCertificate: cloud.plane.admin.caPem, token: bootstrapToken }),
        hostname: name,
        providerID: `cnap:///local/${name}`,
        labels: { "node.kubernetes.io/pool": "general" },
        taints: [{ key: "workload", value: "batch", effect: "NoSchedule" }],
        kubelet: kubeletSchema.parse({}),
      }),
    );
    const response = await fetch(`${cloud.env.HCLOUD_ENDPOINT}/servers`, {
      method: "POST",
      headers: { Authorization: `Bearer ${cloud.env.HCLOUD_TOKEN}`, "Content-Type": "application/json" },
      body: JSON.stringify({
        name,
        server_type: "cx22",
        image: "ubuntu-24.04",
        location: "hel1",
        user_data: userData,
        labels: { "nodefleet.io/cluster": "local" },
      }),
    });
    assert.equal(response.status, 201);
    return ((await response.json()) as { server: { id: number } }).server.id;
  }

  it("writes the environment to use it, and refuses a second local cloud on the same data directory", async function () {
    const written = JSON.parse(readFileSync(join(dir, "local", "env.json"), "utf8")) as { env: Record<string, string> };
    assert.deepEqual(written.env, cloud.env);
    assert.match(readFileSync(join(dir, "local", "env"), "utf8"), /^export HCLOUD_ENDPOINT='http:\/\/127\.0\.0\.1:\d+'$/m);
    assert.equal(cloud.env.HCLOUD_TOKEN!.length, 64, "the hcloud provider requires a 64-character token");
    assert.equal(
      cloud.env.KUBECONFIG,
      join(dir, "local", "admin.kubeconfig"),
      "the admin kubeconfig is in the data directory, as `kubectl --kubeconfig .nodefleet/local/admin.kubeconfig` expects",
    );
    assert.ok(existsSync(cloud.env.KUBECONFIG!));
    // The fake Scaleway API beside it, on loopback, answering the secret key `local env` prints.
    assert.match(cloud.env.SCW_API_URL!, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.match(cloud.env.SCW_SECRET_KEY!, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    assert.match(cloud.env.SCW_ACCESS_KEY!, /^SCW[A-Z0-9]{17}$/);
    const offers = await fetch(`${cloud.env.SCW_API_URL}/baremetal/v1/zones/fr-par-2/offers?name=EM-A610R-NVME`, {
      headers: { "X-Auth-Token": cloud.env.SCW_SECRET_KEY! },
    });
    assert.equal(((await offers.json()) as { total_count: number }).total_count, 1);
    const anonymous = await fetch(`${cloud.env.SCW_API_URL}/baremetal/v1/zones/fr-par-2/servers`);
    assert.equal(anonymous.status, 401);
    // The fake Robot webservice, answering the webservice user `local env` prints, and no one else.
    assert.match(cloud.env.HROBOT_URL!, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.match(cloud.env.HROBOT_USER!, /^#ws\+[A-Za-z0-9]{8}$/);
    const robotLogin = `Basic ${Buffer.from(`${cloud.env.HROBOT_USER}:${cloud.env.HROBOT_PASSWORD}`).toString("base64")}`;
    const robotServers = await fetch(`${cloud.env.HROBOT_URL}/server`, { headers: { authorization: robotLogin } });
    assert.equal(((await robotServers.json()) as unknown[]).length, 2);
    assert.equal((await fetch(`${cloud.env.HROBOT_URL}/server`)).status, 401);
    await assert.rejects(startLocalCloud({ dataDir: dir, hcloudPort: 0, logger: quiet }), DataDirLockedError);
  });

  it("turns a server with nodefleet's user data into a Ready Node, and stops its kubelet when the server is deleted", async function () {
    const serverId = await createServer("local-w1", await token("aaaaaa", 3600_000));
    const node = await until("Node local-w1 Ready", async () => {
      const n = (await kube(cloud.plane.admin, "GET", "/api/v1/nodes/local-w1")) as {
        spec: { providerID: string; taints?: Array<{ key: string }> };
        metadata: { labels: Record<string, string> };
        status: { conditions?: Array<{ type: string; status: string }> };
      };
      return n.status.conditions?.some((c) => c.type === "Ready" && c.status === "True") ? n : undefined;
    });
    assert.equal(node.spec.providerID, "cnap:///local/local-w1");
    assert.equal(node.metadata.labels["node.kubernetes.io/pool"], "general");
    assert.ok(node.spec.taints?.some((t) => t.key === "workload"));
    assert.equal(cloud.agent.machine(serverId)?.state, "joined");
    // Its heartbeat is the kubelet's: a Lease it renews as itself (the Node authorizer lets it), owned by its Node.
    const lease = await until(
      "the Lease of local-w1",
      async () =>
        ((await kube(cloud.plane.admin, "GET", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/local-w1").catch(
          () => undefined,
        )) ?? undefined) as
          { spec: { holderIdentity: string; renewTime: string }; metadata: { ownerReferences: Array<{ kind: string }> } } | undefined,
    );
    assert.equal(lease.spec.holderIdentity, "local-w1");
    assert.equal(lease.metadata.ownerReferences[0]?.kind, "Node");
    assert.ok(Date.now() - Date.parse(lease.spec.renewTime) < 60_000, lease.spec.renewTime);
    // Its pods run and their deletion is confirmed: the agent lists every node's pods at once, and writes as the node.
    const pods = "/api/v1/namespaces/default/pods";
    await kube(cloud.plane.admin, "POST", pods, {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "on-w1" },
      spec: {
        nodeName: "local-w1",
        automountServiceAccountToken: false,
        containers: [{ name: "app", image: "registry.k8s.io/pause:3.10" }],
      },
    });
    await until("pod on-w1 Running", async () =>
      ((await kube(cloud.plane.admin, "GET", `${pods}/on-w1`)) as { status: { phase?: string } }).status.phase === "Running"
        ? true
        : undefined,
    );
    await kube(cloud.plane.admin, "DELETE", `${pods}/on-w1`);
    await until("pod on-w1 gone", () =>
      kube(cloud.plane.admin, "GET", `${pods}/on-w1`).then(
        () => undefined,
        (error: Error) => (error instanceof KubeApiError && error.status === 404 ? true : undefined),
      ),
    );

    const deleted = await fetch(`${cloud.env.HCLOUD_ENDPOINT}/servers/${serverId}`, {
      method: "DELETE",
      headers: { Authorization: `Bearer ${cloud.env.HCLOUD_TOKEN}` },
    });
    assert.equal(deleted.status, 200);
    await until("the agent to forget the server", async () => (cloud.agent.machine(serverId) === undefined ? true : undefined));
    // The agent deletes nothing by itself: the Node object stays for nodefleet's Node removal.
    await kube(cloud.plane.admin, "GET", "/api/v1/nodes/local-w1");
  });

  it("never makes a Node of user data that could not join in reality, and says why", async function () {
    const expired = await createServer("local-w2", await token("bbbbbb", -60_000));
    // nodefleet's renderer never passes a label the kubelet may not set; a hand-edited user data can.
    const refusedLabel = await createServer("local-w3", await token("cccccc", 3600_000), (u) =>
      u.replace("--labels 'node.kubernetes.io/pool=general", "--labels 'node-role.kubernetes.io/worker=,node.kubernetes.io/pool=general"),
    );
    for (const id of [expired, refusedLabel]) {
      await until(`server ${id} refused`, async () => (cloud.agent.machine(id)?.state === "refused" ? true : undefined)).catch(
        async (error: Error) => {
          const csrs = (await kube(cloud.plane.admin, "GET", "/apis/certificates.k8s.io/v1/certificatesigningrequests")) as {
            items: Array<{ spec: { username: string }; status: unknown }>;
          };
          throw new Error(
            `${error.message}: machine ${JSON.stringify(cloud.agent.machine(id))}; CSRs ${JSON.stringify(csrs.items.map((c) => [c.spec.username, c.status]))}`,
          );
        },
      );
    }
    assert.match((cloud.agent.machine(expired) as { reason: string }).reason, /refused the bootstrap token/);
    assert.match((cloud.agent.machine(refusedLabel) as { reason: string }).reason, /registering Node local-w3 was refused/);
    for (const name of ["local-w2", "local-w3"]) await assert.rejects(kube(cloud.plane.admin, "GET", `/api/v1/nodes/${name}`), /HTTP 404/);
    assert.ok(
      warnings.some((w) => w.includes("local-w2")),
      "the agent logged why",
    );
  });

  const readyHeartbeat = async (name: string): Promise<number | undefined> => {
    const n = (await kube(cloud.plane.admin, "GET", `/api/v1/nodes/${name}`)) as {
      status: { conditions?: Array<{ type: string; status: string; lastHeartbeatTime?: string }> };
    };
    const ready = n.status.conditions?.find((c) => c.type === "Ready" && c.status === "True");
    return ready?.lastHeartbeatTime ? Date.parse(ready.lastHeartbeatTime) : undefined;
  };

  it("exchanged with the fake Hetzner API only what Hetzner's OpenAPI document allows", function () {
    assert.ok(exchanges.length >= 4, `${exchanges.length} exchanges: three servers created, one deleted`);
    assert.deepEqual(exchanges.flatMap(hcloudOpenApiViolations), []);
  });

  it("keeps the fake cloud's servers and the cluster across a restart, and its joined machines Ready without their deleted tokens", async function () {
    // Joined before the restart; nodefleet deletes a joined member's token, so only the machine's own identity can bring it back.
    const kept = await createServer("local-w4", await token("dddddd", 3600_000));
    await until("Node local-w4 Ready", () => readyHeartbeat("local-w4"));
    await kube(cloud.plane.admin, "DELETE", "/api/v1/namespaces/kube-system/secrets/bootstrap-token-dddddd");
    // Joined too, but its machine lost its disk: it joins again with its (still valid) token and takes its existing Node back, as a kubelet does.
    const rejoined = await createServer("local-w5", await token("eeeeee", 3600_000));
    await until("Node local-w5 Ready", () => readyHeartbeat("local-w5"));

    await cloud.stop();
    rmSync(join(dir, "local", "machines", `${rejoined}.json`));
    const restarted = Date.now();
    // Heartbeats carry whole seconds.
    await new Promise((r) => setTimeout(r, 1100));
    cloud = await startLocalCloud({
      dataDir: dir,
      hcloudPort: 0,
      agentIntervalMs: 200,
      logger: { info() {}, warn: (record) => warnings.push(JSON.stringify(record)) },
    });
    const servers = (await (
      await fetch(`${cloud.env.HCLOUD_ENDPOINT}/servers`, { headers: { Authorization: `Bearer ${cloud.env.HCLOUD_TOKEN}` } })
    ).json()) as { servers: Array<{ name: string }> };
    assert.deepEqual(servers.servers.map((s) => s.name).sort(), ["local-w2", "local-w3", "local-w4", "local-w5"]);
    await kube(cloud.plane.admin, "GET", "/api/v1/nodes/local-w1");
    for (const [name, id] of [
      ["local-w4", kept],
      ["local-w5", rejoined],
    ] as const) {
      await until(`a heartbeat of ${name} after the restart`, async () => ((await readyHeartbeat(name))! > restarted ? true : undefined));
      assert.equal(cloud.agent.machine(id)?.state, "joined", `${name}: ${JSON.stringify(cloud.agent.machine(id))}`);
    }
  });

  it("comes back after `nodefleet local up` was killed: the processes it left are stopped and the cluster is kept", async function () {
    await cloud.stop();
    // A project directory without Pulumi.yaml: no stack file is written (not into this repository's stacks/).
    const child = spawn(process.execPath, [BIN, "local", "up", "--data-dir", dir, "--hcloud-port", "0", "--project-dir", dir], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    await new Promise<void>((ready, failed) => {
      let stderr = "";
      child.stderr.on("data", (chunk: Buffer) => {
        stderr += chunk.toString();
        if (stderr.includes("ready;")) ready();
      });
      child.once("exit", (code) => failed(new Error(`local up exited (${code}): ${stderr}`)));
    });
    const left = JSON.parse(readFileSync(join(dir, "local", "control-plane", "pids.json"), "utf8")) as Array<{ pid: number }>;
    child.kill("SIGKILL");
    await new Promise((r) => child.once("exit", r));
    assert.ok(
      left.every(({ pid }) => existsSync(`/proc/${pid}`)),
      "the killed process left its control plane running",
    );
    cloud = await startLocalCloud({ dataDir: dir, hcloudPort: 0, agentIntervalMs: 200, logger: quiet });
    assert.ok(
      left.every(({ pid }) => !existsSync(`/proc/${pid}`) || readFileSync(`/proc/${pid}/stat`, "utf8").includes(") Z ")),
      "the leftovers were stopped",
    );
    await kube(cloud.plane.admin, "GET", "/api/v1/nodes/local-w1");
  });
});
