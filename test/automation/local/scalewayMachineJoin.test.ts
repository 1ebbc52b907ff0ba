/**
 * An Elastic Metal machine of the fake Scaleway API joins a real control plane: the kubeadm
 * self-join script the Elastic Metal pool renders runs over real SSH in the machine, its stand-ins
 * "install" containerd and the kubelet, and the kubelet's start hands its bootstrap kubeconfig and
 * flags to the host (machineKubelet.ts), which joins through the node agent's TLS bootstrap: the
 * Node registers with the flags' providerID, labels and taints, the script sees the kubelet's own
 * kubeconfig, removes the bootstrap one and ends well, and nothing on the host changed.
 */
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import { renderBootstrapKubeconfig } from "../../../components/bootstrap/kubeadmBootstrapKubeconfig";
import { KUBELET_PATHS, renderKubeletConfig } from "../../../components/bootstrap/kubeletConfig";
import { renderSelfJoinScript } from "../../../components/bootstrap/selfJoinScript";
import { type ControlPlane, startControlPlane } from "../../../automation/local/controlPlane";
import { type FakeScaleway, buildFakeScaleway } from "../../../automation/local/fakeScaleway/fakeScalewayApi";
import { kube } from "../../../automation/local/kubeClient";
import type { Machine } from "../../../automation/local/machines/machine";
import { SSHD } from "../../../automation/local/machines/openSshServer";
import { AutomationEngine } from "../../../automation/engine/automationEngine";
import { missingTools, skipUnlessAvailable } from "../../support/toolchainRequirement";
import { until } from "../../support/until";
import { TEST_KUBELET } from "../../support/selfJoinInput";
import { clusterSchema } from "../../../components/fleet/fleetSpec";
import type { NodeMember } from "../../../components/fleet/nodeMember";
import { hostFirewallOf, joinScriptRenderer } from "../../../components/scaleway/elasticMetalNodePool";
import { PRIVATE_IPV4_LABEL, privateAddressCidr } from "../../../components/scaleway/elasticMetalPlan";
import { HOST_FIREWALL_UNIT } from "../../../components/bootstrap/hostFirewall";
import { NETPLAN_VLAN_PATH } from "../../../components/bootstrap/netplanVlan";
import { K0S_KUBELET_CONF, K0S_TOKEN_FILE } from "../../../components/bootstrap/k0sWorkerCloudConfig";
import { localFleetConfig } from "../../../automation/local/localStack";

const SECRET = randomUUID();
const ZONE = "/baremetal/v1/zones/fr-par-2";
const UBUNTU_NOBLE = "7d1914e1-f4ab-47fc-bd8c-b3a23143e87a";
const KUBELET = TEST_KUBELET;

describe("fake Scaleway API: an Elastic Metal machine self-joins over SSH (real control plane)", function () {
  this.timeout(300_000);
  let dir: string;
  let plane: ControlPlane | undefined;
  let fake: FakeScaleway | undefined;
  const logged: string[] = [];

  before(async function () {
    const missing = [SSHD, "/usr/bin/ssh", "/usr/bin/unshare"].filter((tool) => !existsSync(tool));
    skipUnlessAvailable(
      this,
      missing.length ? `${missing.join(", ")} not installed (Debian: openssh-server, openssh-client, util-linux)` : undefined,
    );
    skipUnlessAvailable(
      this,
      process.getuid?.() === 0 ? undefined : "the machines' sandbox needs root (mount namespaces, overlayfs, port 22)",
    );
    skipUnlessAvailable(this, missingTools("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"));
    dir = mkdtempSync(join(tmpdir(), "nodefleet-scwjoin-"));
    plane = await startControlPlane({ dir: join(dir, "control-plane") });
    fake = buildFakeScaleway({
      secretKey: SECRET,
      projectId: randomUUID(),
      stateFile: join(dir, "scw.json"),
      actionMs: 50,
      installMs: 200,
      machinesDir: join(dir, "machines"),
      // Apart from fakeScalewayMachines.test.ts's machines (127.0.4.x), which may run at the same time.
      machineBlock: 1,
      log: (message) => logged.push(message),
    });
    url = await fake.app.listen({ port: 0, host: "127.0.0.1" });
    clientKey = join(dir, "client_ed25519");
    execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", clientKey]);
    keyId = (await api("POST", "/iam/v1alpha1/ssh-keys", { name: "ops", public_key: readFileSync(`${clientKey}.pub`, "utf8") })).id;
  });
  after(async function () {
    await fake?.app.close();
    await plane?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  let url: string;
  let clientKey: string;
  let keyId: string;
  const api = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${url}${path}`, {
      method,
      headers: { "X-Auth-Token": SECRET, "Content-Type": "application/json" },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    return (await response.json()) as Record<string, any>;
  };
  const hostState = () => ({
    kubeletConf: existsSync(KUBELET_PATHS.kubeconfig),
    swaps: readFileSync("/proc/swaps", "utf8"),
    hostname: execFileSync("hostname", { encoding: "utf8" }),
    kubeletBinary: existsSync("/usr/bin/kubelet"),
  });

  /** An installed server named `name` and its running machine. */
  const installedMachine = async (name: string) => {
    const offer = (await api("GET", `${ZONE}/offers?name=EM-A610R-NVME`)).offers[0].id;
    const server = await api("POST", `${ZONE}/servers`, {
      offer_id: offer,
      name,
      install: { os_id: UBUNTU_NOBLE, hostname: name, ssh_key_ids: [keyId] },
    });
    const machine = await until(
      `the machine of ${name}`,
      () => fake!.machines?.machine(server.id),
      30_000,
      () => logged.join("\n"),
      100,
    );
    return { serverId: server.id as string, machine };
  };

  /** A bootstrap token of the shape nodefleet writes, and the kubeadm self-join script the pool renders with it. */
  const selfJoinScript = async (name: string, tokenId: string, providerID: string) => {
    await kube(plane!.admin, "POST", "/api/v1/namespaces/kube-system/secrets", {
      apiVersion: "v1",
      kind: "Secret",
      type: "bootstrap.kubernetes.io/token",
      metadata: { name: `bootstrap-token-${tokenId}`, namespace: "kube-system" },
      stringData: {
        "token-id": tokenId,
        "token-secret": "0123456789abcdef",
        expiration: new Date(Date.now() + 3600_000).toISOString().replace(/\.\d{3}Z$/, "Z"),
        "usage-bootstrap-authentication": "true",
      },
    });
    return renderSelfJoinScript({
      kind: "kubeadm",
      kubernetesVersion: "v1.33.4",
      caCertificate: plane!.admin.caPem,
      bootstrapKubeconfig: renderBootstrapKubeconfig({
        apiServer: plane!.server,
        caCertificate: plane!.admin.caPem,
        token: `${tokenId}.0123456789abcdef`,
      }),
      kubeletConfig: renderKubeletConfig({ kubelet: KUBELET, providerID }),
      hostname: name,
      providerID,
      labels: { "nodefleet.io/pool": "em" },
      taints: [{ key: "nodefleet.io/bare-metal", value: "true", effect: "NoSchedule" }],
    });
  };

  /** The Node registered as the flags said, Ready; the machine holds the kubelet's own credentials. */
  const assertJoined = async (name: string, providerID: string, machine: Machine) => {
    const node = (await kube(plane!.admin, "GET", `/api/v1/nodes/${name}`)) as {
      metadata: { labels: Record<string, string> };
      spec: { providerID: string; taints?: Array<{ key: string; value?: string; effect: string }> };
      status: { conditions: Array<{ type: string; status: string }> };
    };
    assert.equal(node.spec.providerID, providerID);
    assert.equal(node.metadata.labels["nodefleet.io/pool"], "em");
    assert.ok(
      node.spec.taints?.some((t) => t.key === "nodefleet.io/bare-metal" && t.value === "true" && t.effect === "NoSchedule"),
      JSON.stringify(node.spec.taints),
    );
    assert.equal(node.status.conditions.find((c) => c.type === "Ready")?.status, "True");
    assert.deepEqual(
      machine
        .packages()
        .filter((p) => ["containerd", "kubelet"].includes(p))
        .sort(),
      ["containerd", "kubelet"],
    );
    const records = machine.records().map((r) => `${r.tool} ${r.verb} ${r.subject}`);
    for (const expected of ["systemctl restart containerd.service", "systemctl restart kubelet.service", "swapoff -a -a"])
      assert.ok(records.includes(expected), `${expected} in ${records.join("; ")}`);
    assert.ok(
      records.some((r) => r.startsWith("kubelet start /usr/bin/kubelet --config=")),
      records.join("; "),
    );
    assert.match(
      machine.ownFile(KUBELET_PATHS.kubeconfig) ?? "",
      /client-certificate: \/var\/lib\/kubelet\/pki\/kubelet-client-current.pem/,
    );
    assert.equal(machine.ownFile(KUBELET_PATHS.bootstrapKubeconfig), undefined, "the bootstrap kubeconfig removed");
  };

  /** Runs `script` with `bash -s` in the machine over real ssh, pinned to its ed25519 host key; its stderr once it ended well. */
  const runOverSsh = async (machine: Machine, script: string): Promise<string> => {
    const knownHosts = join(dir, "known_hosts");
    writeFileSync(knownHosts, `${machine.address} ${machine.hostKey("ed25519")}\n`);
    // Not spawnSync: the machine's kubelet is served by this process's event loop while the script waits.
    const ssh = spawn(
      "ssh",
      [
        ...["-F", "/dev/null", "-i", clientKey, "-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes", "-o", "StrictHostKeyChecking=yes"],
        ...["-o", `UserKnownHostsFile=${knownHosts}`, "-o", "GlobalKnownHostsFile=/dev/null", `${userInfo().username}@${machine.address}`],
        "bash -s",
      ],
      { stdio: ["pipe", "pipe", "pipe"] },
    );
    let stderr = "";
    ssh.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    ssh.stdout.resume();
    ssh.stdin.end(script);
    const timer = setTimeout(() => ssh.kill("SIGKILL"), 180_000);
    const status = await new Promise<number | null>((resolve) => ssh.once("exit", (code) => resolve(code)));
    clearTimeout(timer);
    assert.equal(status, 0, `the self-join script failed:\n${stderr}\n${logged.join("\n")}`);
    return stderr;
  };

  it("runs the kubeadm self-join script in the machine over ssh and registers its Node through TLS bootstrap", async function () {
    const hostBefore = hostState();
    const { serverId, machine } = await installedMachine("em-join-1");
    const providerID = `nodefleet:///local/${serverId}`;
    const script = await selfJoinScript("em-join-1", "emjoin", providerID);
    const stderr = await runOverSsh(machine, script);
    assert.match(stderr, /nodefleet: joined as em-join-1/);
    await assertJoined("em-join-1", providerID, machine);
    assert.deepEqual(hostState(), hostBefore, "nothing changed on the host");
    assert.deepEqual(logged, [], "nothing went wrong on the way");
  });

  it("runs the Elastic Metal pool's k0s self-join, private network VLAN and host firewall in the machine", async function () {
    const hostBefore = hostState();
    const { serverId, machine } = await installedMachine("em-join-3");
    const providerID = `nodefleet:///local/${serverId}`;
    await selfJoinScript("em-join-3", "emjoi3", providerID);
    // The local stack's cluster (k0s), and the pool's own renderer: what `pulumi up --stack local` sends.
    const cluster = clusterSchema.parse(localFleetConfig(plane!)["nodefleet:cluster"]);
    const member = {
      hostname: "em-join-3",
      providerID,
      labels: { "nodefleet.io/pool": "em" },
      taints: [{ key: "nodefleet.io/bare-metal", value: "true", effect: "NoSchedule" }],
    } as unknown as NodeMember;
    const render = joinScriptRenderer(
      cluster,
      member,
      hostFirewallOf({ cluster, pool: { ssh: { port: 22 } } } as Parameters<typeof hostFirewallOf>[0]),
    );
    const script = render("emjoi3.0123456789abcdef", privateAddressCidr("172.16.0.7/22", "172.16.0.0/22"), 1234);
    await runOverSsh(machine, script);
    const node = (await kube(plane!.admin, "GET", "/api/v1/nodes/em-join-3")) as {
      metadata: { labels: Record<string, string> };
      spec: { providerID: string; taints?: Array<{ key: string; value?: string; effect: string }> };
      status: { conditions: Array<{ type: string; status: string }>; addresses?: Array<{ type: string; address: string }> };
    };
    assert.equal(node.spec.providerID, providerID);
    assert.equal(node.metadata.labels["nodefleet.io/pool"], "em");
    assert.equal(node.metadata.labels[PRIVATE_IPV4_LABEL], "172.16.0.7");
    assert.ok(
      node.spec.taints?.some((t) => t.key === "nodefleet.io/bare-metal" && t.effect === "NoSchedule"),
      JSON.stringify(node.spec.taints),
    );
    assert.equal(node.status.conditions.find((c) => c.type === "Ready")?.status, "True");
    assert.equal(node.status.addresses?.find((a) => a.type === "InternalIP")?.address, "172.16.0.7", "the VLAN address is the node IP");
    const records = machine.records().map((r) => `${r.tool} ${r.verb} ${r.subject}`);
    // The real netplan generator accepted the VLAN file the script wrote, then the apply brought it up.
    for (const expected of ["netplan generate ok", "netplan apply ", "k0s start ", `systemctl restart ${HOST_FIREWALL_UNIT}`])
      assert.ok(
        records.some((r) => r.startsWith(expected.trim())),
        `${expected} in ${records.join("; ")}`,
      );
    assert.match(machine.ownFile(NETPLAN_VLAN_PATH) ?? "", /id: 1234/);
    assert.match(machine.ownFile(K0S_KUBELET_CONF) ?? "", /client-certificate/);
    assert.equal(machine.ownFile(K0S_TOKEN_FILE), undefined, "the join token removed");
    assert.deepEqual(hostState(), hostBefore, "nothing changed on the host");
    assert.deepEqual(logged, [], "nothing went wrong on the way");
  });

  it("runs it through the command provider plugin on the real engine, pinned to the machine's host key", async function () {
    skipUnlessAvailable(this, missingTools("pulumi", "pulumi-resource-command"));
    const hostBefore = hostState();
    const { serverId, machine } = await installedMachine("em-join-2");
    const providerID = `nodefleet:///local/${serverId}`;
    const script = await selfJoinScript("em-join-2", "emjoi2", providerID);
    const engine = new AutomationEngine({
      dataDir: join(dir, "engine"),
      env: { ...process.env, PULUMI_CONFIG_PASSPHRASE: "machine-join" },
      logger: { info() {}, warn() {}, error() {} },
    });
    const run = await engine.up({
      stackName: "machinejoin",
      program: { module: join(__dirname, "..", "..", "support", "machineJoinProgram.js") },
      config: {
        "machinejoin:address": { value: machine.address },
        "machinejoin:user": { value: userInfo().username },
        "machinejoin:privateKey": { value: readFileSync(clientKey, "utf8"), secret: true },
        // The ECDSA key: not the type an OpenSSH client prefers first, so the pin decides.
        "machinejoin:hostKey": { value: machine.hostKey("ecdsa") },
        "machinejoin:script": { value: script, secret: true },
      },
    });
    assert.equal(run.steps.filter((s) => s.error).length, 0, JSON.stringify(run.steps.filter((s) => s.error)));
    assert.match(String(run.outputs.joinStderr ?? ""), /nodefleet: joined as em-join-2/);
    await assertJoined("em-join-2", providerID, machine);
    assert.deepEqual(hostState(), hostBefore, "nothing changed on the host");
    assert.deepEqual(logged, [], "nothing went wrong on the way");
  });
});
