/**
 * The fake Scaleway API's installed Elastic Metal servers as machines you SSH into
 * (docs/local-cloud.md, "Machines you can SSH into"): each server whose install has completed runs
 * a machine (../machines/machine.ts) on its reported IPv4, a loopback address of 127.0.4.0/22, with
 * the install's hostname and the public keys of the IAM SSH keys the install named as the OS user's
 * authorized keys. A reinstall tears the machine down while it installs and brings up a fresh one
 * (new host keys); a reboot stops it while the server is `starting` and starts it again with its
 * files (its processes, /run and /tmp gone); a delete tears it down for good. On an offer with the
 * `cloud-init` tag, each boot runs cloud-init in the machine with the server's user data
 * (../machines/machineCloudInit.ts: write_files and runcmd once per install, anything else refused
 * and said here); on other offers cloud-init reports itself disabled. The machines follow the fake's state, so a
 * restarted local cloud brings the same machines back with the host keys they had.
 */
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Machine } from "../machines/machine";
import { MachineKubelet } from "../machines/machineKubelet";
import { sandboxLayout, sessionCommand } from "../machines/machineSandbox";
import { CLOUD_INIT_RESULT_PATH, type CloudInitRun, startCloudInit } from "../machines/machineCloudInit";
import { offerById, offerRunsCloudInit } from "./fakeScalewayCatalog";
import type { FakeEmServer, FakeScalewayState } from "./fakeScalewayState";

/** The loopback block the Elastic Metal machines' addresses come from, 127.<block>.4.0/22 (the fake Robot's are 127.0.3.x). */
const MACHINE_BLOCK = { third: 4, first: 1, hosts: 4 * 256 - 2 } as const;

/**
 * The lowest address of 127.<block>.4.0/22 no server of `used` has (past the block, the first one
 * again: 1022 servers are plenty locally).
 */
export function machineAddress(used: Iterable<string>, block = 0): string {
  const taken = new Set(used);
  for (let i = 0; i < MACHINE_BLOCK.hosts; i++) {
    const n = MACHINE_BLOCK.first + i;
    const address = `127.${block}.${MACHINE_BLOCK.third + Math.floor(n / 256)}.${n % 256}`;
    if (n % 256 !== 0 && n % 256 !== 255 && !taken.has(address)) return address;
  }
  return `127.${block}.${MACHINE_BLOCK.third}.${MACHINE_BLOCK.first}`;
}

/** Whether this process can run machines (their sandbox needs root: mount namespaces, overlay mounts, port 22). */
export function machinesCanRun(): boolean {
  return process.getuid?.() === 0;
}

/** What a machine's directory keeps of the install it was made by. */
interface InstallRecord {
  /** The install's start instant: a reinstall has another, and gets a fresh machine. */
  installStartsAt: number;
  hostname: string;
  /** The public keys the install let in, resolved once (a key deleted from IAM later stays on the box, as on a real one). */
  authorizedKeys: string[];
}

export interface ScalewayMachinesArgs {
  state: FakeScalewayState;
  /** Where each server's machine keeps its files, one directory per server id. */
  dir: string;
  /** How often the servers are compared with the machines. Default 200 ms. */
  intervalMs?: number;
  /** Where a machine that cannot start, or a key that cannot be found, is said once. */
  log: (message: string) => void;
}

/** A server's hostname: the install's, else its name, made a valid hostname (lowercase, inner hyphens, 63 at most). */
function hostnameOf(server: FakeEmServer): string {
  const wanted = (server.install?.hostname || server.name).toLowerCase();
  const cleaned = wanted
    .replace(/[^a-z0-9-]+/g, "-")
    .slice(0, 63)
    .replace(/^-+|-+$/g, "");
  return cleaned || `scw-${server.id.slice(0, 8)}`;
}

export class ScalewayMachines {
  private readonly running = new Map<
    string,
    {
      machine: Machine;
      installStartsAt: number;
      /** The server's reboot when the machine started: another one restarts it. */
      rebootingUntil: number | undefined;
      kubelet: MachineKubelet;
    }
  >();
  /** The last trouble each machine's kubelet had, so each is said once. */
  private readonly kubeletTrouble = new Map<string, string>();
  /** `serverId/installStartsAt` of installs already said not to run, so each is said once. */
  private readonly refused = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private pass: Promise<void> = Promise.resolve();
  private stopped = false;

  constructor(private readonly args: ScalewayMachinesArgs) {}

  /** Compares every so often; the first comparison starts at once. */
  start(): void {
    const tick = async (): Promise<void> => {
      if (this.stopped) return;
      await this.reconcile().catch((error) => this.args.log(`Elastic Metal machines: ${(error as Error).message}`));
      if (!this.stopped) this.timer = setTimeout(() => (this.pass = tick()), this.args.intervalMs ?? 200);
    };
    this.pass = tick();
  }

  /** The running machine of a server, if any (tests read its host keys and records). */
  machine(serverId: string): Machine | undefined {
    return this.running.get(serverId)?.machine;
  }

  /** Starts the machines of completed installs and stops those of deleted or reinstalling servers. */
  async reconcile(): Promise<void> {
    const now = Date.now();
    const servers = new Map(this.args.state.all("servers").map((s) => [s.id, s]));
    for (const [id, { machine, installStartsAt, rebootingUntil }] of [...this.running]) {
      const server = servers.get(id);
      const reinstalled = server?.install?.startsAt !== installStartsAt;
      if (!reinstalled && server?.rebootingUntil === rebootingUntil) continue;
      this.running.delete(id);
      await machine.stop();
      // Deleted, or reinstalling: the box's OS is gone either way, and so are its host keys. A reboot keeps its disk.
      if (reinstalled) rmSync(join(this.args.dir, id), { recursive: true, force: true });
    }
    for (const server of servers.values()) {
      if (this.stopped) return;
      const install = server.install;
      const rebooting = server.rebootingUntil !== undefined && now < server.rebootingUntil;
      if (!install || now < install.endsAt || rebooting || this.running.has(server.id)) continue;
      const key = `${server.id}/${install.startsAt}`;
      if (this.refused.has(key)) continue;
      try {
        const machine = await this.startMachine(server, install.startsAt);
        const session = sessionCommand(sandboxLayout(join(this.args.dir, server.id, "machine"), machine.name));
        this.running.set(server.id, {
          machine,
          installStartsAt: install.startsAt,
          rebootingUntil: server.rebootingUntil,
          kubelet: new MachineKubelet(machine, session),
        });
      } catch (error) {
        this.refused.add(key);
        this.args.log(`Elastic Metal server ${server.name} (${server.id}): no machine on ${server.ipv4}: ${(error as Error).message}`);
      }
    }
    // Each kubelet that was started joins; a joined one sends its heartbeat.
    for (const [id, { machine, kubelet }] of this.running) {
      if (this.stopped) return;
      try {
        await kubelet.pass();
        this.kubeletTrouble.delete(id);
      } catch (error) {
        const message = (error as Error).message;
        if (this.kubeletTrouble.get(id) !== message) this.args.log(`Elastic Metal machine ${machine.name}: kubelet: ${message}`);
        this.kubeletTrouble.set(id, message);
      }
    }
    // Directories of servers gone while the local cloud was down.
    if (existsSync(this.args.dir))
      for (const id of readdirSync(this.args.dir)) if (!servers.has(id)) rmSync(join(this.args.dir, id), { recursive: true, force: true });
  }

  private async startMachine(server: FakeEmServer, installStartsAt: number): Promise<Machine> {
    const dir = join(this.args.dir, server.id);
    const recordFile = join(dir, "install.json");
    let record = existsSync(recordFile) ? (JSON.parse(readFileSync(recordFile, "utf8")) as InstallRecord) : undefined;
    if (record?.installStartsAt !== installStartsAt) {
      // A directory of an earlier install (reinstalled while the local cloud was down): a fresh box.
      rmSync(dir, { recursive: true, force: true });
      const ids = server.install!.sshKeyIds;
      const keys = ids.map((id) => this.args.state.get("sshKeys", id)).filter((k) => k !== undefined && !k.disabled);
      if (keys.length === 0)
        throw new Error(`none of its install's ssh_key_ids (${ids.join(", ")}) names an enabled IAM SSH key (POST /iam/v1alpha1/ssh-keys)`);
      record = { installStartsAt, hostname: hostnameOf(server), authorizedKeys: keys.map((k) => k!.publicKey) };
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      writeFileSync(recordFile, `${JSON.stringify(record, null, 2)}\n`);
    }
    const offer = offerById(server.offerId);
    const cloudInit = offer !== undefined && offerRunsCloudInit(offer[1]);
    const boot: { run?: CloudInitRun } = {};
    const machine = await Machine.start({
      name: record.hostname,
      dir: join(dir, "machine"),
      address: server.ipv4,
      authorizedKeys: record.authorizedKeys,
      // The installer of a cloud-init offer hands the server's user data to cloud-init at every boot.
      ...(cloudInit
        ? {
            onBoot: (session: string) =>
              (boot.run = startCloudInit(
                session,
                server.userData === null ? null : Buffer.from(server.userData, "base64").toString("utf8"),
                server.id,
              )),
          }
        : {}),
    });
    if (boot.run) this.watchCloudInit(server, machine, boot.run);
    return machine;
  }

  /** Says a refused user data at once, and a run that ended in error once it ends (both once per boot). */
  private watchCloudInit(server: FakeEmServer, machine: Machine, run: CloudInitRun): void {
    const where = `Elastic Metal machine ${machine.name} (server ${server.id})`;
    if (run.refusal !== undefined) this.args.log(`${where}: cloud-init refused its user data: ${run.refusal}`);
    void run.ended.then((code) => {
      if (code !== 1 || run.refusal !== undefined || this.stopped) return;
      const result = machine.ownFile(CLOUD_INIT_RESULT_PATH) ?? "";
      let errors: string[] = [];
      try {
        errors = (JSON.parse(result) as { v1?: { errors?: string[] } }).v1?.errors ?? [];
      } catch {
        errors = [`no readable ${CLOUD_INIT_RESULT_PATH}`];
      }
      this.args.log(`${where}: cloud-init ended in error: ${errors.join("; ")} (see /var/log/cloud-init-output.log in the machine)`);
    });
  }

  /** Stops comparing and stops every machine; their directories stay for the next start. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.pass;
    for (const { machine } of this.running.values()) await machine.stop();
    this.running.clear();
  }
}
