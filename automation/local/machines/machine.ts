/**
 * A local-cloud machine: a real OpenSSH server on the machine's own loopback address (127.x.y.z,
 * port 22, as an installed box answers on its public address), with the host keys an installed OS
 * has (RSA, ECDSA, ed25519, generated once into the machine's /etc/ssh) and the OS user's
 * authorized keys, whose every session runs in the machine's sandbox (machineSandbox.ts). The
 * Elastic Metal servers and Robot servers of the local cloud (issues #37 and #38) are to be these.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { userInfo } from "node:os";
import { join } from "node:path";
import { descendantProcesses, killProcesses } from "../../engine/cliProcesses";
import { OpenSshServer } from "./openSshServer";
import {
  PACKAGES_PATH,
  RECORDS_PATH,
  type SandboxLayout,
  bootCommand,
  bootedMarker,
  initPidFile,
  sandboxLayout,
  sessionCommand,
  UNIT_STATE_DIR,
  writeSandbox,
} from "./machineSandbox";

export const HOST_KEY_TYPES = ["rsa", "ecdsa", "ed25519"] as const;
export type HostKeyType = (typeof HOST_KEY_TYPES)[number];

export interface MachineArgs {
  /** The machine's hostname: lowercase letters, digits and hyphens. */
  name: string;
  /** The machine's directory (created): its root, keys, sshd config and log. A restart keeps its host keys and files. */
  dir: string;
  /** Its own loopback address, `127.x.y.z`; not 127.0.0.1, which the local cloud's services use. */
  address: string;
  /** 22 unless given (a test on a machine where port 22 is refused). */
  port?: number;
  /** OpenSSH public key lines let in as the OS user. */
  authorizedKeys: string[];
  /**
   * What the booted system starts before its SSH server does (cloud-init's first stages), given
   * the machine's session command (the way in: the host never writes its mounted upper layer).
   * A failure stops the machine and fails the start.
   */
  onBoot?: (session: string) => void;
}

/** One thing a stand-in recorded: e.g. `{ tool: "systemctl", verb: "enable", subject: "x.service" }`. */
export interface MachineRecord {
  tool: string;
  verb: string;
  subject: string;
}

/** A field of MachineArgs that breaks its rule. */
export class MachineArgsError extends Error {
  override readonly name = "MachineArgsError";
}

/** The machine's sandbox cannot run here (unshare needs root for its mount namespace). */
class MachineSandboxUnavailableError extends Error {
  override readonly name = "MachineSandboxUnavailableError";
}

/** The machine's sandbox did not come up (its mounts failed); the message carries the boot script's output. */
class MachineBootError extends Error {
  override readonly name = "MachineBootError";
}

const BOOT_TIMEOUT_MS = 10_000;

/** Starts the machine's first process and resolves with it once its root is mounted. */
async function boot(layout: SandboxLayout): Promise<ChildProcess> {
  rmSync(bootedMarker(layout), { force: true });
  const [command, ...args] = bootCommand(layout);
  const init = spawn(command!, args, { stdio: ["ignore", "ignore", "pipe"] });
  let output = "";
  init.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const deadline = Date.now() + BOOT_TIMEOUT_MS;
  for (;;) {
    // unshare --fork: its one child is PID 1 of the machine's namespaces, the process sessions join.
    const [inner] = init.pid === undefined ? [] : descendantProcesses(init.pid);
    if (inner !== undefined && existsSync(bootedMarker(layout))) {
      writeFileSync(initPidFile(layout), `${inner}\n`);
      return init;
    }
    if (init.exitCode !== null || Date.now() > deadline) {
      init.kill("SIGKILL");
      throw new MachineBootError(
        `machine ${layout.hostname} did not boot (${init.exitCode === null ? "timed out" : `exit ${init.exitCode}`}):\n${output}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const LOOPBACK = /^127\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;

function validate(args: MachineArgs): void {
  if (!/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/.test(args.name))
    throw new MachineArgsError(`name ${JSON.stringify(args.name)}: lowercase letters, digits and inner hyphens, at most 63`);
  const octets = LOOPBACK.exec(args.address);
  if (!octets || octets.slice(1).some((o) => Number(o) > 255) || args.address === "127.0.0.1")
    throw new MachineArgsError(`address ${JSON.stringify(args.address)}: a loopback address 127.x.y.z other than 127.0.0.1`);
  if (args.port !== undefined && !(Number.isInteger(args.port) && args.port > 0 && args.port < 65536))
    throw new MachineArgsError(`port ${args.port}: an integer from 1 to 65535`);
  if (
    args.authorizedKeys.length === 0 ||
    args.authorizedKeys.some((key) => !/^(ssh-|ecdsa-sha2-)\S+ \S+/.test(key.trim()) || key.trim().includes("\n"))
  )
    throw new MachineArgsError("authorizedKeys: one or more OpenSSH public key lines");
}

export class Machine {
  private hung = false;

  private constructor(
    readonly name: string,
    readonly address: string,
    readonly port: number,
    /** The OS user the authorized keys log in as (this host's user: sshd runs sessions as a real account). */
    readonly user: string,
    /** The machine's own files, at their paths inside it (the sandbox's upper layer). */
    readonly root: string,
    private readonly server: OpenSshServer,
    private readonly init: ChildProcess,
  ) {}

  static async start(args: MachineArgs): Promise<Machine> {
    validate(args);
    if (process.getuid?.() !== 0)
      throw new MachineSandboxUnavailableError("a machine's sandbox needs root (unshare --mount, overlay mounts); run as root");
    const layout = sandboxLayout(args.dir, args.name);
    mkdirSync(args.dir, { recursive: true });
    writeSandbox(layout);
    const sshDir = join(layout.root, "etc", "ssh");
    mkdirSync(sshDir, { recursive: true });
    // Generated once, as an installed system's first boot does; a restart keeps them (a pinned key stays valid).
    const hostKeyFiles = HOST_KEY_TYPES.map((type) => {
      const file = join(sshDir, `ssh_host_${type}_key`);
      if (!existsSync(file)) execFileSync("ssh-keygen", ["-q", "-t", type, "-N", "", "-C", `root@${args.name}`, "-f", file]);
      return file;
    });
    const { username, homedir } = userInfo();
    const authorizedKeysFile = join(layout.root, homedir, ".ssh", "authorized_keys");
    mkdirSync(join(layout.root, homedir, ".ssh"), { recursive: true, mode: 0o700 });
    writeFileSync(authorizedKeysFile, args.authorizedKeys.map((key) => `${key.trim()}\n`).join(""), { mode: 0o600 });
    // Booted once its files are written: the host does not write the upper layer under a mounted overlay.
    const init = await boot(layout);
    let server: OpenSshServer;
    try {
      args.onBoot?.(sessionCommand(layout));
      server = await OpenSshServer.start({
        dir: args.dir,
        address: args.address,
        port: args.port ?? 22,
        hostKeyFiles,
        authorizedKeysFile,
        extraConfig: [
          `AllowUsers ${username}`,
          `ForceCommand ${sessionCommand(layout)}`,
          // A box's sessions run commands; nothing reaches the host's network or agent through them.
          "AllowTcpForwarding no",
          "AllowAgentForwarding no",
          "AllowStreamLocalForwarding no",
          "PermitTunnel no",
          "X11Forwarding no",
          "PermitUserEnvironment no",
        ],
      });
    } catch (error) {
      killProcesses([...(init.pid === undefined ? [] : descendantProcesses(init.pid)), init.pid!]);
      throw error;
    }
    return new Machine(args.name, args.address, server.port, username, layout.root, server, init);
  }

  /** The public host key of `type`, as a known_hosts or a pin carries it: `<algorithm> <base64>`. */
  hostKey(type: HostKeyType): string {
    const [algorithm, key] = readFileSync(join(this.root, "etc", "ssh", `ssh_host_${type}_key.pub`), "utf8").split(" ");
    return `${algorithm} ${key}`;
  }

  /** What the stand-ins recorded, oldest first. */
  records(): MachineRecord[] {
    const file = join(this.root, RECORDS_PATH);
    if (!existsSync(file)) return [];
    return readFileSync(file, "utf8")
      .split("\n")
      .filter(Boolean)
      .map((line) => {
        const [tool = "", verb = "", subject = ""] = line.split("\t");
        return { tool, verb, subject };
      });
  }

  /** SSH sessions its server let in so far (sshd's "Accepted publickey" log lines). */
  acceptedSshSessions(): number {
    return this.server.output.split("\n").filter((line) => line.includes("Accepted publickey")).length;
  }

  /** Whether systemd (the systemctl stand-in) has `unit` running, e.g. `k0sworker.service`. */
  unitActive(unit: string): boolean {
    return existsSync(join(this.root, UNIT_STATE_DIR, `${unit}.active`));
  }

  /** The packages apt-get or dpkg "installed" on it. */
  packages(): string[] {
    const file = join(this.root, PACKAGES_PATH);
    return existsSync(file) ? readFileSync(file, "utf8").split("\n").filter(Boolean) : [];
  }

  /** The text of a file at `path` inside the machine if it wrote one, else undefined (the host's is not read). */
  ownFile(path: string): string | undefined {
    const file = join(this.root, path);
    return existsSync(file) ? readFileSync(file, "utf8") : undefined;
  }

  /**
   * Freezes its SSH server (SIGSTOP), as on a box that hangs: the kernel still accepts connections,
   * nothing answers them. Only stop() ends it.
   */
  hang(): void {
    if (this.server.pid !== undefined) process.kill(this.server.pid, "SIGSTOP");
    this.hung = true;
  }

  /** Stops sshd and the machine: every process in it, of any session, ends with its first process. */
  async stop(): Promise<void> {
    // A frozen sshd takes its SIGTERM only once it runs again.
    if (this.hung && this.server.pid !== undefined) process.kill(this.server.pid, "SIGCONT");
    const sessions = this.server.pid === undefined ? [] : descendantProcesses(this.server.pid);
    await this.server.stop();
    killProcesses(sessions);
    if (this.init.exitCode !== null || this.init.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => this.init.once("exit", () => resolve()));
    killProcesses([...(this.init.pid === undefined ? [] : descendantProcesses(this.init.pid)), this.init.pid!]);
    await exited;
  }
}
