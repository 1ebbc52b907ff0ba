/**
 * A fake node for running rendered scripts for real: a temporary filesystem root (the scripts honour
 * NODEFLEET_ROOT) and recording shims, first on PATH, for every system command the scripts call.
 * The shims keep just enough state to behave like a host: apt installs a kubelet version, systemctl
 * tracks active units, and starting the kubelet with a bootstrap kubeconfig completes TLS bootstrap
 * (it keeps a copy of that kubeconfig, as the kubelet would have read it, for the test to inspect).
 */
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const SHIMS: Record<string, string> = {
  hostname: `cat "$SHIM_STATE/hostname" 2>/dev/null || echo localhost`,
  hostnamectl: `[ "$1" = set-hostname ] && printf '%s' "$2" >"$SHIM_STATE/hostname"`,
  ip: `case "$*" in
  "-o -4 route show default") echo "default via 203.0.113.1 dev eno1 proto static" ;;
  "link show "*) [ -e "$SHIM_STATE/link-$3" ] ;;
  "-o -4 addr show scope global") cat "$SHIM_STATE/addresses" 2>/dev/null || true ;;
  *) exit 0 ;;
esac`,
  netplan: `if [ "$1" = get ]; then
  # The host's netplan defines the primary NIC under its kernel name.
  printf 'eno1:\\n  dhcp4: true\\n'
  exit 0
fi
for f in "$NODEFLEET_ROOT"/etc/netplan/*.yaml; do
  [ -e "$f" ] || continue
  for link in $(grep -oE '^    [^ ]+:$' "$f" | tr -d ' :'); do touch "$SHIM_STATE/link-$link"; done
done`,
  modprobe: `exit 0`,
  nft: `exit 0`,
  sysctl: `exit 0`,
  swapoff: `exit 0`,
  sleep: `exit 0`,
  uname: `[ "$1" = -m ] && echo x86_64 || echo Linux`,
  curl: `out=""
url=""
while [ $# -gt 0 ]; do
  case "$1" in
    -o | --output) out="$2"; shift 2 ;;
    --proto | --retry | --retry-delay) shift 2 ;;
    -*) shift ;;
    *) url="$1"; shift ;;
  esac
done
release="$SHIM_STATE/../k0s-release"
case "$url" in
  *sha256sums.txt) body="$(printf '%s\\n' "$(cat "$release")" | sha256sum | cut -d' ' -f1)  k0s-v1.33.4+k0s.0-amd64" ;;
  *Release.key) body="-----BEGIN PGP PUBLIC KEY BLOCK-----" ;;
  *) body="$(cat "$release")" ;;
esac
if [ -n "$out" ]; then printf '%s\\n' "$body" >"$out"; else printf '%s\\n' "$body"; fi`,
  gpg: `out=""
while [ $# -gt 0 ]; do case "$1" in -o) out="$2"; shift 2 ;; *) shift ;; esac; done
cat >/dev/null
echo keyring >"$out"`,
  "dpkg-query": `cat "$SHIM_STATE/kubelet-version" 2>/dev/null`,
  "apt-get": `case " $* " in *" install "*) echo "1.33.4-1.1" >"$SHIM_STATE/kubelet-version" ;; esac`,
  "apt-mark": `exit 0`,
  containerd: `[ "$*" = "config default" ] && printf 'version = 2\\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]\\n  SystemdCgroup = false\\n'`,
  systemctl: `case "$1" in
  is-active) [ -e "$SHIM_STATE/active-$3" ] ;;
  restart|start)
    touch "$SHIM_STATE/active-$2"
    if [ "$2" = kubelet ] && [ -s "$NODEFLEET_ROOT/etc/kubernetes/bootstrap-kubelet.conf" ]; then
      cp "$NODEFLEET_ROOT/etc/kubernetes/bootstrap-kubelet.conf" "$SHIM_STATE/kubelet-read-bootstrap-kubeconfig"
      mkdir -p "$NODEFLEET_ROOT/etc/kubernetes"
      echo "client-certificate: /var/lib/kubelet/pki/kubelet-client-current.pem" >"$NODEFLEET_ROOT/etc/kubernetes/kubelet.conf"
    fi
    ;;
  *) exit 0 ;;
esac`,
};

/** What the fake k0s release "binary" does: record the call; `start` completes the join. */
const FAKE_K0S_RELEASE = `#!/usr/bin/env bash
printf '%s\\n' "k0s $*" >>"$SHIM_LOG"
if [ "$1" = version ]; then echo "\${FAKE_K0S_VERSION:-v1.33.4+k0s.0}"; fi
if [ "$1" = start ]; then touch "$SHIM_STATE/active-k0sworker"; mkdir -p "$NODEFLEET_ROOT/var/lib/k0s"; echo joined >"$NODEFLEET_ROOT/var/lib/k0s/kubelet.conf"; fi
if [ "$1" = install ]; then mkdir -p "$NODEFLEET_ROOT/etc/systemd/system"; echo unit >"$NODEFLEET_ROOT/etc/systemd/system/k0sworker.service"; fi`;

export interface ScriptRun {
  readonly status: number;
  readonly stdout: string;
  readonly stderr: string;
  /** Shim invocations of this run, one `command args...` per line. */
  readonly calls: string[];
}

export class FakeNode {
  readonly dir = mkdtempSync(join(tmpdir(), "nodefleet-node-"));
  readonly root = join(this.dir, "root");
  readonly state = join(this.dir, "state");
  private readonly bin = join(this.dir, "bin");
  private readonly log = join(this.dir, "calls.log");

  /** `shims` replaces or adds shims by command name (a body run after the call is recorded). */
  constructor(shims: Readonly<Record<string, string>> = {}) {
    for (const d of [this.root, this.state, this.bin]) mkdirSync(d, { recursive: true });
    writeFileSync(join(this.dir, "k0s-release"), FAKE_K0S_RELEASE);
    for (const [name, body] of Object.entries({ ...SHIMS, ...shims })) {
      const path = join(this.bin, name);
      // Every shim records its call first.
      writeFileSync(path, `#!/usr/bin/env bash\nprintf '%s\\n' "${name} $*" >>"$SHIM_LOG"\n${body}\n`);
      chmodSync(path, 0o755);
    }
  }

  /** Runs a script as `bash script` with the shims first on PATH; `env` adds variables. */
  run(script: string, env: Record<string, string> = {}): ScriptRun {
    const scriptPath = join(this.dir, "script.sh");
    writeFileSync(scriptPath, script, { mode: 0o700 });
    writeFileSync(this.log, "");
    const result = spawnSync("bash", [scriptPath], {
      encoding: "utf8",
      timeout: 60_000,
      env: {
        PATH: `${this.bin}:${process.env.PATH ?? "/usr/bin:/bin"}`,
        HOME: this.dir,
        NODEFLEET_ROOT: this.root,
        SHIM_STATE: this.state,
        SHIM_LOG: this.log,
        NODEFLEET_JOIN_TIMEOUT_SECONDS: "6",
        NODEFLEET_VLAN_WAIT_SECONDS: "10",
        ...env,
      },
    });
    const calls = readFileSync(this.log, "utf8")
      .split("\n")
      .filter((l) => l.length > 0);
    return { status: result.status ?? -1, stdout: result.stdout, stderr: result.stderr, calls };
  }

  path(p: string): string {
    return join(this.root, p);
  }

  exists(p: string): boolean {
    return existsSync(this.path(p));
  }

  read(p: string): string {
    return readFileSync(this.path(p), "utf8");
  }

  write(p: string, content: string): void {
    mkdirSync(join(this.path(p), ".."), { recursive: true });
    writeFileSync(this.path(p), content);
  }

  stateFile(name: string): string | undefined {
    const p = join(this.state, name);
    return existsSync(p) ? readFileSync(p, "utf8") : undefined;
  }

  dispose(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}
