/**
 * The local cloud's machines (automation/local/machines/): two machines, each a real OpenSSH server
 * on its own loopback address, reached with the system ssh client pinned to a host key of each
 * type (another key is refused); a script installs a package, writes a netplan file and a unit,
 * enables and starts it, and all of it is recorded in the machine, validated by the real `netplan
 * generate`, while the host's /etc/netplan, /etc/systemd/system, dpkg state, hostname and mounts
 * stay as they were.
 * A process a session leaves runs on in its machine, unseen by the other, and stopping the machines
 * leaves no process behind.
 */
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, lstatSync, mkdtempSync, readFileSync, readdirSync, readlinkSync, rmSync, writeFileSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { HOST_KEY_TYPES, Machine, MachineArgsError } from "../../../automation/local/machines/machine";
import { NETPLAN_GENERATOR } from "../../../automation/local/machines/machineSandbox";
import { OpenSshServerStartError, SSHD } from "../../../automation/local/machines/openSshServer";
import { skipUnlessAvailable } from "../../support/toolchainRequirement";
import { processesMentioning } from "../../support/processesMentioning";

/** Path -> content hash (or link target) of every entry below `dir`, for a before/after comparison. */
function snapshot(dir: string, into: Record<string, string> = {}): Record<string, string> {
  if (!existsSync(dir)) return into;
  for (const entry of readdirSync(dir)) {
    const path = join(dir, entry);
    const stat = lstatSync(path);
    if (stat.isSymbolicLink()) into[path] = `-> ${readlinkSync(path)}`;
    else if (stat.isDirectory()) snapshot(path, into);
    else into[path] = createHash("sha256").update(readFileSync(path)).digest("hex");
  }
  return into;
}

function hostState(): Record<string, string> {
  const state = snapshot("/etc/netplan");
  snapshot("/etc/systemd/system", state);
  snapshot("/var/lib/dpkg/info", state);
  for (const file of ["/var/lib/dpkg/status", "/etc/hostname"])
    if (existsSync(file)) state[file] = createHash("sha256").update(readFileSync(file)).digest("hex");
  // The session's hostname and mounts were its namespaces' own.
  state.hostname = hostname();
  state.mounts = readFileSync("/proc/self/mountinfo", "utf8")
    .split("\n")
    .filter((line) => line.includes("nodefleet-machines-"))
    .join("\n");
  return state;
}

/** Command lines of every process mentioning `text`, this test's process excepted. */
describe("local-cloud machines: real sshd, sandboxed sessions", function () {
  this.timeout(120_000);
  let dir: string;
  let clientKey: string;
  const machines: Machine[] = [];
  // Addresses of their own, so that a concurrent test's machines (127.0.3.x for Robot's) do not collide.
  const subnet = `127.77.${process.pid % 250}`;

  /** Runs `command` on `machine` over ssh, pinned to `pin` (default: its ed25519 key), with `input` on stdin. */
  const ssh = (machine: Machine, command: string, input = "", pin = machine.hostKey("ed25519")) => {
    const knownHosts = join(dir, `known_hosts-${machine.name}`);
    writeFileSync(knownHosts, `${machine.port === 22 ? machine.address : `[${machine.address}]:${machine.port}`} ${pin}\n`);
    const result = spawnSync(
      "ssh",
      [
        ...["-F", "/dev/null", "-i", clientKey, "-p", String(machine.port)],
        ...["-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes", "-o", "StrictHostKeyChecking=yes"],
        ...["-o", `UserKnownHostsFile=${knownHosts}`, "-o", "GlobalKnownHostsFile=/dev/null", "-o", "ConnectTimeout=10"],
        `${machine.user}@${machine.address}`,
        command,
      ],
      { input, encoding: "utf8", timeout: 60_000 },
    );
    return { status: result.status, stdout: result.stdout, stderr: result.stderr };
  };

  before(async function () {
    const missing = [SSHD, "/usr/bin/ssh", "/usr/bin/unshare"].filter((tool) => !existsSync(tool));
    skipUnlessAvailable(
      this,
      missing.length ? `${missing.join(", ")} not installed (Debian: openssh-server, openssh-client, util-linux)` : undefined,
    );
    skipUnlessAvailable(this, process.getuid?.() === 0 ? undefined : "the machines' sandbox needs root (mount namespaces, overlayfs)");
    dir = mkdtempSync(join(tmpdir(), "nodefleet-machines-"));
    clientKey = join(dir, "client_ed25519");
    execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", clientKey]);
    const authorizedKeys = [readFileSync(`${clientKey}.pub`, "utf8").trim()];
    for (const [index, name] of ["em-1", "em-2"].entries())
      machines.push(await Machine.start({ name, dir: join(dir, name), address: `${subnet}.${index + 1}`, authorizedKeys }));
  });

  after(async function () {
    for (const machine of machines) await machine.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("refuses arguments that break their rule, naming the field", async function () {
    const args = { name: "m", dir: join(dir, "bad"), address: "127.77.0.9", authorizedKeys: ["ssh-ed25519 AAAA x"] };
    await assert.rejects(
      Machine.start({ ...args, address: "10.0.0.1" }),
      (e: Error) => e instanceof MachineArgsError && /^address/.test(e.message),
    );
    await assert.rejects(Machine.start({ ...args, address: "127.0.0.1" }), /address "127.0.0.1": a loopback address 127.x.y.z other than/);
    await assert.rejects(Machine.start({ ...args, name: "Bad_Name" }), /^MachineArgsError: name/);
    await assert.rejects(Machine.start({ ...args, authorizedKeys: [] }), /authorizedKeys: one or more/);
  });

  it("answers on port 22 of each machine's own address, with a host key of each type an installed OS has", function () {
    assert.deepEqual(
      machines.map((m) => [m.address, m.port]),
      [
        [`${subnet}.1`, 22],
        [`${subnet}.2`, 22],
      ],
    );
    for (const machine of machines)
      for (const type of HOST_KEY_TYPES) {
        const run = ssh(machine, "hostname", "", machine.hostKey(type));
        assert.equal(run.status, 0, `${machine.name} pinned to its ${type} key: ${run.stderr}`);
        assert.equal(run.stdout.trim(), machine.name, "the session runs on the machine (its own hostname)");
      }
    assert.notEqual(machines[0]!.hostKey("ed25519"), machines[1]!.hostKey("ed25519"), "each machine has keys of its own");
  });

  it("fails to start on an address another machine listens on, with sshd's reason", async function () {
    const taken = machines[0]!;
    const start = Machine.start({
      name: "em-3",
      dir: join(dir, "em-3"),
      address: taken.address,
      authorizedKeys: [readFileSync(`${clientKey}.pub`, "utf8")],
    });
    await assert.rejects(start, (e: Error) => e instanceof OpenSshServerStartError && /Address already in use/.test(e.message));
  });

  it("refuses a connection pinned to another key, and runs nothing", function () {
    const [first, second] = machines as [Machine, Machine];
    const run = ssh(first, "apt-get install -y refused-package", "", second.hostKey("ed25519"));
    assert.equal(run.status, 255, run.stderr);
    assert.match(run.stderr, /REMOTE HOST IDENTIFICATION HAS CHANGED|Host key verification failed/);
    assert.deepEqual(first.records(), []);
  });

  it("runs a command without the account's shell start files, as a non-interactive ssh command should", function () {
    const [, second] = machines as [Machine, Machine];
    // Bash sources ~/.bashrc for a command sshd starts at shell level 1. On this host that file is
    // pyenv's set-up, whose lock made overlapping sessions wait 60 s each under load.
    const marker = "/root/nodefleet-bashrc-ran";
    const written = ssh(second, `cat > "$HOME/.bashrc"`, `touch ${marker}\n`);
    assert.equal(written.status, 0, written.stderr);
    const run = ssh(second, "echo ran");
    assert.equal(run.status, 0, run.stderr);
    assert.equal(run.stdout.trim(), "ran");
    assert.equal(second.ownFile(marker), undefined, "the session's shells sourced no ~/.bashrc");
  });

  it("runs a setup script in the sandbox: recorded in the machine, validated by netplan, nothing changed on the host", function () {
    const [first, second] = machines as [Machine, Machine];
    const before = hostState();
    const script = `set -e
apt-get update
apt-get install -y -o Dpkg::Options::=--force-confold containerd kubelet=1.31.0-1.1
mkdir -p /etc/netplan
cat > /etc/netplan/60-test.yaml <<'YAML'
network:
  version: 2
  ethernets:
    enp1s0:
      dhcp4: true
  vlans:
    vlan4000:
      id: 4000
      link: enp1s0
      addresses: [10.0.0.2/24]
YAML
chmod 600 /etc/netplan/60-test.yaml
netplan generate
cat > /etc/systemd/system/x.service <<'UNIT'
[Unit]
Description=x
[Service]
ExecStart=/bin/sleep infinity
[Install]
WantedBy=multi-user.target
UNIT
systemctl daemon-reload
systemctl enable --now x.service
systemctl is-active x
dpkg -s containerd | grep Status
nft -f /etc/nftables.conf
echo '#!/bin/sh' > /usr/local/bin/x-tool
# Left running, as a service would be: the machine's stop must end it (its PID namespace goes).
sleep 7319 >/dev/null 2>&1 &
`;
    const run = ssh(first, "bash -s", script);
    assert.equal(run.status, 0, run.stderr);
    assert.match(run.stdout, /^active$/m);
    assert.match(run.stdout, /Status: install ok installed/);
    const validated = existsSync(NETPLAN_GENERATOR) ? "ok" : "unvalidated";
    assert.deepEqual(first.records(), [
      { tool: "apt-get", verb: "update", subject: "" },
      { tool: "apt-get", verb: "install", subject: "containerd" },
      { tool: "apt-get", verb: "install", subject: "kubelet=1.31.0-1.1" },
      { tool: "netplan", verb: "generate", subject: validated },
      { tool: "systemctl", verb: "daemon-reload", subject: "" },
      { tool: "systemctl", verb: "enable", subject: "x.service" },
      { tool: "systemctl", verb: "start", subject: "x.service" },
      { tool: "nft", verb: "-f", subject: "-f /etc/nftables.conf" },
    ]);
    assert.deepEqual(first.packages(), ["containerd", "kubelet"]);
    assert.match(first.ownFile("/etc/netplan/60-test.yaml") ?? "", /id: 4000/);
    assert.match(first.ownFile("/etc/systemd/system/x.service") ?? "", /ExecStart=\/bin\/sleep infinity/);
    assert.ok(
      lstatSync(join(first.root, "etc/systemd/system/multi-user.target.wants/x.service")).isSymbolicLink(),
      "enable linked the unit",
    );
    assert.equal(first.ownFile("/usr/local/bin/x-tool"), "#!/bin/sh\n");
    assert.equal(existsSync("/usr/local/bin/x-tool"), false, "a write outside /etc lands in the machine too");
    assert.deepEqual(hostState(), before, "the host's netplan, units and dpkg state are unchanged");
    assert.equal(processesMentioning("sleep 7319").length, 1, "a process a session left runs on, in the machine");
    const seen = ssh(first, "ps -eo args");
    assert.match(seen.stdout, /sleep 7319/, "a later session sees it");
    assert.doesNotMatch(ssh(second, "ps -eo args").stdout, /sleep 7319/, "the other machine does not");
    assert.deepEqual(second.records(), [], "the other machine is untouched");
    assert.equal(second.ownFile("/etc/netplan/60-test.yaml"), undefined);
  });

  it("fails `netplan generate` on a netplan file the real generator refuses", function () {
    skipUnlessAvailable(
      this,
      existsSync(NETPLAN_GENERATOR) ? undefined : `${NETPLAN_GENERATOR} not installed (Debian: netplan.io), so generate is only recorded`,
    );
    const second = machines[1]!;
    const run = ssh(
      second,
      "bash -s",
      "set -e\nprintf 'network:\\n  version: 2\\n  ethernets:\\n    eth0:\\n      dhcp4: maybe\\n' > /etc/netplan/60-bad.yaml\nnetplan apply\n",
    );
    assert.notEqual(run.status, 0);
    assert.match(run.stderr, /invalid boolean value .maybe./);
    assert.deepEqual(second.records(), [{ tool: "netplan", verb: "generate", subject: "failed" }], "apply did not go on");
  });

  it("keeps its host keys and files across a restart, so the old pin still connects", async function () {
    const first = machines[0]!;
    const pin = first.hostKey("ed25519");
    await first.stop();
    assert.deepEqual(processesMentioning("sleep 7319"), [], "the stop ended the process left running");
    const again = await Machine.start({
      name: first.name,
      dir: join(dir, first.name),
      address: first.address,
      authorizedKeys: [readFileSync(`${clientKey}.pub`, "utf8")],
    });
    machines[0] = again;
    assert.equal(again.hostKey("ed25519"), pin);
    const run = ssh(again, "cat /etc/netplan/60-test.yaml && dpkg -s kubelet", "", pin);
    assert.equal(run.status, 0, run.stderr);
    assert.match(run.stdout, /id: 4000[\s\S]*Status: install ok installed/);
  });

  it("stops both machines and leaves no process", async function () {
    for (const machine of machines.splice(0)) await machine.stop();
    assert.deepEqual(processesMentioning(dir), []);
    assert.deepEqual(processesMentioning("sleep 7319"), [], "the process left running in a machine ended with it");
  });
});
