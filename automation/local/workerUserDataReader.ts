/**
 * What the node agent reads from a server's user data, as cloud-init and the join script would use
 * it on a real machine: the hostname, the k0s join token written to the token file (a gzipped,
 * base64 kubeconfig), and the `k0s install worker` flags (labels, taints, the kubelet's
 * --provider-id, and the private subnet its --node-ip is waited for in). Anything a real join would
 * trip on is an error saying what.
 */
import { parse as parseShell } from "shell-quote";
import { parse as parseYaml } from "yaml";
import { K0S_BOOTSTRAP_SCRIPT_PATH, K0S_TOKEN_FILE } from "../../components/bootstrap/k0sWorkerCloudConfig";
import { decodeK0sJoinToken } from "../../components/bootstrap/k0sJoinToken";
import { PRIVATE_EGRESS_SCRIPT_PATH, PRIVATE_EGRESS_UNIT } from "../../components/bootstrap/privateEgressRoute";
import { HCLOUD_SERVER_ID_VARIABLE } from "../../components/bootstrap/hcloudServerId";

export interface WorkerJoinIntent {
  readonly hostname: string;
  readonly server: string;
  readonly caPem: string;
  readonly bootstrapToken: string;
  /**
   * The kubelet's --provider-id. With `serverIdUrl` it still holds `${hcloud_server_id}`, which the
   * script fills in at boot (withServerId).
   */
  readonly providerID: string;
  /** Where the script reads its server id for the providerID (bootstrap/hcloudServerId.ts), when it does. */
  readonly serverIdUrl?: string;
  /** What the installed k0s worker's kubelet reports: the k0s version without its `.N` build, `v1.33.4+k0s`. */
  readonly kubeletVersion: string;
  readonly labels: Record<string, string>;
  readonly taints: Array<{ key: string; value?: string; effect: string }>;
  /**
   * The kubelet's `--node-ip` as the join script finds it (components/bootstrap/nodeIp.ts): the
   * private subnet whose address it waits for, and for how long. Absent: the kubelet's choice.
   */
  readonly nodeIpWait?: { readonly subnet: string; readonly waitSeconds: number };
  /**
   * The gateway the user data routes the node's default through before the join runs
   * (components/bootstrap/privateEgressRoute.ts): a node without public IPv4 needs it. Absent: none.
   */
  readonly privateEgress?: { readonly gateway: string };
}

export class UserDataError extends Error {
  override readonly name = "UserDataError";
}

interface CloudConfig {
  hostname?: string;
  write_files?: Array<{ path?: string; content?: string }>;
  runcmd?: unknown[];
}

/** Variables the script sets at boot expand to nothing, except the server id, kept for withServerId. */
function bootVariables(name: string): string {
  return name === HCLOUD_SERVER_ID_VARIABLE ? SERVER_ID_PLACEHOLDER : "";
}

/** The words of the `install_args=( ... )` array in the join script. */
function installArgs(script: string): string[] {
  const block = /install_args=\(\n([\s\S]*?)\n\s*\)/.exec(script)?.[1];
  if (!block) throw new UserDataError("the join script has no k0s install arguments");
  return parseShell(block.replace(/\\\n/g, " "), bootVariables).map((word) => (typeof word === "string" ? word : ""));
}

function flag(args: string[], name: string): string | undefined {
  const index = args.indexOf(name);
  if (index >= 0) return args[index + 1];
  return args.find((a) => a.startsWith(`${name}=`))?.slice(name.length + 1);
}

function parseLabels(text: string | undefined): Record<string, string> {
  if (!text) return {};
  return Object.fromEntries(
    text.split(",").map((pair) => {
      const eq = pair.indexOf("=");
      if (eq <= 0) throw new UserDataError(`malformed --labels entry ${JSON.stringify(pair)}`);
      return [pair.slice(0, eq), pair.slice(eq + 1)];
    }),
  );
}

function parseTaints(text: string | undefined): WorkerJoinIntent["taints"] {
  if (!text) return [];
  return text.split(",").map((entry) => {
    const match = /^([^=:]+)(?:=([^:]*))?:(NoSchedule|PreferNoSchedule|NoExecute)$/.exec(entry);
    if (!match) throw new UserDataError(`malformed --taints entry ${JSON.stringify(entry)}`);
    return { key: match[1]!, ...(match[2] !== undefined ? { value: match[2] } : {}), effect: match[3]! };
  });
}

export function readK0sWorkerUserData(userData: string): WorkerJoinIntent {
  if (!userData.startsWith("#cloud-config")) throw new UserDataError("the user data is not a #cloud-config document");
  const config = parseYaml(userData) as CloudConfig | null;
  const file = (path: string) => config?.write_files?.find((f) => f.path === path)?.content;
  const token = file(K0S_TOKEN_FILE);
  const script = file(K0S_BOOTSTRAP_SCRIPT_PATH);
  if (!config?.hostname) throw new UserDataError("the user data sets no hostname");
  if (!token) throw new UserDataError(`the user data writes no ${K0S_TOKEN_FILE}`);
  if (!script) throw new UserDataError(`the user data writes no ${K0S_BOOTSTRAP_SCRIPT_PATH}`);

  let kubeconfig: { clusters?: Array<{ cluster: Record<string, string> }>; users?: Array<{ name: string; user: { token?: string } }> };
  try {
    kubeconfig = parseYaml(decodeK0sJoinToken(token.trim()));
  } catch (error) {
    throw new UserDataError(`the join token does not decode: ${(error as Error).message}`);
  }
  const cluster = kubeconfig.clusters?.[0]?.cluster;
  const user = kubeconfig.users?.[0];
  if (!cluster?.server || !cluster["certificate-authority-data"])
    throw new UserDataError("the join token's kubeconfig has no server or CA");
  if (user?.name !== "kubelet-bootstrap" || !user.user.token)
    throw new UserDataError("the join token's user is not kubelet-bootstrap with a token (k0s refuses it)");

  const k0sVersion = /^k0s_version='?(v\d+\.\d+\.\d+\+k0s)\.\d+'?$/m.exec(script)?.[1];
  if (!k0sVersion) throw new UserDataError("the join script names no k0s version");
  const args = installArgs(script);
  if (args[0] !== "worker") throw new UserDataError("the join script does not install a k0s worker");
  const extra = parseShell(flag(args, "--kubelet-extra-args") ?? "", bootVariables).map(String);
  const providerID = flag(extra, "--provider-id");
  if (!providerID) throw new UserDataError("the kubelet gets no --provider-id");
  return {
    hostname: flag(extra, "--hostname-override") ?? config.hostname,
    server: cluster.server,
    caPem: Buffer.from(cluster["certificate-authority-data"], "base64").toString("utf8"),
    bootstrapToken: user.user.token,
    providerID,
    kubeletVersion: k0sVersion,
    labels: parseLabels(flag(args, "--labels")),
    taints: parseTaints(flag(args, "--taints")),
    ...nodeIpWait(script),
    ...privateEgress(config, file(PRIVATE_EGRESS_SCRIPT_PATH)),
    ...serverIdUrl(script, providerID),
  };
}

/** The default route the user data sets before the join, when it writes the egress script and starts its unit first. */
function privateEgress(config: CloudConfig, script: string | undefined): Pick<WorkerJoinIntent, "privateEgress"> {
  if (script === undefined) return {};
  const gateway = /^gateway=(\d+\.\d+\.\d+\.\d+)$/m.exec(script)?.[1];
  if (!gateway) throw new UserDataError(`${PRIVATE_EGRESS_SCRIPT_PATH} names no gateway`);
  const commands = (config.runcmd ?? []).map((c) => (Array.isArray(c) ? c.map(String).join(" ") : String(c)));
  const enable = commands.findIndex((c) => c.includes(PRIVATE_EGRESS_UNIT));
  const join = commands.findIndex((c) => c.includes(K0S_BOOTSTRAP_SCRIPT_PATH));
  if (enable < 0 || enable > join)
    throw new UserDataError(`the user data writes ${PRIVATE_EGRESS_SCRIPT_PATH} but does not start ${PRIVATE_EGRESS_UNIT} before the join`);
  return { privateEgress: { gateway } };
}

const SERVER_ID_PLACEHOLDER = `\${${HCLOUD_SERVER_ID_VARIABLE}}`;

/** Where the script reads `hcloud_server_id`, which its providerID names; an error if it names it but never sets it. */
function serverIdUrl(script: string, providerID: string): Pick<WorkerJoinIntent, "serverIdUrl"> {
  const read = new RegExp(`^\\s*${HCLOUD_SERVER_ID_VARIABLE}="\\$\\(curl [^)]*?(http://\\S+)\\)"$`, "m").exec(script);
  if (!providerID.includes(SERVER_ID_PLACEHOLDER)) return {};
  if (!read) throw new UserDataError(`the kubelet's --provider-id names $${HCLOUD_SERVER_ID_VARIABLE}, which the join script never reads`);
  return { serverIdUrl: read[1]! };
}

/** The intent's providerID once the machine has read its server id. */
export function withServerId(providerID: string, serverId: string): string {
  if (!/^[1-9]\d*$/.test(serverId))
    throw new UserDataError(`the metadata service's instance-id ${JSON.stringify(serverId)} is not a server id`);
  return providerID.replace(SERVER_ID_PLACEHOLDER, serverId);
}

/** The subnet and wait of the script's node-IP discovery (nodeIp.ts renders both), when it has one. */
function nodeIpWait(script: string): Pick<WorkerJoinIntent, "nodeIpWait"> {
  const subnet = /awk -v net=(\d+\.\d+\.\d+\.\d+) -v bits=(\d+)/.exec(script);
  if (!subnet) return {};
  const wait = /NODEFLEET_NODE_IP_WAIT_SECONDS:-(\d+)/.exec(script);
  if (!wait) throw new UserDataError("the join script waits for its node IP without a time limit");
  return { nodeIpWait: { subnet: `${subnet[1]}/${subnet[2]}`, waitSeconds: Number(wait[1]) } };
}
