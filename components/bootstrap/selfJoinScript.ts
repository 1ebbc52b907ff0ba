/**
 * The self-join bash script: what a node runs (over SSH, or from cloud-init) to join an existing
 * cluster. kubeadm: containerd and the kubelet from pkgs.k8s.io, the bootstrap kubeconfig, the
 * kubelet config and CA, a systemd drop-in with the node's identity flags. k0s: the join token file
 * and the same worker bootstrap as Hetzner Cloud nodes (k0sWorkerCloudConfig.ts). On Elastic Metal
 * the VLAN sub-interface comes up first. Idempotent, never traces (it carries the bootstrap token),
 * removes the secrets once the kubelet holds its own credentials, and honours `NODEFLEET_ROOT` as
 * its filesystem root so tests can run it unprivileged.
 */
import { DNS_LABEL, type KubeletSettings, type Taint } from "../fleet/fleetSpec";
import { encodeK0sJoinToken } from "./k0sJoinToken";
import { renderBootstrapKubeconfig } from "./kubeadmBootstrapKubeconfig";
import { KUBELET_PATHS, renderKubeletConfig, writeKubeletConfigBlock } from "./kubeletConfig";
import { K0S_BOOTSTRAP_SCRIPT_PATH, K0S_KUBELET_CONF, K0S_TOKEN_FILE, renderK0sWorkerBootstrapScript } from "./k0sWorkerCloudConfig";
import { kubeletNodeLabelsArg, kubeletTaintsArg } from "./kubeletRegistrationArgs";
import {
  NETPLAN_ID,
  NETPLAN_PARENT_ID_PROGRAM,
  NETPLAN_VLAN_PATH,
  assertVlanId,
  isIpv4WithPrefix,
  renderNetplanVlan,
  vlanInterfaceName,
} from "./netplanVlan";
import { type NodeIpSource, assertNodeIpSource, renderNodeIpDiscovery } from "./nodeIp";
import { HCLOUD_PROVIDER_ID_FLAG, providerIdFromMetadata, renderHcloudServerIdDiscovery } from "./hcloudServerId";
import { HCLOUD_PROVIDER_ID_FROM_METADATA } from "../fleet/naming";
import { type HostFirewallInput, renderHostFirewallSection } from "./hostFirewall";
import { APT_GET, heredocDelimiter, scriptPrelude, shellQuote, writeFileBlock } from "./shellScript";
import type { WorkerUserDataInputs } from "./workerUserDataInputs";

/** Where cloud-init drops the script; removed by the script once the node has joined. */
export const SELF_JOIN_SCRIPT_PATH = "/var/lib/nodefleet/join.sh";
/** On the cloud-init path the VLAN id is only known once the server exists; it is delivered here. */
export const VLAN_ID_PATH = "/etc/nodefleet/vlan-id";

export interface PrivateNetworkJoin {
  /**
   * The VLAN id from the server's `privateNetworks[].vlan`, or "wait": read it from VLAN_ID_PATH
   * (written after the server exists, on the cloud-init path) before the kubelet starts.
   */
  readonly vlanId: number | "wait";
  /** The node's IPAM address with the private network's prefix, e.g. 172.16.0.5/22. */
  readonly addressCidr: string;
}

interface CommonJoinInput {
  readonly hostname: string;
  readonly providerID: string;
  /** Registration labels; only keys the kubelet accepts (see fleet/kubeletLabels.ts). */
  readonly labels: Readonly<Record<string, string>>;
  readonly taints: readonly Taint[];
  readonly privateNetwork?: PrivateNetworkJoin;
  /** The kubelet's `--node-ip` (nodeIp.ts): the private address. Default: the kubelet's choice (the public one). */
  readonly nodeIp?: NodeIpSource;
  /** Bare metal: the cluster firewall's rules as a host firewall (hostFirewall.ts), up before the kubelet. */
  readonly hostFirewall?: HostFirewall;
}

/** The host firewall of a self-joined node: the cluster firewall's rules and the SSH port to keep open. */
export type HostFirewall = Omit<HostFirewallInput, "publicInterface">;

export interface KubeadmSelfJoinInput extends CommonJoinInput {
  readonly kind: "kubeadm";
  /** v1.33.4: the pkgs.k8s.io channel is v1.33, the package version 1.33.4-*. */
  readonly kubernetesVersion: string;
  readonly caCertificate: string;
  /** The bootstrap kubeconfig (kubeadmBootstrapKubeconfig.ts): a secret. */
  readonly bootstrapKubeconfig: string;
  /** The rendered KubeletConfiguration (kubeletConfig.ts). */
  readonly kubeletConfig: string;
}

export interface K0sSelfJoinInput extends CommonJoinInput {
  readonly kind: "k0s";
  readonly k0sVersion: string;
  /** Pinned sha256 per architecture; otherwise the release's sha256sums.txt is checked. */
  readonly k0sSha256?: Partial<Record<"amd64" | "arm64", string>>;
  /** The k0s join token (k0sJoinToken.ts): a secret. */
  readonly joinToken: string;
  readonly kubelet: KubeletSettings;
}

export type SelfJoinInput = KubeadmSelfJoinInput | K0sSelfJoinInput;

function assertCommon(input: CommonJoinInput): void {
  if (!DNS_LABEL.test(input.hostname) || input.hostname.length > 63) {
    throw new Error(`hostname ${JSON.stringify(input.hostname)} must be a DNS label`);
  }
  if (!providerIdFromMetadata(input.providerID) && !/^[a-z][a-z0-9+.-]*:\/\/\/[^\s]+$/.test(input.providerID)) {
    throw new Error(
      `providerID ${JSON.stringify(input.providerID)} must look like <scheme>:///<clusterId>/<nodeId>, or be ${HCLOUD_PROVIDER_ID_FROM_METADATA} (read at boot)`,
    );
  }
  const vlanId = input.privateNetwork?.vlanId;
  if (typeof vlanId === "number") assertVlanId(vlanId);
  if (input.nodeIp) assertNodeIpSource(input.nodeIp);
  if (input.privateNetwork && !isIpv4WithPrefix(input.privateNetwork.addressCidr)) {
    throw new Error(`private address ${JSON.stringify(input.privateNetwork.addressCidr)} must be an IPv4 address with a prefix`);
  }
}

function hostnameSection(hostname: string): string {
  return `# --- hostname: the Node name is the hostname
if [ "$(hostname)" != ${shellQuote(hostname)} ]; then
  hostnamectl set-hostname ${shellQuote(hostname)}
fi`;
}

/**
 * Bash that polls every `stepSeconds` until `file` (a quoted test operand) is non-empty; after
 * `$<timeoutVar>` seconds it logs `message` (expanded in double quotes) and exits 1.
 */
function waitForFile(file: string, timeoutVar: string, stepSeconds: number, message: string): string {
  return `waited=0
until [ -s ${file} ]; do
  if [ "$waited" -ge "$${timeoutVar}" ]; then
    log "${message}"
    exit 1
  fi
  sleep ${stepSeconds}
  waited=$((waited + ${stepSeconds}))
done`;
}

/**
 * Brings the VLAN sub-interface up on the primary NIC (the one holding the default route), attached
 * by the netplan id that netplan itself reports for that NIC (see netplanVlan.ts).
 */
function privateNetworkSection(pn: PrivateNetworkJoin): string {
  const vlan =
    pn.vlanId === "wait"
      ? `vlan_file="$R${VLAN_ID_PATH}"
vlan_wait="\${NODEFLEET_VLAN_WAIT_SECONDS:-3600}"
${waitForFile('"$vlan_file"', "vlan_wait", 5, `the private network VLAN id did not arrive in ${VLAN_ID_PATH} within \${vlan_wait}s`)}
vlan_id="$(tr -cd '0-9' <"$vlan_file")"`
      : `vlan_id=${pn.vlanId}`;
  const netplan = renderNetplanVlan({ parentId: "${netplan_parent}", vlanId: "${vlan_id}", addressCidr: pn.addressCidr });
  return `# --- private network: a tagged VLAN on the primary NIC, up before the kubelet starts
${vlan}
if ! [[ "$vlan_id" =~ ^[0-9]{1,4}$ ]] || [ "$vlan_id" -lt 1 ] || [ "$vlan_id" -gt 4094 ]; then
  log "the private network VLAN id '$vlan_id' is not a number from 1 to 4094"
  exit 1
fi
primary_nic="$(ip -o -4 route show default | awk '{ for (i = 1; i < NF; i++) if ($i == "dev") { print $(i + 1); exit } }')"
if [ -z "$primary_nic" ]; then
  log "no default route: cannot tell the primary NIC"
  exit 1
fi
# netplan's link: takes the parent's netplan id, which need not be its kernel name (MAC matches).
netplan_root=()
if [ -n "$R" ]; then netplan_root=(--root-dir "$R"); fi
netplan_parent="$(netplan get "\${netplan_root[@]}" ethernets 2>/dev/null | python3 -c ${shellQuote(NETPLAN_PARENT_ID_PROGRAM)} "$primary_nic" "$R")" || true
if [ -z "$netplan_parent" ]; then
  log "netplan defines no single ethernet for the primary NIC $primary_nic, so the private network VLAN has no parent to attach to"
  exit 1
fi
if ! [[ "$netplan_parent" =~ ${NETPLAN_ID.source} ]]; then
  log "the primary NIC's netplan id '$netplan_parent' has characters nodefleet does not write into netplan files"
  exit 1
fi
before=$CHANGED
write_file ${shellQuote(NETPLAN_VLAN_PATH)} 0600 <<NODEFLEET_NETPLAN
${netplan.trimEnd()}
NODEFLEET_NETPLAN
if [ "$CHANGED" -gt "$before" ] || ! ip link show "${vlanInterfaceName("${vlan_id}")}" >/dev/null 2>&1; then
  netplan apply
fi`;
}

function kubeadmSection(input: KubeadmSelfJoinInput): string {
  const match = /^v(\d+)\.(\d+)\.(\d+)$/.exec(input.kubernetesVersion);
  if (!match) throw new Error(`kubernetesVersion ${JSON.stringify(input.kubernetesVersion)} must look like v1.33.4`);
  const channel = `v${match[1]}.${match[2]}`;
  const packageVersion = `${match[1]}.${match[2]}.${match[3]}`;
  const repo = `https://pkgs.k8s.io/core:/stable:/${channel}/deb/`;
  const keyring = "/etc/apt/keyrings/kubernetes-apt-keyring.gpg";
  const labels = kubeletNodeLabelsArg(input.labels);
  const taints = kubeletTaintsArg(input.taints);
  const flags = [
    "--config=" + KUBELET_PATHS.config,
    "--bootstrap-kubeconfig=" + KUBELET_PATHS.bootstrapKubeconfig,
    "--kubeconfig=" + KUBELET_PATHS.kubeconfig,
    `--hostname-override=${input.hostname}`,
    ...(providerIdFromMetadata(input.providerID) ? [] : [`--provider-id=${input.providerID}`]),
    ...(labels !== "" ? [`--node-labels=${labels}`] : []),
    ...(taints !== "" ? [`--register-with-taints=${taints}`] : []),
  ];
  // systemd splits ExecStart on whitespace and none of the values contain any; `%` is systemd's
  // specifier. No `$`, backquote or backslash either: the drop-in is an expanding heredoc, for the
  // --node-ip found on the host.
  for (const flag of flags) {
    if (/[\s%"'\\$`]/.test(flag))
      throw new Error(`kubelet flag ${JSON.stringify(flag.split("=")[0])} has characters systemd would misread`);
  }
  const nodeIpFlag = input.nodeIp ? " --node-ip=${node_ip}" : "";
  const serverIdFromMetadata = providerIdFromMetadata(input.providerID);
  const providerIdFlag = serverIdFromMetadata ? ` ${HCLOUD_PROVIDER_ID_FLAG}` : "";
  const dropIn = `[Service]
ExecStart=
ExecStart=/usr/bin/kubelet ${flags.join(" ")}${nodeIpFlag}${providerIdFlag}
Restart=always
RestartSec=5
`;
  const dropInDelimiter = heredocDelimiter(dropIn, "NODEFLEET_DROPIN");
  return `# --- kernel prerequisites for containerd and the pod network
write_file /etc/modules-load.d/nodefleet-kubernetes.conf 0644 <<'NODEFLEET_MODULES'
overlay
br_netfilter
NODEFLEET_MODULES
modprobe overlay
modprobe br_netfilter
write_file /etc/sysctl.d/99-nodefleet-kubernetes.conf 0644 <<'NODEFLEET_SYSCTL'
net.bridge.bridge-nf-call-iptables = 1
net.bridge.bridge-nf-call-ip6tables = 1
net.ipv4.ip_forward = 1
NODEFLEET_SYSCTL
sysctl --system >/dev/null
swapoff -a
if [ -f "$R/etc/fstab" ] && grep -Eq '^[^#].*[[:space:]]swap[[:space:]]' "$R/etc/fstab"; then
  sed -i -E 's/^([^#].*[[:space:]]swap[[:space:]].*)$/# \\1/' "$R/etc/fstab"
fi

# --- containerd (distribution package) and the kubelet from the pkgs.k8s.io ${channel} channel
if [ ! -s "$R${keyring}" ]; then
  # 0755 whatever the umask: older apt reads keyrings as the unprivileged _apt user.
  install -d -m 0755 "$R/etc/apt/keyrings"
  curl -fsSL ${shellQuote(`${repo}Release.key`)} | gpg --batch --yes --dearmor -o "$R${keyring}"
  chmod 0644 "$R${keyring}"
fi
write_file /etc/apt/sources.list.d/nodefleet-kubernetes.list 0644 <<'NODEFLEET_APT'
deb [signed-by=${keyring}] ${repo} /
NODEFLEET_APT
# shellcheck disable=SC2016 # dpkg-query's format, not a shell expansion
installed="$(dpkg-query -W -f='\${Version}' kubelet 2>/dev/null || true)"
case "$installed" in
  ${packageVersion}-*) ;;
  *)
    ${APT_GET} update -q
    apt-mark unhold kubelet >/dev/null 2>&1 || true
    ${APT_GET} install -y -q containerd ${shellQuote(`kubelet=${packageVersion}-*`)}
    apt-mark hold kubelet >/dev/null
    ;;
esac

before=$CHANGED
containerd_config="$(containerd config default)"
write_file /etc/containerd/config.toml 0644 <<<"\${containerd_config//SystemdCgroup = false/SystemdCgroup = true}"
systemctl enable containerd >/dev/null 2>&1
if [ "$CHANGED" -gt "$before" ] || ! systemctl is-active --quiet containerd; then
  systemctl restart containerd
fi

# --- kubelet: CA, config, identity flags, bootstrap credentials
before=$CHANGED
${writeFileBlock(KUBELET_PATHS.clientCA, "0644", input.caCertificate)}
${writeKubeletConfigBlock(input.kubeletConfig)}
${
  input.nodeIp
    ? `${renderNodeIpDiscovery(input.nodeIp)}
`
    : ""
}${
    serverIdFromMetadata
      ? `${renderHcloudServerIdDiscovery()}
`
      : ""
  }write_file ${shellQuote(KUBELET_PATHS.dropIn)} 0644 <<${dropInDelimiter}
${dropIn}${dropInDelimiter}
if [ ! -s "$R${KUBELET_PATHS.kubeconfig}" ]; then
${writeFileBlock(KUBELET_PATHS.bootstrapKubeconfig, "0600", input.bootstrapKubeconfig)}
fi
systemctl daemon-reload
systemctl enable kubelet >/dev/null 2>&1
if [ "$CHANGED" -gt "$before" ] || ! systemctl is-active --quiet kubelet; then
  systemctl restart kubelet
fi

# --- wait for TLS bootstrap: the kubelet writes its own kubeconfig once its CSR is approved
join_wait="\${NODEFLEET_JOIN_TIMEOUT_SECONDS:-900}"
${waitForFile(`"$R${KUBELET_PATHS.kubeconfig}"`, "join_wait", 2, "the kubelet did not finish TLS bootstrap within ${join_wait}s (see journalctl -u kubelet)")}

# --- the bootstrap token is no longer needed: remove every copy on the node
rm -f "$R${KUBELET_PATHS.bootstrapKubeconfig}" "$R${SELF_JOIN_SCRIPT_PATH}"
log "joined as ${input.hostname}"`;
}

/**
 * k0s clusters: the join token as a root-only file, then nodefleet's k0s worker bootstrap
 * (k0sWorkerCloudConfig.ts: checksum-verified release, `k0s install worker`, start, token removal
 * once the kubelet has its own kubeconfig), the same one Hetzner Cloud nodes run from cloud-init.
 */
function k0sSection(input: K0sSelfJoinInput): string {
  const bootstrap = renderK0sWorkerBootstrapScript(
    {
      k0sVersion: input.k0sVersion,
      ...(input.k0sSha256 ? { k0sSha256: input.k0sSha256 } : {}),
      joinToken: input.joinToken,
      hostname: input.hostname,
      providerID: input.providerID,
      labels: input.labels,
      taints: input.taints,
      kubelet: input.kubelet,
      ...(input.nodeIp ? { nodeIp: input.nodeIp } : {}),
    },
    true,
  );
  // A joined node gets no token, but runs the bootstrap again: it upgrades k0s to the pinned version.
  return `# --- k0s worker: the join token (root-only, first join only) and the k0s worker bootstrap
if [ -s "$R${K0S_KUBELET_CONF}" ]; then
  log "already joined: the kubelet holds its own credentials"
else
${writeFileBlock(K0S_TOKEN_FILE, "0600", input.joinToken)}
fi
${writeFileBlock(K0S_BOOTSTRAP_SCRIPT_PATH, "0700", bootstrap)}
"$R${K0S_BOOTSTRAP_SCRIPT_PATH}"
# --- the join token is no longer needed once the kubelet holds its own credentials
rm -f "$R${K0S_TOKEN_FILE}" "$R${SELF_JOIN_SCRIPT_PATH}"
log "joined as ${input.hostname}"`;
}

/** The whole self-join script; it contains the bootstrap secret, so callers wrap it in pulumi.secret. */
export function renderSelfJoinScript(input: SelfJoinInput): string {
  assertCommon(input);
  const sections = [
    scriptPrelude(`self-join ${input.hostname} to a ${input.kind} cluster`),
    hostnameSection(input.hostname),
    ...(input.privateNetwork ? [privateNetworkSection(input.privateNetwork)] : []),
    ...(input.hostFirewall ? [renderHostFirewallSection(input.hostFirewall)] : []),
    input.kind === "kubeadm" ? kubeadmSection(input) : k0sSection(input),
  ];
  return `${sections.join("\n\n")}\n`;
}

/**
 * The self-join script of a worker from its user-data inputs (workerUserDataInputs.ts): the bootstrap
 * kubeconfig and kubelet config (kubeadm) or the join token (k0s) are built from `bootstrapToken`
 * (`<id6>.<secret16>`), so the result is a secret.
 */
export function renderWorkerSelfJoinScript(
  inputs: WorkerUserDataInputs,
  bootstrapToken: string,
  privateNetwork?: PrivateNetworkJoin,
  hostFirewall?: HostFirewall,
): string {
  const common = {
    ...(hostFirewall ? { hostFirewall } : {}),
    hostname: inputs.hostname,
    providerID: inputs.providerID,
    labels: inputs.labels,
    taints: inputs.taints,
    ...(inputs.nodeIp ? { nodeIp: inputs.nodeIp } : {}),
    ...(privateNetwork ? { privateNetwork } : {}),
  };
  const kubeconfigInput = { apiServer: inputs.apiServer, caCertificate: inputs.caCertificate, token: bootstrapToken };
  if (inputs.kind === "kubeadm") {
    return renderSelfJoinScript({
      kind: "kubeadm",
      kubernetesVersion: inputs.kubernetesVersion,
      caCertificate: inputs.caCertificate,
      bootstrapKubeconfig: renderBootstrapKubeconfig(kubeconfigInput),
      kubeletConfig: renderKubeletConfig({ kubelet: inputs.kubelet, providerID: inputs.providerID }),
      ...common,
    });
  }
  return renderSelfJoinScript({
    kind: "k0s",
    k0sVersion: inputs.k0sVersion,
    ...(inputs.k0sSha256 ? { k0sSha256: inputs.k0sSha256 } : {}),
    joinToken: encodeK0sJoinToken(kubeconfigInput),
    kubelet: inputs.kubelet,
    ...common,
  });
}

/**
 * Delivers the VLAN id on the cloud-init path (the self-join there waits for it before it starts
 * the kubelet). No secret in it.
 */
export function renderVlanIdDelivery(vlanId: number): string {
  assertVlanId(vlanId);
  return `${scriptPrelude("deliver the private network VLAN id")}
write_file ${shellQuote(VLAN_ID_PATH)} 0644 <<'NODEFLEET_VLAN'
${vlanId}
NODEFLEET_VLAN
`;
}
