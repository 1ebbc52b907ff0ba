/**
 * Cloud-init user data that joins a fresh machine to a k0s cluster as a worker: write the join token
 * (0600), download the pinned k0s release and verify its sha256, `k0s install worker` with labels,
 * taints and kubelet flags, `k0s start`, and remove the token once the kubelet has its own
 * kubeconfig. Hetzner Cloud and Elastic Metal pools pass this as user data.
 */
import { stringify } from "yaml";
import { formatIssuePath, labelsSchema, taintSchema, type KubeletSettings, type Taint } from "../fleet/fleetSpec";
import { kubeletNodeLabelsArg, kubeletTaintsArg } from "./kubeletRegistrationArgs";
import { shellQuote } from "./shellScript";
import { kubeletReservationFlags } from "./kubeletReservations";
import { type NodeIpSource, assertNodeIpSource, renderNodeIpDiscovery } from "./nodeIp";
import { type PrivateEgress, privateEgressCloudConfig } from "./privateEgressRoute";
import { HCLOUD_PROVIDER_ID_FLAG, providerIdFromMetadata, renderHcloudServerIdDiscovery } from "./hcloudServerId";

export type K0sArch = "amd64" | "arm64";

export interface K0sWorkerBootstrapInput {
  /** Pinned k0s release, e.g. `v1.33.4+k0s.0`. */
  k0sVersion: string;
  /** sha256 (hex) of `k0s-<version>-<arch>` per architecture; without one, the release's sha256sums.txt is used. */
  k0sSha256?: Partial<Record<K0sArch, string>>;
  /** The k0s join token (base64 of the gzipped kubeconfig, see k0sJoinToken.ts); a secret. */
  joinToken: string;
  /** Machine hostname and Kubernetes node name. */
  hostname: string;
  /** The node's spec.providerID, or HCLOUD_PROVIDER_ID_FROM_METADATA to read `hcloud://<server id>` at boot (hcloudServerId.ts). */
  providerID: string;
  /** Node labels; keys the kubelet refuses at registration are left out. */
  labels: Readonly<Record<string, string>>;
  /** Taints registered with the node (the node cannot change them later). */
  taints: readonly Taint[];
  /** Max pods, reservations and eviction thresholds, passed as kubelet flags (see kubeletReservations.ts). */
  kubelet: KubeletSettings;
  /** The kubelet's `--node-ip` (nodeIp.ts); without it the kubelet takes the default route's, public, address. */
  nodeIp?: NodeIpSource;
}

/** Where the join token is written; the bootstrap script removes it after the join. */
export const K0S_TOKEN_FILE = "/etc/k0s/join-token";
/** Where the bootstrap script is written and run from. */
export const K0S_BOOTSTRAP_SCRIPT_PATH = "/usr/local/sbin/nodefleet-k0s-join";
/** The kubelet's own kubeconfig; once it exists the join token is spent. */
export const K0S_KUBELET_CONF = "/var/lib/k0s/kubelet.conf";

const K0S_VERSION = /^v\d+\.\d+\.\d+\+k0s\.\d+$/;
const SHA256_HEX = /^[a-f0-9]{64}$/;
const HOSTNAME = /^(?=.{1,253}$)[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*$/;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

function validate(input: K0sWorkerBootstrapInput): void {
  if (!K0S_VERSION.test(input.k0sVersion)) {
    throw new Error(`k0sVersion must look like v1.33.4+k0s.0 (got ${JSON.stringify(input.k0sVersion)})`);
  }
  for (const [arch, sum] of Object.entries(input.k0sSha256 ?? {})) {
    if (arch !== "amd64" && arch !== "arm64") throw new Error(`k0sSha256 has an unknown architecture ${JSON.stringify(arch)}`);
    if (sum !== undefined && !SHA256_HEX.test(sum)) throw new Error(`k0sSha256.${arch} must be 64 lower-case hex digits`);
  }
  // The token is a secret: say what is wrong, never show it.
  if (!BASE64.test(input.joinToken)) throw new Error("joinToken must be a k0s join token (base64, no whitespace)");
  if (!HOSTNAME.test(input.hostname)) throw new Error(`hostname ${JSON.stringify(input.hostname)} is not a lower-case DNS name`);
  // k0s splits --kubelet-extra-args on whitespace.
  if (!/^\S+$/.test(input.providerID)) throw new Error("providerID must be non-empty and contain no whitespace");
  const problems = [
    ...(labelsSchema.safeParse(input.labels).error?.issues ?? []).map((i) => `${formatIssuePath(["labels", ...i.path])}: ${i.message}`),
    ...(taintSchema.array().safeParse(input.taints).error?.issues ?? []).map(
      (i) => `${formatIssuePath(["taints", ...i.path])}: ${i.message}`,
    ),
  ];
  if (problems.length > 0) throw new Error(`invalid node labels or taints:\n${problems.join("\n")}`);
  if (input.nodeIp) assertNodeIpSource(input.nodeIp);
}

/**
 * The kubelet flags k0s passes through. The node name is pinned with --hostname-override (k0s reads
 * it from here too), so it never depends on what the image or DHCP made of the hostname.
 */
function k0sKubeletExtraArgs(input: Pick<K0sWorkerBootstrapInput, "providerID" | "hostname" | "kubelet">): string {
  // A providerID read at boot is appended by installArgLines, expanded by the shell.
  const providerId = providerIdFromMetadata(input.providerID) ? [] : [`--provider-id=${input.providerID}`];
  return [...providerId, `--hostname-override=${input.hostname}`, ...kubeletReservationFlags(input.kubelet)].join(" ");
}

/** The arguments after `k0s install`; `$token_file` is a variable of the bootstrap script. */
function installArgLines(input: K0sWorkerBootstrapInput): string[] {
  const lines = ["  worker", '  --token-file "$token_file"'];
  const labels = kubeletNodeLabelsArg(input.labels);
  if (labels !== "") lines.push(`  --labels ${shellQuote(labels)}`);
  const taints = kubeletTaintsArg(input.taints);
  if (taints !== "") lines.push(`  --taints ${shellQuote(taints)}`);
  // --node-ip is found on the host (nodeIp.ts) and appended inside the same argument.
  const nodeIp = input.nodeIp ? '" --node-ip=${node_ip}"' : "";
  const providerId = providerIdFromMetadata(input.providerID) ? `" ${HCLOUD_PROVIDER_ID_FLAG}"` : "";
  lines.push(`  --kubelet-extra-args ${shellQuote(k0sKubeletExtraArgs(input))}${nodeIp}${providerId}`);
  return lines;
}

/**
 * The bootstrap script (bash). It holds no secret: it only passes the token file's path to k0s.
 * NODEFLEET_ROOT prefixes every path it touches so tests can run it in a scratch directory.
 *
 * `upgradeInPlace`: on a machine where k0sworker is installed, replace the binary with the pinned
 * version when it differs and restart the worker (the SSH self-join, which re-runs on a version
 * change). Cloud-init runs once per server, so its copy leaves that out and its text stays as is.
 */
export function renderK0sWorkerBootstrapScript(input: K0sWorkerBootstrapInput, upgradeInPlace = false): string {
  validate(input);
  const version = input.k0sVersion;
  const releaseUrl = `https://github.com/k0sproject/k0s/releases/download/${encodeURIComponent(version)}`;
  const pinned = (arch: K0sArch) => shellQuote(input.k0sSha256?.[arch] ?? "");
  return [
    "#!/bin/bash",
    "# Joins this machine to the k0s cluster as a worker (rendered by nodefleet); safe to re-run.",
    "# No tracing: k0s reads the join token from the token file, which is removed after the join.",
    "set -euo pipefail",
    "",
    'root="${NODEFLEET_ROOT:-}"',
    `k0s_version=${shellQuote(version)}`,
    `release_url=${shellQuote(releaseUrl)}`,
    `token_file="\${root}${K0S_TOKEN_FILE}"`,
    'k0s_bin="${root}/usr/local/bin/k0s"',
    'unit_file="${root}/etc/systemd/system/k0sworker.service"',
    `kubelet_conf="\${root}${K0S_KUBELET_CONF}"`,
    'kubelet_conf_timeout_seconds="${NODEFLEET_KUBELET_CONF_TIMEOUT:-900}"',
    "workdir=''",
    "",
    "log() { printf 'nodefleet-k0s-join: %s\\n' \"$*\" >&2; }",
    'fail() { log "$*"; exit 1; }',
    'cleanup() { if [ -n "$workdir" ]; then rm -rf -- "$workdir"; fi; }',
    "trap cleanup EXIT",
    "",
    'case "$(uname -m)" in',
    "  x86_64 | amd64) arch=amd64 ;;",
    "  aarch64 | arm64) arch=arm64 ;;",
    '  *) fail "unsupported machine architecture $(uname -m)" ;;',
    "esac",
    "",
    "pinned_sha256() {",
    '  case "$1" in',
    `    amd64) printf '%s' ${pinned("amd64")} ;;`,
    `    arm64) printf '%s' ${pinned("arm64")} ;;`,
    "  esac",
    "}",
    "",
    "fetch() {",
    "  curl --fail --silent --show-error --location --proto '=https' --tlsv1.2 \\",
    '    --retry 10 --retry-delay 3 --retry-connrefused --output "$2" "$1"',
    "}",
    "",
    "install_k0s() {",
    '  local asset="k0s-${k0s_version}-${arch}" expected actual',
    '  workdir="$(mktemp -d)"',
    '  fetch "${release_url}/${asset}" "${workdir}/k0s"',
    '  expected="$(pinned_sha256 "$arch")"',
    '  if [ -z "$expected" ]; then',
    '    fetch "${release_url}/sha256sums.txt" "${workdir}/sha256sums.txt"',
    '    expected="$(awk -v asset="$asset" \'$2 == asset || $2 == "*" asset { print $1; exit }\' "${workdir}/sha256sums.txt")"',
    '    [ -n "$expected" ] || fail "no checksum for ${asset} in sha256sums.txt"',
    "  fi",
    '  actual="$(sha256sum "${workdir}/k0s" | awk \'{ print $1 }\')"',
    '  [ "$actual" = "$expected" ] || fail "checksum mismatch for ${asset}: expected ${expected}, got ${actual}"',
    '  install -D -m 0755 "${workdir}/k0s" "$k0s_bin"',
    "}",
    "",
    'if [ -e "$unit_file" ]; then',
    ...(upgradeInPlace
      ? [
          "  # A joined worker keeps its credentials; a new pinned version replaces only the binary (k0s's manual upgrade).",
          '  installed_version="$("$k0s_bin" version 2>/dev/null || true)"',
          '  if [ "$installed_version" = "$k0s_version" ]; then',
          '    log "k0sworker ${k0s_version} is installed already; skipping download and install"',
          "  else",
          '    log "upgrading k0s from ${installed_version:-an unknown version} to ${k0s_version}"',
          "    install_k0s",
          "    systemctl restart k0sworker",
          "  fi",
        ]
      : ['  log "k0sworker is installed already; skipping download and install"']),
    "else",
    ...(input.nodeIp
      ? renderNodeIpDiscovery(input.nodeIp)
          .split("\n")
          .map((line) => (line === "" ? line : `  ${line}`))
      : []),
    ...(providerIdFromMetadata(input.providerID)
      ? renderHcloudServerIdDiscovery()
          .split("\n")
          .map((line) => `  ${line}`)
      : []),
    "  install_k0s",
    "  install_args=(",
    ...installArgLines(input).map((line) => `  ${line}`),
    "  )",
    '  "$k0s_bin" install "${install_args[@]}"',
    "fi",
    "",
    "if ! systemctl is-active --quiet k0sworker; then",
    '  "$k0s_bin" start',
    "fi",
    "",
    "# k0s ignores the token once the kubelet has its own kubeconfig; only then is it safe to remove.",
    "waited=0",
    'until [ -s "$kubelet_conf" ]; do',
    '  if [ "$waited" -ge "$kubelet_conf_timeout_seconds" ]; then',
    '    fail "no ${kubelet_conf} after ${waited}s; the join token stays in ${token_file} for a retry"',
    "  fi",
    "  sleep 5",
    "  waited=$((waited + 5))",
    "done",
    'rm -f -- "$token_file"',
    'log "joined as ${k0s_version} worker; join token removed"',
    "",
  ].join("\n");
}

/**
 * The `#cloud-config` user data for one worker. With `privateEgress` (a node without public IPv4)
 * its default route moves to the private network before the join runs.
 */
export function renderK0sWorkerCloudConfig(input: K0sWorkerBootstrapInput & { readonly privateEgress?: PrivateEgress }): string {
  const { privateEgress, ...bootstrap } = input;
  const script = renderK0sWorkerBootstrapScript(bootstrap);
  const egress = privateEgress ? privateEgressCloudConfig(privateEgress) : { writeFiles: [], runcmd: [] };
  const config = {
    hostname: input.hostname,
    preserve_hostname: false,
    write_files: [
      { path: K0S_TOKEN_FILE, owner: "root:root", permissions: "0600", content: input.joinToken },
      { path: K0S_BOOTSTRAP_SCRIPT_PATH, owner: "root:root", permissions: "0700", content: script },
      ...egress.writeFiles,
    ],
    runcmd: [...egress.runcmd, [K0S_BOOTSTRAP_SCRIPT_PATH]],
  };
  // cloud-init parses YAML 1.1 (PyYAML): emitting 1.1 quotes "0600", "yes", "on" and friends.
  return `#cloud-config\n${stringify(config, { version: "1.1", lineWidth: 0 })}`;
}
