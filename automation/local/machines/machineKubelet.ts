/**
 * The host's side of a machine's kubelet stand-in (kubernetesStandIns.ts): when the machine
 * "starts" its kubelet, the stand-in leaves the effective command line in the machine; this reads
 * it and the bootstrap kubeconfig it names, joins through the node agent's TLS bootstrap
 * (kubeletBootstrap.ts: a CSR as the bootstrap token, the Node registered with the flags' name,
 * providerID, labels, taints and node IP), and writes the kubelet's own kubeconfig and client
 * certificate into the machine, where the self-join script waits for them. Then it reports the Node
 * Ready now and then, as a kubelet's heartbeat does, and does a kubelet's part for the pods bound to
 * it (kubeletPods.ts: starts them, confirms the deletion of evicted ones, so a drain finishes),
 * both only while its node agent's unit runs. A k0s worker's start (the k0s stand-in) joins the same
 * way from the arguments `k0s install worker` recorded and the kubeconfig in its join token.
 */
import { spawnSync } from "node:child_process";
import { parse } from "yaml";
import { type KubeIdentity } from "../kubeClient";
import { KubeletJoinError, joinAsKubelet, reportReady } from "../kubeletBootstrap";
import { syncNodePods } from "../kubeletPods";
import { decodeK0sJoinToken } from "../../../components/bootstrap/k0sJoinToken";
import { K0S_KUBELET_CONF } from "../../../components/bootstrap/k0sWorkerCloudConfig";
import { NODE_AGENT_UNITS } from "../../../components/bootstrap/kubeletRetirement";
import { K0S_INSTALL_PATH, K0S_START_PATH, KUBELET_START_PATH } from "./kubernetesStandIns";
import type { Machine } from "./machine";

/** Where the kubelet keeps its client certificate and key (one PEM file), as a bootstrapped kubelet does. */
const CLIENT_PEM = "/var/lib/kubelet/pki/kubelet-client-current.pem";
const HEARTBEAT_MS = 10_000;
/** How often the kubelet looks at its pods (a real one watches them). */
const POD_SYNC_MS = 1_000;

/** A kubelet command line or bootstrap kubeconfig the host cannot join from; said in the machine's log line. */
class MachineKubeletError extends Error {
  override readonly name = "MachineKubeletError";
}

/** The `--name=value` flags of a command line (the kubelet's are all of that form). */
function flagsOf(commandLine: string): Map<string, string> {
  const flags = new Map<string, string>();
  for (const word of commandLine.trim().split(/\s+/)) {
    const match = /^--([a-z0-9-]+)=(.*)$/.exec(word);
    if (match) flags.set(match[1]!, match[2]!);
  }
  return flags;
}

/** `key=value,...` of --node-labels. */
function labelsOf(text: string | undefined): Record<string, string> {
  if (!text) return {};
  return Object.fromEntries(text.split(",").map((pair) => [pair.slice(0, pair.indexOf("=")), pair.slice(pair.indexOf("=") + 1)]));
}

/** `key[=value]:Effect,...` of --register-with-taints. */
function taintsOf(text: string | undefined): Array<{ key: string; value?: string; effect: string }> {
  if (!text) return [];
  return text.split(",").map((taint) => {
    const [keyValue = "", effect = ""] = taint.split(":");
    const [key = "", value] = keyValue.split("=");
    return { key, ...(value !== undefined ? { value } : {}), effect };
  });
}

/** The API server, its CA and the bootstrap token of a kubeadm-style bootstrap kubeconfig. */
function bootstrapCredentials(text: string): { server: string; caPem: string; token: string } {
  const config = parse(text) as {
    clusters?: Array<{ cluster?: { server?: string; "certificate-authority-data"?: string } }>;
    users?: Array<{ user?: { token?: string } }>;
  };
  const cluster = config.clusters?.[0]?.cluster;
  const token = config.users?.[0]?.user?.token;
  if (!cluster?.server || !cluster["certificate-authority-data"] || !token)
    throw new MachineKubeletError(
      "the bootstrap kubeconfig needs clusters[0].cluster.server, certificate-authority-data and users[0].user.token",
    );
  return { server: cluster.server, caPem: Buffer.from(cluster["certificate-authority-data"], "base64").toString("utf8"), token };
}

/** One machine's kubelet, as the host runs it. */
export class MachineKubelet {
  private handledStart: string | undefined;
  private handledK0sStart: string | undefined;
  private node: { identity: KubeIdentity; name: string; nodeIp?: string } | undefined;
  private lastHeartbeat = 0;
  private lastPodSync = 0;

  constructor(
    private readonly machine: Machine,
    /** The machine's session command (machineSandbox.ts sessionCommand): how the host writes inside it. */
    private readonly sessionCommand: string,
  ) {}

  /** Joins on a new start of the kubelet, else sends the heartbeat when due; throws what a kubelet would log. */
  async pass(): Promise<void> {
    const start = this.machine.ownFile(KUBELET_START_PATH)?.trim();
    if (start && start !== this.handledStart) {
      this.handledStart = start;
      // A restarted kubelet knows only what its files hold.
      this.node = undefined;
      try {
        await this.join(start.slice(start.indexOf(" ") + 1));
      } catch (error) {
        // As a kubelet under systemd's Restart=always: an API server it could not reach is tried again.
        if (error instanceof KubeletJoinError && error.transient) this.handledStart = undefined;
        throw error;
      }
      return;
    }
    const k0sStart = this.machine.ownFile(K0S_START_PATH)?.trim();
    if (k0sStart && k0sStart !== this.handledK0sStart) {
      this.handledK0sStart = k0sStart;
      this.node = undefined;
      try {
        await this.joinK0s();
      } catch (error) {
        if (error instanceof KubeletJoinError && error.transient) this.handledK0sStart = undefined;
        throw error;
      }
      return;
    }
    // A stopped node agent (k0s's worker unit, or the kubelet's) sends no heartbeat and runs no pods.
    const running = NODE_AGENT_UNITS.some((unit) => this.machine.unitActive(unit));
    if (this.node && running && Date.now() - this.lastHeartbeat > HEARTBEAT_MS) {
      this.lastHeartbeat = Date.now();
      await reportReady(this.node.identity, this.node.name, undefined, undefined, this.node.nodeIp);
    }
    if (this.node && running && Date.now() - this.lastPodSync > POD_SYNC_MS) {
      this.lastPodSync = Date.now();
      await syncNodePods(this.node.identity, this.node.name);
    }
  }

  private async join(commandLine: string): Promise<void> {
    const flags = flagsOf(commandLine);
    const bootstrapPath = flags.get("bootstrap-kubeconfig");
    const kubeconfigPath = flags.get("kubeconfig");
    if (!kubeconfigPath || !bootstrapPath)
      throw new MachineKubeletError("the kubelet's command line needs --kubeconfig and --bootstrap-kubeconfig");
    await this.joinAs(kubeconfigPath, flags, () => {
      const bootstrap = this.machine.ownFile(bootstrapPath);
      if (bootstrap === undefined) throw new MachineKubeletError(`no bootstrap kubeconfig at ${bootstrapPath}`);
      return bootstrap;
    });
  }

  /**
   * A k0s worker's start: the arguments `k0s install worker` was given (the token file, --labels,
   * --taints, --kubelet-extra-args), the kubeconfig in the join token, the kubelet's own at k0s's path.
   */
  private async joinK0s(): Promise<void> {
    const args = (this.machine.ownFile(K0S_INSTALL_PATH) ?? "").split("\n").filter((line) => line !== "");
    if (args[0] !== "worker") throw new MachineKubeletError(`k0sworker started without \`k0s install worker\` (${K0S_INSTALL_PATH})`);
    const value = (name: string) => {
      const at = args.indexOf(name);
      return at < 0 ? undefined : args[at + 1];
    };
    const flags = flagsOf(value("--kubelet-extra-args") ?? "");
    const labels = value("--labels");
    const taints = value("--taints");
    if (labels !== undefined) flags.set("node-labels", labels);
    if (taints !== undefined) flags.set("register-with-taints", taints);
    const tokenFile = value("--token-file");
    await this.joinAs(K0S_KUBELET_CONF, flags, () => {
      const token = tokenFile === undefined ? undefined : this.machine.ownFile(tokenFile);
      if (token === undefined) throw new MachineKubeletError(`no k0s join token at ${tokenFile ?? "(no --token-file)"}`);
      return decodeK0sJoinToken(token.trim());
    });
  }

  /** Joins with the kubelet flags, writing the kubelet's own kubeconfig to `kubeconfigPath`, unless it has one. */
  private async joinAs(kubeconfigPath: string, flags: Map<string, string>, bootstrapKubeconfig: () => string): Promise<void> {
    const nodeName = flags.get("hostname-override") ?? this.machine.name;
    const nodeIp = flags.get("node-ip");
    // A kubelet with its own kubeconfig does not bootstrap again (after a restart of the local cloud: read back).
    const own = this.machine.ownFile(kubeconfigPath);
    const pem = this.machine.ownFile(CLIENT_PEM);
    if (own !== undefined && pem !== undefined) {
      const cluster = (parse(own) as { clusters?: Array<{ cluster?: { server?: string; "certificate-authority-data"?: string } }> })
        .clusters?.[0]?.cluster;
      const certEnd = pem.indexOf("-----END CERTIFICATE-----") + "-----END CERTIFICATE-----\n".length;
      if (cluster?.server && cluster["certificate-authority-data"]) {
        const identity = {
          server: cluster.server,
          caPem: Buffer.from(cluster["certificate-authority-data"], "base64").toString("utf8"),
          certPem: pem.slice(0, certEnd),
          keyPem: pem.slice(certEnd),
        };
        this.node = { identity, name: nodeName, ...(nodeIp ? { nodeIp } : {}) };
        return;
      }
    }
    const { server, caPem, token } = bootstrapCredentials(bootstrapKubeconfig());
    const identity = await joinAsKubelet({
      server,
      caPem,
      bootstrapToken: token,
      nodeName,
      providerID: flags.get("provider-id") ?? "",
      labels: labelsOf(flags.get("node-labels")),
      taints: taintsOf(flags.get("register-with-taints")),
      ...(nodeIp ? { nodeIp } : {}),
    });
    const kubeconfig = [
      "apiVersion: v1",
      "kind: Config",
      "clusters:",
      "- name: default-cluster",
      "  cluster:",
      `    server: ${server}`,
      `    certificate-authority-data: ${Buffer.from(caPem).toString("base64")}`,
      "contexts:",
      "- name: default-context",
      "  context: { cluster: default-cluster, user: default-auth, namespace: default }",
      "current-context: default-context",
      "users:",
      "- name: default-auth",
      `  user: { client-certificate: ${CLIENT_PEM}, client-key: ${CLIENT_PEM} }`,
      "",
    ].join("\n");
    this.writeInside(CLIENT_PEM, `${identity.certPem}${identity.keyPem}`);
    this.writeInside(kubeconfigPath, kubeconfig);
    this.node = { identity, name: nodeName, ...(nodeIp ? { nodeIp } : {}) };
    this.lastHeartbeat = Date.now();
  }

  /** Writes a file inside the running machine (through its session command: the host never writes its mounted upper layer). */
  private writeInside(path: string, content: string): void {
    const result = spawnSync(this.sessionCommand, [], {
      input: content,
      encoding: "utf8",
      timeout: 30_000,
      env: { PATH: "/usr/sbin:/usr/bin:/sbin:/bin", SSH_ORIGINAL_COMMAND: `umask 077; mkdir -p "$(dirname '${path}')" && cat > '${path}'` },
    });
    if (result.status !== 0) throw new MachineKubeletError(`writing ${path} in machine ${this.machine.name} failed: ${result.stderr}`);
  }
}
