/**
 * A real OpenSSH server (Debian's openssh-server, `/usr/sbin/sshd`) run in the foreground with a
 * config file of its own: its own address and port, host keys, authorized keys file and pid file,
 * touching no system file. The command provider plugin's test and the local cloud's machines
 * (`machine.ts`) both start theirs through this class.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export const SSHD = "/usr/sbin/sshd";

/** What the server listens on and whom it lets in. */
export interface OpenSshServerArgs {
  /** Directory for `sshd_config` and `sshd.pid`; it must exist. */
  dir: string;
  /** Loopback address to listen on, e.g. `127.0.0.1` or a machine's own `127.x.y.z`. */
  address: string;
  port: number;
  /** Private host key files, one per type the server offers (ssh-keygen's format). */
  hostKeyFiles: string[];
  /** The file sshd reads the authorized keys of every user from. */
  authorizedKeysFile: string;
  /** Further sshd_config lines (`AcceptEnv`, `ForceCommand`, ...), appended as given. */
  extraConfig?: string[];
}

/** sshd exited or did not say it listens in time; the message carries its log. */
export class OpenSshServerStartError extends Error {
  override readonly name = "OpenSshServerStartError";
}

const LISTEN_TIMEOUT_MS = 10_000;

export class OpenSshServer {
  private log = "";

  private constructor(
    private readonly child: ChildProcess,
    readonly address: string,
    readonly port: number,
  ) {
    child.stderr!.on("data", (chunk: Buffer) => (this.log += chunk.toString()));
  }

  /** Writes the config, starts sshd and resolves once it listens; rejects with its log if it does not. */
  static async start(args: OpenSshServerArgs): Promise<OpenSshServer> {
    if (!existsSync(SSHD)) throw new OpenSshServerStartError(`${SSHD} not installed (Debian: apt-get install openssh-server)`);
    const config = join(args.dir, "sshd_config");
    writeFileSync(
      config,
      [
        `ListenAddress ${args.address}:${args.port}`,
        ...args.hostKeyFiles.map((file) => `HostKey ${file}`),
        `AuthorizedKeysFile ${args.authorizedKeysFile}`,
        `PidFile ${join(args.dir, "sshd.pid")}`,
        // Test directories are not owned as sshd's ownership checks want (a temporary directory, a worktree).
        "StrictModes no",
        "UsePAM no",
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        "PermitRootLogin prohibit-password",
        // sshd runs each command through the account's shell; Debian's bash, seeing SSH_CLIENT at
        // shell level 1, then sources the account's ~/.bashrc: this host's, whose `pyenv init`
        // rehash writes the host's shims and waits up to 60 s for their lock when sessions overlap.
        // A level of 1 makes every session's shell a nested one, which reads no start file.
        "SetEnv SHLVL=1",
        ...(args.extraConfig ?? []),
      ].join("\n") + "\n",
    );
    // sshd's privilege separation directory (the package's service unit creates it at boot).
    if (process.getuid?.() === 0) mkdirSync("/run/sshd", { recursive: true, mode: 0o755 });
    const child = spawn(SSHD, ["-D", "-e", "-f", config], { stdio: ["ignore", "ignore", "pipe"] });
    const server = new OpenSshServer(child, args.address, args.port);
    await server.listening();
    return server;
  }

  /** sshd's output so far (`-e`: its log goes to stderr). */
  get output(): string {
    return this.log;
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** Stops the listener and waits for it to exit; sessions it forked end with their connections. */
  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => this.child.once("exit", () => resolve()));
    this.child.kill("SIGTERM");
    await exited;
  }

  private listening(): Promise<void> {
    return new Promise((resolve, reject) => {
      const fail = (why: string) => {
        clearInterval(poll);
        clearTimeout(timer);
        this.child.kill("SIGKILL");
        reject(new OpenSshServerStartError(`sshd on ${this.address}:${this.port} ${why}:\n${this.log}`));
      };
      const poll = setInterval(() => {
        if (this.log.includes("Server listening")) {
          clearInterval(poll);
          clearTimeout(timer);
          resolve();
        } else if (this.child.exitCode !== null) fail(`exited with ${this.child.exitCode}`);
      }, 50);
      const timer = setTimeout(() => fail(`did not listen within ${LISTEN_TIMEOUT_MS} ms`), LISTEN_TIMEOUT_MS);
      this.child.once("error", (error) => fail(`could not start (${error.message})`));
    });
  }
}
