/**
 * The fake Robot servers as machines with a boot cycle (issue #38 part 2), driven only through the
 * fake Robot webservice's HTTP API with nodefleet's Robot client: a rescue activation with an
 * uploaded key and a reset boot the rescue system (hostname `rescue`, its own host key, the NFS
 * marker, the key let in); installimage there refuses an autosetup that breaks its rules and
 * installs a valid one, whose post-install hook writes the host key nodefleet generated (as
 * components/robot/robotRescueInstall.ts hands it over); the next reset boots that system, pinned
 * to that key. The knobs: a reset that does not take brings back the old OS with the rescue still
 * pending; a hanging machine stops answering SSH until a reset.
 */
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type FakeRobot, buildFakeRobot } from "../../../automation/local/fakeRobot/fakeRobotApi";
import { SSHD } from "../../../automation/local/machines/openSshServer";
import { AUTOSETUP_RECORD_PATH } from "../../../automation/local/robotMachines/installimageStandIn";
import { RobotMachines } from "../../../automation/local/robotMachines/robotMachines";
import { GATHER_HARDWARE_COMMAND, parseRescueHardware, renderAutosetup } from "../../../components/robot/installimageAutosetup";
import { RESCUE_SYSTEM_CHECK } from "../../../components/robot/rescueSystemCheck";
import { RobotClient } from "../../../components/robot/robotClient";
import { type RobotRescueState, robotRescueProvider } from "../../../components/robot/robotRescue";
import { withSerializedProvider } from "../../support/serializedProvider";
import { skipUnlessAvailable } from "../../support/toolchainRequirement";

const USER = "#ws+machines";
const PASSWORD = "fake-robot-machines-test-password";
/** The fake's first two servers: an AX41-NVME (sw, hw, man) and an AX52 (every reset type). */
const FIRST = 2_000_001;
const SECOND = 2_000_002;

/** The install step nodefleet runs in the rescue, reduced to its host-key handover (robotRescueInstall.ts). */
function installScript(autosetup: string, hostname: string): string {
  return `set -eu
${RESCUE_SYSTEM_CHECK}
cat > /autosetup <<'AUTOSETUP'
${autosetup}AUTOSETUP
work=/root/nodefleet-install
mkdir -p "$work"
rm -f "$work/ssh_host_ed25519_key" "$work/ssh_host_ed25519_key.pub"
ssh-keygen -q -t ed25519 -N '' -C ${hostname} -f "$work/ssh_host_ed25519_key"
{
  printf '%s\\n' '#!/usr/bin/env bash' 'set -euo pipefail' 'umask 077' 'mkdir -p /etc/ssh /root/.ssh'
  printf "cat >/etc/ssh/ssh_host_ed25519_key <<'K'\\n%s\\nK\\n" "$(cat "$work/ssh_host_ed25519_key")"
  printf "cat >/etc/ssh/ssh_host_ed25519_key.pub <<'K'\\n%s\\nK\\n" "$(cat "$work/ssh_host_ed25519_key.pub")"
  printf "cat >/root/.ssh/authorized_keys <<'K'\\n%s\\nK\\n" "$(cat /root/.ssh/authorized_keys)"
} > "$work/post-install.sh"
/root/.oldroot/nfs/install/installimage -a -c /autosetup -x "$work/post-install.sh" >&2
cat "$work/ssh_host_ed25519_key.pub"
`;
}

describe("local-cloud Robot machines: rescue, installimage and the boot cycle", function () {
  this.timeout(180_000);
  let dir: string;
  let clientKey: string;
  let robot: FakeRobot | undefined;
  let machines: RobotMachines | undefined;
  let client: RobotClient;
  let fingerprint: string;
  let url: string;

  /** Runs `command` as root on `address` pinned to `pin`; status 255 is ssh's own failure. */
  const ssh = (address: string, pin: string, command: string, input = "", timeoutSeconds = 10) => {
    const knownHosts = join(dir, `known_hosts-${address}`);
    writeFileSync(knownHosts, `${address} ${pin}\n`);
    const result = spawnSync(
      "ssh",
      [
        ...["-F", "/dev/null", "-i", clientKey, "-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes", "-o", "StrictHostKeyChecking=yes"],
        ...["-o", `UserKnownHostsFile=${knownHosts}`, "-o", "GlobalKnownHostsFile=/dev/null", "-o", `ConnectTimeout=${timeoutSeconds}`],
        `root@${address}`,
        command,
      ],
      { input, encoding: "utf8", timeout: 60_000 },
    );
    return { status: result.status, stdout: result.stdout, stderr: result.stderr };
  };

  /** Starts the fake Robot and its machines; `knobs` as RobotMachines takes them. */
  async function start(knobs: { resetsNotTaking?: number; hang?: number[]; bios?: number[] } = {}, manualResetMs = 200) {
    robot = buildFakeRobot({ user: USER, password: PASSWORD, stateFile: join(dir, "robot.json"), manualResetMs });
    url = await robot.app.listen({ port: 0, host: "127.0.0.1" });
    client = new RobotClient({ baseUrl: url, credentials: { user: USER, password: PASSWORD }, maxRetries: 0 });
    machines = await RobotMachines.start({ robot, dir: join(dir, "machines"), deliveredAuthorizedKeys: [], ...knobs });
    fingerprint = (await client.uploadKey("nodefleet-test", readFileSync(`${clientKey}.pub`, "utf8"))).fingerprint;
    return machines;
  }

  /** Activates rescue with the test's key, resets, waits for the boot, and checks it is the rescue. */
  async function bootRescue(serverNumber: number, address: string): Promise<string> {
    await client.activateRescue(serverNumber, [fingerprint]);
    await client.reset(serverNumber, "sw");
    await machines!.settled();
    const pin = machines!.machine(serverNumber).hostKey();
    const run = ssh(address, pin, `${RESCUE_SYSTEM_CHECK}; hostname`);
    assert.equal(run.status, 0, run.stderr);
    assert.equal(run.stdout.trim(), "rescue");
    return pin;
  }

  before(function () {
    const missing = [SSHD, "/usr/bin/ssh", "/usr/bin/unshare", "/usr/bin/ssh-keygen"].filter((tool) => !existsSync(tool));
    skipUnlessAvailable(
      this,
      missing.length ? `${missing.join(", ")} not installed (Debian: openssh-server, openssh-client, util-linux)` : undefined,
    );
    skipUnlessAvailable(this, process.getuid?.() === 0 ? undefined : "the machines' sandbox needs root (mount namespaces, overlayfs)");
  });

  beforeEach(function () {
    dir = mkdtempSync(join(tmpdir(), "nodefleet-robotmachines-"));
    clientKey = join(dir, "client_ed25519");
    execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", clientKey]);
  });

  afterEach(async function () {
    await machines?.stop();
    machines = undefined;
    await robot?.app.close();
    robot = undefined;
    if (!dir) return;
    const left = execFileSync("ps", ["-eo", "args"], { encoding: "utf8" })
      .split("\n")
      .filter((line) => line.includes(dir));
    rmSync(dir, { recursive: true, force: true });
    assert.deepEqual(left, [], "stopping the machines leaves no process");
  });

  it("boots rescue on a reset, installs with installimage, and boots the installed system pinned to nodefleet's key", async function () {
    await start();
    const address = (await client.getServer(FIRST)).server_ip!;
    assert.equal(address, "127.0.3.1");
    const delivered = machines!.machine(FIRST).hostKey();
    // The delivered OS lets nobody in with the test's key.
    assert.equal(ssh(address, delivered, "true").status, 255);

    const rescuePin = await bootRescue(FIRST, address);
    assert.notEqual(rescuePin, delivered, "the rescue has host keys of its own");
    assert.equal((await client.getRescue(FIRST)).active, false, "the boot used the activation up");
    const marker = ssh(address, rescuePin, "test -d /root/.oldroot/nfs && test -x /root/.oldroot/nfs/install/installimage && echo ok");
    assert.equal(marker.stdout.trim(), "ok", marker.stderr);
    // nodefleet's hardware gathering reads the machine's firmware and disks there.
    const gathered = ssh(address, rescuePin, GATHER_HARDWARE_COMMAND);
    assert.equal(gathered.status, 0, gathered.stderr);
    assert.deepEqual(parseRescueHardware(gathered.stdout), { firmware: "uefi", drives: ["/dev/nvme0n1", "/dev/nvme1n1"] });

    // UEFI (the default): an autosetup without an ESP is refused, naming the rule; nothing is installed.
    const base = { drives: ["/dev/nvme0n1", "/dev/nvme1n1"], hostname: "robot-node-1", image: "ubuntu-24.04" };
    const withoutEsp = renderAutosetup({ ...base, firmware: "bios" });
    const refused = ssh(address, rescuePin, installScript(withoutEsp, "robot-node-1"));
    assert.equal(refused.status, 1, refused.stderr);
    assert.match(
      refused.stderr,
      /installimage: autosetup refused: PART \/boot\/efi esp: this machine boots UEFI and needs exactly one EFI/,
    );
    // The data disk is never the target (the two smallest disks are).
    const dataDisk = renderAutosetup({ ...base, drives: ["/dev/nvme0n1", "/dev/sda"], firmware: "uefi" });
    const refusedDisk = ssh(address, rescuePin, installScript(dataDisk, "robot-node-1"));
    assert.match(refusedDisk.stderr, /DRIVE \/dev\/sda: not among the 2 smallest disks \(\/dev\/nvme0n1, \/dev\/nvme1n1\)/);

    const autosetup = renderAutosetup({ ...base, firmware: "uefi" });
    const install = ssh(address, rescuePin, installScript(autosetup, "robot-node-1"));
    assert.equal(install.status, 0, install.stderr);
    const [algorithm, key] = install.stdout.trim().split(" ");
    const pinned = `${algorithm} ${key}`;
    assert.match(
      install.stderr,
      /installing \/root\/.oldroot\/nfs\/images\/Ubuntu-2404-noble-amd64-base.tar.gz as robot-node-1 on \/dev\/nvme0n1, \/dev\/nvme1n1/,
    );
    assert.equal(machines!.machine(FIRST).current!.ownFile(AUTOSETUP_RECORD_PATH), autosetup, "installimage recorded the autosetup");

    await client.reset(FIRST, "hw");
    await machines!.settled();
    assert.equal(machines!.machine(FIRST).system, "installed");
    assert.equal(machines!.machine(FIRST).hostKey(), pinned, "the installed system serves the key nodefleet generated");
    const installed = ssh(address, pinned, "hostname; test -d /root/.oldroot/nfs || echo no-marker");
    assert.equal(installed.status, 0, installed.stderr);
    assert.deepEqual(installed.stdout.trim().split("\n"), ["robot-node-1", "no-marker"]);
    // The rescue's key is not the installed system's: a connection pinned to it is refused.
    assert.equal(ssh(address, rescuePin, "true").status, 255);
    // Everything the rescue and installimage wrote stayed in the machine.
    for (const path of ["/autosetup", "/root/nodefleet-install", "/root/.oldroot"])
      assert.equal(existsSync(path), false, `${path} on the host`);
    // The installed system survives further reboots, key and all.
    await client.reset(FIRST, "sw");
    await machines!.settled();
    assert.equal(ssh(address, pinned, "hostname").stdout.trim(), "robot-node-1");
  });

  it("installs a BIOS machine without an ESP, and refuses RAID 1 over one drive", async function () {
    await start({ bios: [SECOND] });
    const pin = await bootRescue(SECOND, "127.0.3.2");
    assert.equal(ssh("127.0.3.2", pin, "test -d /sys/firmware/efi && echo uefi || echo bios").stdout.trim(), "bios");
    const autosetup = renderAutosetup({ drives: ["/dev/nvme0n1"], hostname: "robot-node-2", image: "ubuntu-22.04", firmware: "bios" });
    const install = ssh("127.0.3.2", pin, installScript(autosetup, "robot-node-2"));
    assert.equal(install.status, 0, install.stderr);
    // RAID 1 over one drive breaks installimage's rule.
    const raidOfOne = autosetup.replace("SWRAID 0", "SWRAID 1");
    const refused = ssh("127.0.3.2", pin, `cat > /a <<'A'\n${raidOfOne}A\n/root/.oldroot/nfs/install/installimage -a -c /a`);
    assert.equal(refused.status, 1);
    assert.match(refused.stderr, /SWRAID 1 with SWRAIDLEVEL 1: needs at least 2 drives, got 1/);
  });

  it("a reset that does not take brings back the old OS, with the rescue still pending", async function () {
    await start({ resetsNotTaking: 1 });
    const delivered = machines!.machine(FIRST).hostKey();
    await client.activateRescue(FIRST, [fingerprint]);
    await client.reset(FIRST, "sw");
    await machines!.settled();
    assert.equal(machines!.machine(FIRST).system, "installed");
    assert.equal(machines!.machine(FIRST).hostKey(), delivered, "the delivered OS came back, its key unchanged");
    assert.equal((await client.getRescue(FIRST)).active, true, "the activation was not used");
    // The next reset takes: the rescue answers with the test's key.
    await client.reset(FIRST, "hw");
    await machines!.settled();
    const run = ssh("127.0.3.1", machines!.machine(FIRST).hostKey(), "hostname");
    assert.equal(run.stdout.trim(), "rescue", run.stderr);
  });

  /** The rescue provider's inputs for the first server, with the checked boot (rescueBootLadder.ts). */
  const checkedRescue = (): RobotRescueState => ({
    serverNumber: FIRST,
    fingerprints: [fingerprint],
    generation: "g1",
    baseUrl: url,
    credentials: JSON.stringify({ user: USER, password: PASSWORD }),
    checkRescue: true,
    sshPrivateKey: readFileSync(clientKey, "utf8"),
    resetWaitSeconds: 8,
  });

  it("the rescue provider's checked boot escalates from sw to hw when sw brings back the installed OS", async function () {
    await start({ resetsNotTaking: 1 });
    await withSerializedProvider(robotRescueProvider, async (provider) => {
      const created = await provider.create!(checkedRescue());
      // The delivered OS refuses the key, so no ssh reboot; sw did not take; hw reached the rescue.
      assert.equal(created.outs.resetType, "sw,hw");
    });
    assert.equal(machines!.machine(FIRST).system, "rescue");
    assert.deepEqual(
      robot!.state.server(FIRST)!.resets.map((r) => r.type),
      ["sw", "hw"],
    );
    assert.ok(!JSON.stringify(robot!.state.server(FIRST)!.resets).includes("power"));
  });

  it("the rescue provider's checked boot fails clearly when no reset reaches the rescue", async function () {
    await start({ resetsNotTaking: 10 });
    await withSerializedProvider(robotRescueProvider, async (provider) => {
      await assert.rejects(
        provider.create!(checkedRescue()),
        /^RescueBootError: Robot server 2000001 did not boot into the rescue system after ssh-reboot, sw, hw \(ssh-reboot failed \(.*Permission denied.*\); sw: kept running the installed system; hw: kept running the installed system\)/,
      );
    });
    assert.equal(machines!.machine(FIRST).system, "installed");
  });

  it("power presses the button (off, then on again), and man boots once the technician is done", async function () {
    await start({}, 2_000);
    const pin = machines!.machine(SECOND).hostKey();
    await client.reset(SECOND, "power");
    await machines!.settled();
    assert.equal(machines!.machine(SECOND).system, "off");
    const off = ssh("127.0.3.2", pin, "true", "", 3);
    assert.equal(off.status, 255);
    assert.match(off.stderr, /Connection refused/);
    await client.reset(SECOND, "power");
    await machines!.settled();
    assert.equal(machines!.machine(SECOND).system, "installed");
    assert.equal(machines!.machine(SECOND).hostKey(), pin, "the same installed system came back");
    // man: the fake's technician takes 2 s here; the machine boots rescue only then.
    await client.activateRescue(FIRST, [fingerprint]);
    await client.reset(FIRST, "man");
    await machines!.settled();
    assert.equal(machines!.machine(FIRST).system, "installed", "not before the technician is done");
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    await machines!.settled();
    assert.equal(machines!.machine(FIRST).system, "rescue");
  });

  it("a hanging machine stops answering SSH until a reset", async function () {
    await start({ hang: [FIRST] });
    const pin = await bootRescue(FIRST, "127.0.3.1");
    const autosetup = renderAutosetup({
      drives: ["/dev/nvme0n1", "/dev/nvme1n1"],
      hostname: "robot-node-1",
      image: "ubuntu-24.04",
      firmware: "uefi",
    });
    const install = ssh("127.0.3.1", pin, installScript(autosetup, "robot-node-1"));
    assert.equal(install.status, 0, install.stderr);
    const pinned = install.stdout.trim().split(" ").slice(0, 2).join(" ");
    await client.reset(FIRST, "sw");
    await machines!.settled();
    const started = Date.now();
    const hung = ssh("127.0.3.1", pinned, "hostname", "", 3);
    assert.equal(hung.status, 255);
    assert.match(hung.stderr, /timed out|Connection timed out/);
    assert.ok(Date.now() - started >= 2_500, "the connection waited: the port is open, nothing answers");
    await client.reset(FIRST, "hw");
    await machines!.settled();
    const back = ssh("127.0.3.1", pinned, "hostname");
    assert.equal(back.stdout.trim(), "robot-node-1", back.stderr);
  });
});
