/**
 * One fake Robot server as a machine with a boot cycle (issue #38 part 2): a machine sandbox
 * (machines/machine.ts, a real sshd on the server's own loopback address) that a reset reboots into
 * the rescue system or into the installed system, as the fake Robot webservice decides
 * (fakeRobotServers.ts records each boot; robotMachines.ts passes it here).
 *
 * - The rescue system is a fresh machine at each rescue boot (it runs from RAM on Robot): host keys
 *   of its own, hostname `rescue`, the NFS root marker /root/.oldroot/nfs with the installimage
 *   stand-in (installimageStandIn.ts) and the images nodefleet names, the machine's disks and
 *   firmware for installimage to check (and for nodefleet's GATHER_HARDWARE_COMMAND: an lsblk
 *   stand-in, /sys/firmware/efi only under UEFI), and root's authorized keys = the keys the
 *   activation named.
 * - The installed system is a machine whose files persist under `<dir>/installed`. At first it is
 *   the OS the server was delivered with; a boot after an install in the rescue replaces it by the
 *   installed one (its hostname, the host key and authorized keys the post-install hook wrote).
 *
 * Everything lives under the machine's directory; nothing changes the host.
 */
import { execFileSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { INSTALLIMAGE_UBUNTU_IMAGES } from "../../../components/robot/installimageAutosetup";
import { type HostKeyType, Machine } from "../machines/machine";
import { initPidFile, sandboxLayout, sessionCommand } from "../machines/machineSandbox";
import type { MachineDisk, MachineFirmware, MachineHardware } from "./installimageRules";
import { HARDWARE_PATH, INSTALLED_RECORD_PATH, INSTALL_MS_VARIABLE, type InstalledSystem } from "./installimageStandIn";

/** Where the rescue system keeps the installimage stand-in, and the compiled modules it is made of. */
const STAND_IN_DIR = "/usr/local/lib/nodefleet-installimage";
const STAND_IN_MODULES = ["installimageStandIn.js", "installimageRules.js"] as const;

/** Where Hetzner's rescue keeps installimage (components/robot/robotRescueInstall.ts runs it there). */
const RESCUE_INSTALLIMAGE = "/root/.oldroot/nfs/install/installimage";
/** The rescue system's hostname, as RESCUE_SYSTEM_CHECK expects it. */
const RESCUE_HOSTNAME = "rescue";

/** The disks a machine has unless told: two equal NVMe drives (the RAID 1 pair) and a larger data disk. */
export const DEFAULT_DISKS: readonly MachineDisk[] = [
  { name: "nvme0n1", sizeBytes: 512_110_190_592 },
  { name: "nvme1n1", sizeBytes: 512_110_190_592 },
  { name: "sda", sizeBytes: 3_840_755_982_336 },
];

export interface RobotMachineArgs {
  /** The Robot server number (names the machine's directory in logs). */
  serverNumber: number;
  /** The server's main IPv4 address as the fake reports it (`server_ip`): a loopback address 127.x.y.z. */
  address: string;
  /** The machine's directory (created): the installed system, the rescue, their sshd configs. */
  dir: string;
  /** Hostname of the OS the server was delivered with. */
  deliveredHostname: string;
  /** OpenSSH public key lines the delivered OS lets in as root (none: nobody can log in). */
  deliveredAuthorizedKeys?: string[];
  /** UEFI (Hetzner's newer servers) or BIOS: decides whether installimage needs an ESP. */
  firmware: MachineFirmware;
  disks?: readonly MachineDisk[];
  /** 22 unless given. */
  port?: number;
  /** How long a reboot keeps the machine off (nothing answers on its address) before the next system starts. Default 0. */
  rebootOffMs?: number;
  /** How long installimage's install lasts in the rescue (the stand-in sleeps; INSTALL_MS_VARIABLE). Default 0. */
  installMs?: number;
}

/** Where the machines' `reboot` stand-in leaves its request, inside the running system (robotMachines.ts acts on it). */
export const REBOOT_REQUEST_PATH = "/var/lib/nodefleet-machine/reboot-request";

/** `reboot` in a Robot machine: asks the host for the reboot (the host's own reboot is never reached). */
const REBOOT_STAND_IN = `#!/bin/sh
# nodefleet Robot machine stand-in for reboot (automation/local/robotMachines/robotMachine.ts): the
# host reboots the machine as the fake Robot decides (into the rescue when one is active).
mkdir -p ${dirname(REBOOT_REQUEST_PATH)}
date +%s%N > ${REBOOT_REQUEST_PATH}
`;

/** A block major of the local-use range (240-254) no driver of this host registered: its nodes open nothing. */
function unusedBlockMajor(): number {
  const text = readFileSync("/proc/devices", "utf8");
  const block = text.slice(text.indexOf("Block devices:"));
  const used = new Set([...block.matchAll(/^\s*(\d+)\s/gm)].map((m) => Number(m[1])));
  for (let major = 240; major <= 254; major++) if (!used.has(major)) return major;
  throw new Error("every block major of the local-use range 240-254 is registered on this host: no safe disk nodes for the machines");
}

/** What the machine runs: off, its rescue system or its installed system. */
export type RobotMachineSystem = "off" | "rescue" | "installed";

export class RobotMachine {
  private machine: Machine | undefined;
  private running: RobotMachineSystem = "off";
  /** Boots run one after the other, in the order the resets came. */
  private queue: Promise<void> = Promise.resolve();
  private readonly errors: Error[] = [];
  private runningSession: string | undefined;
  private hanging = false;
  /** SSH logins the systems booted before the running one let in. */
  private pastSshSessions = 0;
  /** Whether the last boot started a system just installed in the rescue. */
  private freshInstall = false;
  private installedBoots = 0;

  constructor(readonly args: RobotMachineArgs) {}

  private get installedDir(): string {
    return join(this.args.dir, "installed");
  }

  private get rescueDir(): string {
    return join(this.args.dir, "rescue");
  }

  /** What runs now (once the boots asked for are done: settled()). */
  get system(): RobotMachineSystem {
    return this.running;
  }

  /** How many systems an install in the rescue left were booted: one per finished installimage run that a reboot followed. */
  get installs(): number {
    return this.installedBoots;
  }

  /** Whether the running system was just installed: its first boot after installimage ran. */
  get justInstalled(): boolean {
    return this.running === "installed" && this.freshInstall;
  }

  /** The running system's public host key of `type` (`<algorithm> <base64>`). */
  hostKey(type: HostKeyType = "ed25519"): string {
    if (!this.machine) throw new Error(`Robot machine ${this.args.serverNumber} is off`);
    return this.machine.hostKey(type);
  }

  /** SSH logins the machine let in, over every system it booted (rescue and installed alike). */
  acceptedSshSessions(): number {
    return this.pastSshSessions + (this.machine?.acceptedSshSessions() ?? 0);
  }

  /** Whether the running system hangs (until its next boot). */
  get hung(): boolean {
    return this.hanging;
  }

  /** The running system's session command (machineSandbox.ts sessionCommand), undefined when off. */
  get session(): string | undefined {
    return this.machine ? this.runningSession : undefined;
  }

  /** The running system's machine (its files, records), undefined when off. */
  get current(): Machine | undefined {
    return this.machine;
  }

  /** Boots `system` after the boots already asked for; `rescueKeys` are the rescue's authorized keys. */
  boot(system: "rescue" | "installed", rescueKeys: string[] = []): Promise<void> {
    return this.enqueue(async () => {
      await this.shutdown();
      await this.staysOff();
      if (system === "rescue") await this.bootRescue(rescueKeys);
      else await this.bootInstalled();
    });
  }

  /** A reboot that does not take: the same system comes back, with its files and keys. */
  rebootUnchanged(): Promise<void> {
    return this.enqueue(async () => {
      const was = this.running;
      await this.shutdown();
      await this.staysOff();
      if (was === "rescue") await this.startRescueMachine(this.readKeys(this.rescueDir));
      else await this.bootInstalled();
    });
  }

  /** The machine goes off. */
  powerOff(): Promise<void> {
    return this.enqueue(() => this.shutdown());
  }

  /** The running system hangs: its SSH server stops answering until the next boot. */
  hang(): Promise<void> {
    return this.enqueue(async () => {
      this.machine?.hang();
      if (this.machine) this.hanging = true;
    });
  }

  /** Resolves once every boot asked for is done; rejects with the first that failed. */
  async settled(): Promise<void> {
    await this.queue;
    if (this.errors.length > 0) throw this.errors[0]!;
  }

  async stop(): Promise<void> {
    await this.powerOff();
  }

  private enqueue(step: () => Promise<void>): Promise<void> {
    this.queue = this.queue.then(step).catch((error: unknown) => {
      this.errors.push(error instanceof Error ? error : new Error(String(error)));
    });
    return this.queue;
  }

  /** The reboot's dark time (rebootOffMs), after a running system went down. */
  private async staysOff(): Promise<void> {
    if (this.args.rebootOffMs) await new Promise((resolve) => setTimeout(resolve, this.args.rebootOffMs));
  }

  private async shutdown(): Promise<void> {
    const machine = this.machine;
    this.machine = undefined;
    this.running = "off";
    this.hanging = false;
    await machine?.stop();
    this.pastSshSessions += machine?.acceptedSshSessions() ?? 0;
  }

  /** A fresh rescue system: what Robot's PXE-booted rescue has, written before it boots. */
  private async bootRescue(keys: string[]): Promise<void> {
    rmSync(this.rescueDir, { recursive: true, force: true });
    const root = join(this.rescueDir, "root");
    const file = (path: string, text: string, mode = 0o644) => {
      mkdirSync(dirname(join(root, path)), { recursive: true });
      writeFileSync(join(root, path), text);
      chmodSync(join(root, path), mode);
    };
    // The stand-in travels with the rescue system, as installimage does on its NFS root: the
    // machine's sandbox has its own /tmp and may not see the checkout it was started from.
    for (const module of STAND_IN_MODULES) file(`${STAND_IN_DIR}/${module}`, readFileSync(join(__dirname, module), "utf8"));
    file(
      RESCUE_INSTALLIMAGE,
      `#!/bin/sh\n# The local cloud's installimage (robotMachines/installimageStandIn.ts).\n${INSTALL_MS_VARIABLE}=${this.args.installMs ?? 0} exec ${process.execPath} ${STAND_IN_DIR}/installimageStandIn.js "$@"\n`,
      0o755,
    );
    // The images nodefleet installs, present as on the rescue's NFS root (empty: nothing unpacks them).
    for (const image of Object.values(INSTALLIMAGE_UBUNTU_IMAGES)) file(image, "");
    const hardware: MachineHardware = { firmware: this.args.firmware, disks: [...(this.args.disks ?? DEFAULT_DISKS)] };
    file(HARDWARE_PATH, `${JSON.stringify(hardware)}\n`);
    // lsblk's answer to nodefleet's GATHER_HARDWARE_COMMAND (`-J -b -d -o NAME,TYPE,SIZE,RM,RO`): the machine's disks.
    const lsblk = { blockdevices: hardware.disks.map((d) => ({ name: d.name, type: "disk", size: d.sizeBytes, rm: false, ro: false })) };
    file(
      "/usr/bin/lsblk",
      `#!/bin/sh\n# The machine's disks (robotMachine.ts), whatever the options.\ncat <<'JSON'\n${JSON.stringify(lsblk, null, 2)}\nJSON\n`,
      0o755,
    );
    await this.startRescueMachine(keys);
  }

  private async startRescueMachine(keys: string[]): Promise<void> {
    await this.startSystem(RESCUE_HOSTNAME, this.rescueDir, keys, "rescue");
  }

  /** Boots a system from `dir` on the server's address: a machine letting `keys` in (else a sealed key), its firmware shown. */
  private async startSystem(hostname: string, dir: string, keys: string[], running: "rescue" | "installed"): Promise<void> {
    // Written while the system is down (the host never writes an upper layer under a mounted overlay).
    rmSync(join(dir, "root", REBOOT_REQUEST_PATH), { force: true });
    // cloud-init is the machines' shared stand-in: installimage's systems boot without a datasource,
    // so it reports itself disabled (machines/machineCloudInit.ts).
    const standIns = {
      "usr/sbin/reboot": REBOOT_STAND_IN,
      "usr/sbin/shutdown": REBOOT_STAND_IN,
    };
    for (const [path, text] of Object.entries(standIns)) {
      mkdirSync(dirname(join(dir, "root", path)), { recursive: true });
      writeFileSync(join(dir, "root", path), text, { mode: 0o755 });
    }
    this.machine = await Machine.start({
      name: hostname,
      dir,
      address: this.args.address,
      port: this.args.port,
      authorizedKeys: keys.length > 0 ? keys : [this.sealedKey()],
    });
    this.showFirmware(dir, hostname);
    this.showDisks(dir, hostname);
    this.runningSession = sessionCommand(sandboxLayout(dir, hostname));
    this.running = running;
  }

  /**
   * Boots the installed system: the one an install in the last rescue left, if any (it replaces the
   * old one, as installimage wiped the disks), else the one installed before (at first the delivered OS).
   */
  private async bootInstalled(): Promise<void> {
    const rescueRoot = join(this.rescueDir, "root");
    const record = join(rescueRoot, INSTALLED_RECORD_PATH);
    this.freshInstall = existsSync(record);
    if (this.freshInstall) {
      this.installedBoots++;
      const installed = JSON.parse(readFileSync(record, "utf8")) as InstalledSystem;
      rmSync(this.installedDir, { recursive: true, force: true });
      mkdirSync(this.installedDir, { recursive: true });
      renameSync(join(rescueRoot, installed.root), join(this.installedDir, "root"));
      writeFileSync(join(this.installedDir, "system.json"), `${JSON.stringify({ hostname: installed.hostname })}\n`);
    }
    // The rescue ran from RAM: nothing of it survives a reboot.
    rmSync(this.rescueDir, { recursive: true, force: true });
    const systemFile = join(this.installedDir, "system.json");
    if (!existsSync(systemFile)) {
      mkdirSync(join(this.installedDir, "root"), { recursive: true });
      this.writeKeys(this.installedDir, this.args.deliveredAuthorizedKeys ?? []);
      writeFileSync(systemFile, `${JSON.stringify({ hostname: this.args.deliveredHostname })}\n`);
    }
    const { hostname } = JSON.parse(readFileSync(systemFile, "utf8")) as { hostname: string };
    await this.startSystem(hostname, this.installedDir, this.readKeys(this.installedDir), "installed");
  }

  /**
   * Makes the running machine's /sys/firmware say how it boots (`efi` there only under UEFI, which
   * is how nodefleet and installimage tell): a small tmpfs over it, mounted in the machine's own
   * mount namespace only (the host's /sys is untouched), before anything else logs in.
   */
  private showFirmware(dir: string, hostname: string): void {
    const pid = readFileSync(initPidFile(sandboxLayout(dir, hostname)), "utf8").trim();
    const script = `set -e
mount -t tmpfs -o mode=755,size=64k nodefleet-firmware "$1/sys/firmware"
if [ "$2" = uefi ]; then mkdir "$1/sys/firmware/efi"; fi
mount -o remount,ro "$1/sys/firmware"`;
    execFileSync("nsenter", ["--target", pid, "--mount", "--", "/bin/sh", "-c", script, "sh", join(dir, "merged"), this.args.firmware]);
  }

  /**
   * Gives the running machine a /dev of its own with the machine's disks as block devices (what
   * nodefleet's install script checks with `[ -b /dev/nvme0n1 ]`): a tmpfs over the sandbox's /dev,
   * in the machine's mount namespace only, with the host's harmless character devices bound in and
   * one block device node per disk. Their major number is one of the block majors Linux leaves for
   * local use (240-254, Documentation/admin-guide/devices.txt) that no driver of this host has
   * registered (/proc/devices), so opening one fails with ENXIO: nothing reaches a host disk.
   */
  private showDisks(dir: string, hostname: string): void {
    const pid = readFileSync(initPidFile(sandboxLayout(dir, hostname)), "utf8").trim();
    const disks = this.args.disks ?? DEFAULT_DISKS;
    const script = `set -e
d="$1/dev"; major="$2"; shift 2
mount -t tmpfs -o mode=755,size=1m nodefleet-dev "$d"
for n in null zero full random urandom tty; do touch "$d/$n"; mount --bind "/dev/$n" "$d/$n"; done
mkdir "$d/pts" "$d/shm"
mount --bind /dev/pts "$d/pts"
ln -s pts/ptmx "$d/ptmx"
mount -t tmpfs -o mode=1777 nodefleet-shm "$d/shm"
ln -s /proc/self/fd "$d/fd"
ln -s /proc/self/fd/0 "$d/stdin"; ln -s /proc/self/fd/1 "$d/stdout"; ln -s /proc/self/fd/2 "$d/stderr"
minor=0
for disk; do mknod -m 660 "$d/$disk" b "$major" "$minor"; minor=$((minor + 16)); done`;
    execFileSync("nsenter", [
      "--target",
      pid,
      "--mount",
      "--",
      "/bin/sh",
      "-c",
      script,
      "sh",
      join(dir, "merged"),
      String(unusedBlockMajor()),
      ...disks.map((disk) => disk.name),
    ]);
  }

  /** root's authorized keys in a system's files. */
  private readKeys(systemDir: string): string[] {
    const file = join(systemDir, "root", "root", ".ssh", "authorized_keys");
    if (!existsSync(file)) return [];
    return readFileSync(file, "utf8")
      .split("\n")
      .map((line) => line.trim())
      .filter((line) => /^(ssh-|ecdsa-sha2-)/.test(line));
  }

  private writeKeys(systemDir: string, keys: string[]): void {
    const dir = join(systemDir, "root", "root", ".ssh");
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    writeFileSync(join(dir, "authorized_keys"), keys.map((key) => `${key.trim()}\n`).join(""), { mode: 0o600 });
  }

  /**
   * A public key nobody holds (its private half is deleted at once): what a system that lets no key
   * in is given, since a machine's sshd needs an authorized keys line.
   */
  private sealedKey(): string {
    const file = join(this.args.dir, "sealed_ed25519");
    if (!existsSync(`${file}.pub`)) {
      mkdirSync(this.args.dir, { recursive: true });
      execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", "sealed", "-f", file]);
      rmSync(file);
    }
    return readFileSync(`${file}.pub`, "utf8").trim();
  }
}
