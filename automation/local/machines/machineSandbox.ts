/**
 * The sandbox a local-cloud machine runs in and every SSH session of it enters (docs/local-cloud.md,
 * "Machines you can SSH into"): private mount, PID and UTS namespaces (`unshare`, joined with
 * `nsenter`) whose root is an overlay of this host's filesystem, read-only below, with the
 * machine's directory as the upper layer. Every
 * write, to /etc, /var, /usr or anywhere else, lands in the machine's directory; the host's files
 * are never changed. Stand-ins at the real paths of apt-get, dpkg, systemctl, netplan, nft,
 * sysctl and modprobe record what a real box would have done into the machine's records file;
 * `cloud-init status` answers from the machine's own boot (machineCloudInit.ts);
 * `netplan generate` runs the real netplan.io generator against the machine's own /etc/netplan.
 * `ip` and `netplan get` answer for the machine's own network (one NIC, PRIMARY_NIC, and the VLANs
 * `netplan apply` brought up), never the host's.
 */
import { chmodSync, existsSync, mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { ON_START_DIR, PAYLOAD_DIR, kubernetesStandIns } from "./kubernetesStandIns";
import { CLOUD_INIT_STAND_IN, cloudInitGeneratorDisabled } from "./machineCloudInit";

/** Where the stand-ins append their records, inside the machine's root. */
export const RECORDS_PATH = "/var/lib/nodefleet-machine/records";
/** The packages the apt-get and dpkg stand-ins have "installed", one a line, inside the machine's root. */
export const PACKAGES_PATH = "/var/lib/nodefleet-machine/packages";
/** Where the systemctl stand-in keeps each unit's state: `<unit>.enabled`, `<unit>.active`. */
export const UNIT_STATE_DIR = "/var/lib/nodefleet-machine/units";
/**
 * netplan.io's generator, the program `netplan generate` runs (its Python front end is not used: it
 * needs python3-netifaces, which netplan.io 0.106 on Debian 12 does not pull in).
 */
export const NETPLAN_GENERATOR = "/usr/lib/netplan/generate";

/** The machine's one NIC, as the ip and netplan stand-ins show it (the name Ubuntu gives an Elastic Metal box's first port). */
const PRIMARY_NIC = "enp5s0";
/** The netplan file an installed OS has for that NIC. */
const BASE_NETPLAN_PATH = "/etc/netplan/50-cloud-init.yaml";
/** The links `netplan apply` brought up, "name address/prefix" a line, inside the machine's root. */
const LINKS_PATH = "/var/lib/nodefleet-machine/links";

/** The paths inside a machine's directory the sandbox uses. */
export interface SandboxLayout {
  /** The machine's directory; nothing in it is visible inside the sandbox. */
  dir: string;
  /** The overlay's upper layer: the machine's own files, at their paths inside the machine. */
  root: string;
  hostname: string;
}

export function sandboxLayout(dir: string, hostname: string): SandboxLayout {
  return { dir, root: join(dir, "root"), hostname };
}

/** The ForceCommand every session runs: it enters the running machine and runs the client's command (or a login shell) there. */
export function sessionCommand(layout: SandboxLayout): string {
  return join(layout.dir, "sandbox", "session");
}

/**
 * The machine's first process, run from the host: new mount, PID and UTS namespaces (`--fork`
 * makes the boot script PID 1 of its namespace, so every process of the machine ends with it),
 * where the boot script mounts the machine's root and then waits.
 */
export function bootCommand(layout: SandboxLayout): string[] {
  return [
    "unshare",
    "--mount",
    "--pid",
    "--uts",
    "--fork",
    "--propagation",
    "private",
    "--",
    "/bin/sh",
    join(layout.dir, "sandbox", "boot"),
  ];
}

/** Written by the boot script once the machine's root is mounted; removed before a boot. */
export function bootedMarker(layout: SandboxLayout): string {
  return join(layout.dir, "sandbox", "booted");
}

/** Where the machine records the host PID of its first process, which sessions enter. */
export function initPidFile(layout: SandboxLayout): string {
  return join(layout.dir, "sandbox", "init.pid");
}

/** Writes the boot and session scripts and the stand-ins; idempotent (a restarted machine gets the current ones). */
export function writeSandbox(layout: SandboxLayout): void {
  const sandbox = join(layout.dir, "sandbox");
  for (const dir of [sandbox, join(layout.dir, "overlay-work"), join(layout.dir, "merged"), join(layout.root, "etc")])
    mkdirSync(dir, { recursive: true });
  const executable = (path: string, text: string) => {
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, text);
    chmodSync(path, 0o755);
  };
  executable(join(sandbox, "boot"), bootScript(layout));
  executable(join(sandbox, "session"), sessionScript(layout));
  for (const [path, text] of Object.entries({ ...standIns(), ...kubernetesStandIns() })) executable(join(layout.root, path), text);
  writeFileSync(join(layout.root, "etc", "hostname"), `${layout.hostname}\n`);
  // As Ubuntu's installer leaves it: the one NIC, matched by MAC and named (netplan get answers from it); 0600, as netplan wants.
  const netplan = join(layout.root, BASE_NETPLAN_PATH);
  if (!existsSync(netplan)) {
    mkdirSync(dirname(netplan), { recursive: true });
    writeFileSync(
      netplan,
      `network:\n  version: 2\n  ethernets:\n    ${PRIMARY_NIC}:\n      match:\n        macaddress: "02:00:00:00:00:01"\n      set-name: ${PRIMARY_NIC}\n      dhcp4: true\n`,
      { mode: 0o600 },
    );
  }
}

/**
 * PID 1 of the machine's namespaces, still on the host's root: mounts the machine's root once (one
 * overlay mount for all its sessions: overlayfs leaves two mounts sharing an upper layer
 * undefined), then stays, as the machine's init, until the machine stops.
 */
function bootScript(layout: SandboxLayout): string {
  return `set -eu
m=${shellQuote(layout.dir)}
merged="$m/merged"
mount -t overlay overlay -o "lowerdir=/,upperdir=$m/root,workdir=$m/overlay-work" "$merged"
mount --rbind /dev "$merged/dev"
mount -t proc proc "$merged/proc"
# The kernel's settings are the host's: read-only, as the sysctl stand-in records instead.
mount --bind "$merged/proc/sys" "$merged/proc/sys"
mount -o remount,bind,ro "$merged/proc/sys"
mount --rbind /sys "$merged/sys"
mount -o remount,bind,ro "$merged/sys"
# /run and /tmp are the machine's own, empty at each boot as on a real box.
mount -t tmpfs -o mode=755 tmpfs "$merged/run"
mount -t tmpfs -o mode=1777 tmpfs "$merged/tmp"
# cloud-init's generator finds no datasource: disabled, unless the machine's boot hook enables it (machineCloudInit.ts).
${cloudInitGeneratorDisabled("$merged")}
# The machine's own directory stays out of its sight (it is the overlay's upper layer).
if [ -d "$merged$m" ]; then mount -t tmpfs -o mode=700 tmpfs "$merged$m"; fi
hostname ${shellQuote(layout.hostname)}
touch ${shellQuote(bootedMarker(layout))}
exec sleep infinity
`;
}

/** The ForceCommand: joins the machine's namespaces (nsenter), enters its root and runs the client's command there. */
function sessionScript(layout: SandboxLayout): string {
  return `#!/bin/sh
pid=$(cat ${shellQuote(initPidFile(layout))} 2>/dev/null) && [ -d "/proc/$pid" ] || { echo "machine ${layout.hostname} is not running" >&2; exit 255; }
exec nsenter --target "$pid" --mount --pid --uts -- chroot ${shellQuote(join(layout.dir, "merged"))} /bin/sh -c 'cd "\${HOME:-/}" 2>/dev/null || cd /
if [ -n "\${SSH_ORIGINAL_COMMAND:-}" ]; then exec /bin/bash -c "$SSH_ORIGINAL_COMMAND"; else exec /bin/bash -l; fi'
`;
}

/** The stand-ins, by their path inside the machine (where the real tools are on Debian and Ubuntu). */
function standIns(): Record<string, string> {
  const header = (tool: string) => `#!/bin/sh
# nodefleet machine stand-in for ${tool}: records what a real box would do (automation/local/machines/machineSandbox.ts).
. /usr/lib/nodefleet-machine/record.sh
`;
  return {
    "usr/lib/nodefleet-machine/record.sh": `# record TOOL VERB [SUBJECT]: one tab-separated line in ${RECORDS_PATH}.
mkdir -p ${dirname(RECORDS_PATH)}
touch ${PACKAGES_PATH}
record() { printf '%s\\t%s\\t%s\\n' "$1" "$2" "\${3:-}" >> ${RECORDS_PATH}; }
`,
    "usr/bin/apt-get": `${header("apt-get")}verb=""
while [ $# -gt 0 ]; do
  case "$1" in
    -o|-t|-c|--option|--target-release|--config-file) shift ;;
    -*) ;;
    *) if [ -z "$verb" ]; then verb="$1"; else
         case "$verb" in
           install) record apt-get install "$1"; grep -qxF "\${1%%=*}" ${PACKAGES_PATH} || echo "\${1%%=*}" >> ${PACKAGES_PATH}
             # A package with stand-in files (kubernetesStandIns.ts) gets them.
             if [ -d "${PAYLOAD_DIR}/\${1%%=*}" ]; then cp -a "${PAYLOAD_DIR}/\${1%%=*}/." /; fi ;;
           remove|purge) record apt-get "$verb" "$1"; grep -vxF "$1" ${PACKAGES_PATH} > ${PACKAGES_PATH}.new || true; mv ${PACKAGES_PATH}.new ${PACKAGES_PATH} ;;
           *) record apt-get "$verb" "$1" ;;
         esac
       fi ;;
  esac
  shift
done
case "$verb" in
  update|upgrade|dist-upgrade|autoremove|clean) record apt-get "$verb" ;;
  install|remove|purge) ;;
  *) echo "E: Invalid operation $verb" >&2; exit 100 ;;
esac
`,
    "usr/bin/dpkg": `${header("dpkg")}case "\${1:-}" in
  -i|--install) shift; for deb; do record dpkg install "$deb"; basename "\${deb%%_*}" >> ${PACKAGES_PATH}; done ;;
  -s|--status) shift; for p; do grep -qxF "$p" ${PACKAGES_PATH} || { echo "dpkg-query: package '$p' is not installed" >&2; exit 1; }
    printf 'Package: %s\\nStatus: install ok installed\\n' "$p"; done ;;
  -l|--list) sed 's/^/ii  /' ${PACKAGES_PATH} ;;
  *) record dpkg "\${1:-}" "$*" ;;
esac
`,
    "usr/bin/systemctl": `${header("systemctl")}state=${UNIT_STATE_DIR}
mkdir -p "$state"
now=""; verb=""; units=""
for a; do case "$a" in --now) now=1 ;; -*) ;; *) if [ -z "$verb" ]; then verb="$a"; else units="$units $a"; fi ;; esac; done
unit_file() {
  for d in /etc/systemd/system /run/systemd/system /lib/systemd/system /usr/lib/systemd/system; do
    [ -f "$d/$1" ] && { echo "$d/$1"; return 0; }
  done
  return 1
}
named() { case "$1" in *.*) echo "$1" ;; *) echo "$1.service" ;; esac; }
case "$verb" in
  daemon-reload|daemon-reexec) record systemctl "$verb" ;;
  enable|disable|start|stop|restart|reload|try-restart|reload-or-restart|mask|unmask)
    for u in $units; do
      u=$(named "$u")
      case "$verb" in enable|start|restart|reload|try-restart|reload-or-restart)
        file=$(unit_file "$u") || { echo "Failed to $verb unit: Unit $u not found." >&2; exit 5; } ;;
      esac
      record systemctl "$verb" "$u"
      case "$verb" in
        enable)
          touch "$state/$u.enabled"
          # As systemctl does: a link in each target's .wants directory the [Install] section names.
          for t in $(sed -n 's/^WantedBy=//p' "$file"); do mkdir -p "/etc/systemd/system/$t.wants"; ln -sf "$file" "/etc/systemd/system/$t.wants/$u"; done
          # An if, not [ ] &&: an enable without --now must exit 0.
          if [ -n "$now" ]; then record systemctl start "$u"; touch "$state/$u.active"; fi ;;
        disable) rm -f "$state/$u.enabled" /etc/systemd/system/*.wants/"$u"; if [ -n "$now" ]; then record systemctl stop "$u"; rm -f "$state/$u.active"; fi ;;
        start|restart|reload-or-restart) touch "$state/$u.active"; if [ -x "${ON_START_DIR}/$u" ]; then "${ON_START_DIR}/$u"; fi ;;
        stop) rm -f "$state/$u.active" ;;
      esac
    done ;;
  # Queries answer without a record (netplan's generator asks is-system-running).
  is-system-running) echo running ;;
  is-active) for u in $units; do u=$(named "$u"); if [ -f "$state/$u.active" ]; then echo active; else echo inactive; exit 3; fi; done ;;
  is-enabled) for u in $units; do u=$(named "$u"); if [ -f "$state/$u.enabled" ]; then echo enabled; else echo disabled; exit 1; fi; done ;;
  *) record systemctl "$verb" "$units" ;;
esac
`,
    "usr/sbin/netplan": `${header("netplan")}generate() {
  if [ ! -x ${NETPLAN_GENERATOR} ]; then record netplan generate unvalidated; return 0; fi
  # The real generator, reading this machine's /etc/netplan and writing to its /run (gone with the session, as at a reboot).
  if out=$(${NETPLAN_GENERATOR} --root-dir / 2>&1); then record netplan generate ok; else
    record netplan generate failed; printf '%s\\n' "$out" >&2; return 1; fi
}
# The links an apply brings up: the vlans of /etc/netplan, "name address/prefix" a line, which the ip stand-in shows.
links() {
  python3 - <<'NODEFLEET_PY' > ${LINKS_PATH}.new && mv ${LINKS_PATH}.new ${LINKS_PATH}
import glob, yaml
for path in sorted(glob.glob("/etc/netplan/*.yaml")):
    with open(path) as f:
        vlans = ((yaml.safe_load(f) or {}).get("network") or {}).get("vlans") or {}
    for name, d in vlans.items():
        for address in (d or {}).get("addresses") or []:
            print(name, address)
NODEFLEET_PY
}
# get KEY: the merged key of this machine's netplan files, as YAML (the real one's Python front end needs python3-netifaces).
get() {
  python3 - "$@" <<'NODEFLEET_PY'
import glob, sys, yaml
merged = {}
for path in sorted(glob.glob("/etc/netplan/*.yaml")):
    with open(path) as f:
        for key, value in (((yaml.safe_load(f) or {}).get("network")) or {}).items():
            if isinstance(value, dict):
                merged.setdefault(key, {}).update(value)
            else:
                merged[key] = value
keys = [a for a in sys.argv[1:] if not a.startswith("-")]
value = merged.get(keys[0]) if keys else {"network": merged}
if value is not None:
    sys.stdout.write(yaml.safe_dump(value, default_flow_style=False))
NODEFLEET_PY
}
case "\${1:-}" in
  generate) generate ;;
  apply|try) generate && links && record netplan "$1" ;;
  get) shift; while [ "\${1:-}" = --root-dir ]; do shift 2; done; get "$@" ;;
  *) record netplan "\${1:-}" "$*" ;;
esac
`,
    // iproute2's ip, answering for the machine's own network (the sandbox shares the host's, which it must not show or change):
    // the primary NIC's default route, the addresses of the links netplan brought up; changes are recorded.
    "usr/sbin/ip": `${header("ip")}touch ${LINKS_PATH}
words=""; for a; do case "$a" in -o|-4|-6|-oneline|-d|-br|-brief|-j|-json) ;; *) words="$words $a" ;; esac; done
set -- $words
case "\${1:-} \${2:-}" in
  "route show"|"r show"|"route list") [ "\${3:-default}" = default ] && echo "default via 203.0.113.1 dev ${PRIMARY_NIC} proto dhcp src 203.0.113.10 metric 100" ;;
  "addr show"|"address show"|"a show")
    echo "2: ${PRIMARY_NIC}    inet 203.0.113.10/24 brd 203.0.113.255 scope global dynamic ${PRIMARY_NIC}"
    n=3; while read -r name address; do echo "$n: $name    inet $address scope global $name"; n=$((n + 1)); done < ${LINKS_PATH} ;;
  "link show")
    if [ -z "\${3:-}" ] || [ "$3" = ${PRIMARY_NIC} ] || [ "$3" = lo ]; then echo "2: ${PRIMARY_NIC}: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 state UP"; exit 0; fi
    awk -v l="$3" '$1 == l { found = 1 } END { exit !found }' ${LINKS_PATH} || { echo "Device '$3' does not exist." >&2; exit 1; }
    echo "3: $3@${PRIMARY_NIC}: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 state UP" ;;
  *) record ip "\${1:-}" "$*" ;;
esac
`,
    "usr/sbin/nft": `${header("nft")}record nft "\${1:-}" "$*"\n`,
    "usr/sbin/sysctl": `${header("sysctl")}record sysctl "\${1:-}" "$*"\n`,
    "usr/sbin/modprobe": `${header("modprobe")}record modprobe "\${1:-}" "$*"\n`,
    // Shared by every machine: status from this boot's generator verdict and run (machineCloudInit.ts).
    "usr/bin/cloud-init": CLOUD_INIT_STAND_IN,
  };
}

function shellQuote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}
