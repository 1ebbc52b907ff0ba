/**
 * The machines' stand-ins for what a kubeadm worker's self-join reaches beyond the base stand-ins
 * of machineSandbox.ts (docs/local-cloud.md, "Kubernetes stand-ins"): the packages `containerd` and
 * `kubelet` (files the apt-get stand-in lays down when it "installs" them: a containerd that prints
 * its default config, units for both, and a kubelet whose start hands its command line to the host,
 * where machineKubelet.ts joins it through the node agent's TLS bootstrap), `apt-mark`, `swapoff`
 * (the real one would switch off the host's swap), `hostnamectl` (the real one asks the host's
 * systemd), and for pkgs.k8s.io, which no machine reaches, its signing key from `curl`.
 */
/** Where the apt-get stand-in finds a package's files, copied to / when it "installs" the package. */
export const PAYLOAD_DIR = "/usr/lib/nodefleet-machine/payload";
/** Where the systemctl stand-in finds a unit's start hook, run when it "starts" the unit. */
export const ON_START_DIR = "/usr/lib/nodefleet-machine/on-start";
/** The k0s stand-in, which the curl stand-in hands out as the k0s release binary. */
const K0S_STAND_IN = "/usr/lib/nodefleet-machine/k0s";
/** Where the k0s stand-in keeps the flags of `k0s install worker`. */
const K0S_WORKER_ARGS = "/etc/k0s/nodefleet-worker-args";
/** The kubelet's own kubeconfig under k0s (k0sWorkerCloudConfig.ts K0S_KUBELET_CONF) and its bootstrap one. */
const K0S_KUBELET_KUBECONFIG = "/var/lib/k0s/kubelet.conf";
const K0S_BOOTSTRAP_KUBECONFIG = "/var/lib/k0s/kubelet-bootstrap.conf";
/** The kubelet's last start: its effective `ExecStart` command line, one line; the host answers it (machineKubelet.ts). */
export const KUBELET_START_PATH = "/var/lib/nodefleet-machine/kubelet-start";

const header = (tool: string) => `#!/bin/sh
# nodefleet machine stand-in for ${tool} (automation/local/machines/kubernetesStandIns.ts).
. /usr/lib/nodefleet-machine/record.sh
`;

/** A unit file of a package, as Debian's containerd and pkgs.k8s.io's kubelet ship theirs (WantedBy multi-user). */
const unit = (description: string, execStart: string) => `[Unit]
Description=${description}
After=network-online.target

[Service]
ExecStart=${execStart}
Restart=always

[Install]
WantedBy=multi-user.target
`;

/** The stand-ins, by their path inside the machine. */
export function kubernetesStandIns(): Record<string, string> {
  return {
    "usr/bin/apt-mark": `${header("apt-mark")}verb="\${1:-}"; shift || true
for p; do record apt-mark "$verb" "$p"; done
`,
    "usr/sbin/swapoff": `${header("swapoff")}record swapoff "\${1:-}" "$*"\n`,
    "usr/bin/hostnamectl": `${header("hostnamectl")}if [ "\${1:-}" = set-hostname ] && [ -n "\${2:-}" ]; then
  record hostnamectl set-hostname "$2"
  # The machine's own UTS namespace and /etc/hostname.
  hostname "$2" && echo "$2" > /etc/hostname
else hostname; fi
`,
    // First on PATH: the real curl stays at /usr/bin/curl for every other address.
    "usr/local/bin/curl": `#!/bin/sh
out=""; url=""; prev=""
for a; do
  case "$prev" in -o|--output) out="$a" ;; esac
  case "$a" in https://*) url="$a" ;; esac
  prev="$a"
done
case "$url" in https://pkgs.k8s.io/*/Release.key)
  . /usr/lib/nodefleet-machine/record.sh
  record curl get "$url"
  # An armored block (RFC 4880 §6: base64, then its CRC-24) gpg --dearmor accepts, standing in for the repository's key.
  cat <<'NODEFLEET_KEY'
-----BEGIN PGP PUBLIC KEY BLOCK-----

bm9kZWZsZWV0IG1hY2hpbmUgc3RhbmQtaW4ga2V5
=04kd
-----END PGP PUBLIC KEY BLOCK-----
NODEFLEET_KEY
  exit 0 ;;
https://github.com/k0sproject/k0s/releases/download/*/*)
  # The k0s release assets: the k0s stand-in of that version, and a sha256sums.txt naming its checksum.
  . /usr/lib/nodefleet-machine/record.sh
  record curl get "$url"
  asset="\${url##*/}"; version=$(printf '%s' "\${url%/*}" | sed 's|.*/||; s|%2B|+|g; s|%2b|+|g')
  k0s() { sed "s|^K0S_VERSION=.*|K0S_VERSION='$version'|" ${K0S_STAND_IN}; }
  case "$asset" in
    sha256sums.txt) body() { for arch in amd64 arm64; do printf '%s  k0s-%s-%s\\n' "$(k0s | sha256sum | cut -d' ' -f1)" "$version" "$arch"; done; } ;;
    k0s-*) body() { k0s; } ;;
    *) echo "curl: (22) The requested URL returned error: 404" >&2; exit 22 ;;
  esac
  if [ -n "$out" ]; then body > "$out"; else body; fi
  exit 0 ;;
esac
exec /usr/bin/curl "$@"
`,
    // k0s as a worker bootstrap uses it (k0sWorkerCloudConfig.ts): "install worker" writes the unit and
    // keeps the flags, "start" starts it, whose start hook hands the kubelet's command line to the host.
    [K0S_STAND_IN.slice(1)]: `${header("k0s")}K0S_VERSION=unknown
case "\${1:-}" in
  version) echo "$K0S_VERSION" ;;
  install)
    [ "\${2:-}" = worker ] || { echo "k0s stand-in: only 'install worker'" >&2; exit 1; }
    shift 2
    token=""; labels=""; taints=""; extra=""
    while [ $# -gt 0 ]; do
      case "$1" in
        --token-file) token="$2"; shift ;;
        --labels) labels="$2"; shift ;;
        --taints) taints="$2"; shift ;;
        --kubelet-extra-args) extra="$2"; shift ;;
        --token-file=*) token="\${1#*=}" ;;
        *) echo "k0s stand-in: unknown flag $1" >&2; exit 1 ;;
      esac
      shift
    done
    [ -s "$token" ] || { echo "k0s stand-in: no join token at $token" >&2; exit 1; }
    mkdir -p /etc/systemd/system /etc/k0s
    printf '[Unit]\\nDescription=k0s - Zero Friction Kubernetes\\n\\n[Service]\\nExecStart=/usr/local/bin/k0s worker --token-file=%s\\nRestart=always\\n\\n[Install]\\nWantedBy=multi-user.target\\n' "$token" > /etc/systemd/system/k0sworker.service
    { printf 'token=%s\\n' "$token"; printf 'labels=%s\\n' "$labels"; printf 'taints=%s\\n' "$taints"; printf 'extra=%s\\n' "$extra"; } > ${K0S_WORKER_ARGS}
    record k0s install worker ;;
  start) record k0s start; systemctl start k0sworker ;;
  stop) record k0s stop; systemctl stop k0sworker ;;
  *) record k0s "\${1:-}" "$*" ;;
esac
`,
    // The worker's start: the join token decoded into the kubelet's bootstrap kubeconfig (as k0s
    // does), and the kubelet's command line for the host (machineKubelet.ts), as the kubelet's start hook.
    [`${ON_START_DIR.slice(1)}/k0sworker.service`]: `${header("k0sworker start")}arg() { sed -n "s/^$1=//p" ${K0S_WORKER_ARGS}; }
token=$(arg token)
mkdir -p /var/lib/k0s
if [ ! -s ${K0S_KUBELET_KUBECONFIG} ]; then
  [ -s "$token" ] || { echo "k0sworker: no join token at $token" >&2; exit 1; }
  base64 -d < "$token" | gunzip > ${K0S_BOOTSTRAP_KUBECONFIG}
fi
line="/usr/local/bin/k0s worker --kubeconfig=${K0S_KUBELET_KUBECONFIG} --bootstrap-kubeconfig=${K0S_BOOTSTRAP_KUBECONFIG}"
[ -n "$(arg labels)" ] && line="$line --node-labels=$(arg labels)"
[ -n "$(arg taints)" ] && line="$line --register-with-taints=$(arg taints)"
line="$line $(arg extra)"
mkdir -p /var/lib/nodefleet-machine
printf '%s %s\\n' "$(date +%s%N)" "$line" > ${KUBELET_START_PATH}
record kubelet start "$line"
`,
    [`${PAYLOAD_DIR.slice(1)}/containerd/usr/bin/containerd`]: `${header("containerd")}case "$*" in
  "config default") printf 'version = 2\\n\\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]\\n  SystemdCgroup = false\\n' ;;
  *) record containerd run "$*" ;;
esac
`,
    [`${PAYLOAD_DIR.slice(1)}/containerd/usr/lib/systemd/system/containerd.service`]: unit(
      "containerd container runtime",
      "/usr/bin/containerd",
    ),
    [`${PAYLOAD_DIR.slice(1)}/kubelet/usr/bin/kubelet`]: `${header("kubelet")}case "$*" in
  --version) echo "Kubernetes v0.0.0-nodefleet-machine" ;;
  *) record kubelet run "$*" ;;
esac
`,
    [`${PAYLOAD_DIR.slice(1)}/kubelet/usr/lib/systemd/system/kubelet.service`]: unit(
      "kubelet: The Kubernetes Node Agent",
      "/usr/bin/kubelet",
    ),
    // As systemd does: the last ExecStart= of the unit and its drop-ins (an empty one resets the list).
    [`${PAYLOAD_DIR.slice(1)}/kubelet${ON_START_DIR}/kubelet.service`]: `${header("kubelet start")}line=""
for f in /usr/lib/systemd/system/kubelet.service /etc/systemd/system/kubelet.service /etc/systemd/system/kubelet.service.d/*.conf; do
  [ -f "$f" ] || continue
  l=$(sed -n 's/^ExecStart=//p' "$f" | tail -n 1)
  [ -n "$(sed -n '/^ExecStart=/p' "$f")" ] && line="$l"
done
mkdir -p /var/lib/nodefleet-machine
# A new line per start, so the host sees a restart.
printf '%s %s\\n' "$(date +%s%N)" "$line" > ${KUBELET_START_PATH}
record kubelet start "$line"
`,
  };
}
