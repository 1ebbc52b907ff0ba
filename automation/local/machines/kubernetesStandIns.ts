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
/** The arguments of `k0s install`, one a line (the host reads the worker's flags and token file from them). */
export const K0S_INSTALL_PATH = "/var/lib/nodefleet-machine/k0s-install";
/** The k0s worker's last start, a timestamp; the host answers it (machineKubelet.ts). */
export const K0S_START_PATH = "/var/lib/nodefleet-machine/k0s-start";
/** The k0s binary a release download gives, with `@K0S_VERSION@` for its version. */
const K0S_TEMPLATE = `${PAYLOAD_DIR}/k0s-release/k0s`;
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
out=""; previous=""
for a; do case "$previous" in -o|--output) out="$a" ;; esac; previous="$a"; done
for a; do case "$a" in https://github.com/k0sproject/k0s/releases/download/*)
  # A k0s release (its assets and sha256sums.txt), which no machine reaches: the k0s stand-in, stamped with the release's version.
  . /usr/lib/nodefleet-machine/record.sh
  record curl get "$a"
  tag=$(printf '%s' "$a" | sed -e 's|.*/download/||' -e 's|/.*||' -e 's|%2B|+|g' -e 's|%2b|+|g')
  asset=\${a##*/}
  k0s() { sed "s|@K0S_VERSION@|$tag|" ${K0S_TEMPLATE}; }
  if [ "$asset" = sha256sums.txt ]; then
    sum=$(k0s | sha256sum | cut -d' ' -f1)
    body=$(printf '%s  k0s-%s-amd64\\n%s  k0s-%s-arm64\\n' "$sum" "$tag" "$sum" "$tag")
    if [ -n "$out" ]; then printf '%s\\n' "$body" > "$out"; else printf '%s\\n' "$body"; fi
  elif [ "$asset" = "k0s-$tag-amd64" ] || [ "$asset" = "k0s-$tag-arm64" ]; then
    if [ -n "$out" ]; then k0s > "$out"; else k0s; fi
  else echo "curl: (22) The requested URL returned error: 404" >&2; exit 22; fi
  exit 0 ;;
esac; done
for a; do case "$a" in https://pkgs.k8s.io/*/Release.key)
  . /usr/lib/nodefleet-machine/record.sh
  record curl get "$a"
  # An armored block (RFC 4880 §6: base64, then its CRC-24) gpg --dearmor accepts, standing in for the repository's key.
  cat <<'NODEFLEET_KEY'
-----BEGIN PGP PUBLIC KEY BLOCK-----

bm9kZWZsZWV0IG1hY2hpbmUgc3RhbmQtaW4ga2V5
=04kd
-----END PGP PUBLIC KEY BLOCK-----
NODEFLEET_KEY
  exit 0 ;;
esac; done
exec /usr/bin/curl "$@"
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
    // k0s: version, install (the worker unit and its arguments), start (the unit's start hook) and stop.
    [K0S_TEMPLATE.slice(1)]: `${header("k0s")}version='@K0S_VERSION@'
case "\${1:-}" in
  version) echo "$version" ;;
  install)
    shift; record k0s install "$*"
    mkdir -p "$(dirname ${K0S_INSTALL_PATH})" /etc/systemd/system
    : > ${K0S_INSTALL_PATH}
    for a; do printf '%s\\n' "$a" >> ${K0S_INSTALL_PATH}; done
    printf '[Unit]\\nDescription=k0s - Zero Friction Kubernetes\\n\\n[Service]\\nExecStart=/usr/local/bin/k0s %s\\nRestart=always\\n\\n[Install]\\nWantedBy=multi-user.target\\n' "\${1:-worker}" > /etc/systemd/system/k0sworker.service ;;
  start) record k0s start; systemctl start k0sworker ;;
  stop) record k0s stop; systemctl stop k0sworker ;;
  *) record k0s run "$*" ;;
esac
`,
    [`${ON_START_DIR.slice(1)}/k0sworker.service`]: `${header("k0sworker start")}mkdir -p "$(dirname ${K0S_START_PATH})"
date +%s%N > ${K0S_START_PATH}
record k0sworker start
`,
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
