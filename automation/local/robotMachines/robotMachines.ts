/**
 * The fake Robot webservice's servers as machines (issue #38 part 2): one RobotMachine per server
 * with a main IPv4 address, listening on that address (`server_ip`, 127.0.3.i), attached to the
 * fake (FakeRobot.attachMachines) so that each boot a reset causes boots the machine: into the
 * rescue system with the keys the activation named (their public keys from the fake's key store),
 * else into the installed system. The knobs (docs/local-cloud.md, "Robot machines"): reboots that
 * do not take, machines that hang, BIOS servers.
 */
import { join } from "node:path";
import type { Machine } from "../machines/machine";
import { MachineKubelet } from "../machines/machineKubelet";
import type { FakeRobot } from "../fakeRobot/fakeRobotApi";
import type { FakeRobotBoot } from "../fakeRobot/fakeRobotState";
import type { MachineDisk } from "./installimageRules";
import { REBOOT_REQUEST_PATH, RobotMachine } from "./robotMachine";

export interface RobotMachinesArgs {
  /** The fake whose servers the machines are. */
  robot: FakeRobot;
  /** Where the machines' directories go (one per server number). */
  dir: string;
  /** OpenSSH public key lines the servers' delivered OS lets in as root. Default none. */
  deliveredAuthorizedKeys?: string[];
  /** The first this many reboots of each machine do not take (NODEFLEET_SIM_ROBOT_RESETS_NOT_TAKING). Default 0. */
  resetsNotTaking?: number;
  /**
   * Server numbers whose machine hangs at the first boot of a system installed through the rescue,
   * until its next reboot (NODEFLEET_SIM_ROBOT_HANG).
   */
  hang?: readonly number[];
  /** Server numbers that boot in BIOS mode; the others boot UEFI (NODEFLEET_SIM_ROBOT_BIOS). */
  bios?: readonly number[];
  /** The disks of every machine. Default DEFAULT_DISKS. */
  disks?: readonly MachineDisk[];
  /** How long each reboot keeps a machine off (RobotMachineArgs.rebootOffMs). Default 0. */
  rebootOffMs?: number;
  /** How long installimage's install takes (RobotMachineArgs.installMs, NODEFLEET_SIM_ROBOT_INSTALL_MS). Default 0. */
  installMs?: number;
}

export class RobotMachines {
  private readonly machines = new Map<number, RobotMachine>();
  /** Reboots still to fail, by server number. */
  private readonly notTaking = new Map<number, number>();
  private readonly hanging = new Set<number>();
  /** Servers whose installed system hangs at every boot (breakForGood). */
  private readonly broken = new Set<number>();
  private readonly timers = new Set<NodeJS.Timeout>();
  /** The kubelet of each installed system that runs, by server number (a new boot gets a new one). */
  private readonly kubelets = new Map<number, { machine: Machine; kubelet: MachineKubelet }>();
  private readonly kubeletTrouble = new Map<number, string>();
  private kubeletTimer: NodeJS.Timeout | undefined;
  private rebootTimer: NodeJS.Timeout | undefined;
  private kubeletPass: Promise<void> = Promise.resolve();
  private stopped = false;
  /** The running systems whose `reboot` was already passed on. */
  private readonly rebooted = new WeakSet<Machine>();

  private constructor(private readonly args: RobotMachinesArgs) {}

  /** Starts a machine for every server with an IPv4 address (its delivered OS) and attaches them to the fake. */
  static async start(args: RobotMachinesArgs): Promise<RobotMachines> {
    const fleet = new RobotMachines(args);
    for (const server of args.robot.state.servers()) {
      if (server.ip === null) continue;
      const machine = new RobotMachine({
        serverNumber: server.serverNumber,
        address: server.ip,
        dir: join(args.dir, String(server.serverNumber)),
        deliveredHostname: server.name.toLowerCase().replace(/[^a-z0-9-]/g, "-"),
        deliveredAuthorizedKeys: args.deliveredAuthorizedKeys,
        firmware: args.bios?.includes(server.serverNumber) ? "bios" : "uefi",
        disks: args.disks,
        rebootOffMs: args.rebootOffMs,
        installMs: args.installMs,
      });
      fleet.machines.set(server.serverNumber, machine);
      fleet.notTaking.set(server.serverNumber, args.resetsNotTaking ?? 0);
      if (args.hang?.includes(server.serverNumber)) fleet.hanging.add(server.serverNumber);
      if (server.poweredOn) void machine.boot("installed");
    }
    args.robot.attachMachines({
      takes: (serverNumber) => fleet.takes(serverNumber),
      onBoot: (serverNumber, boot) => fleet.onBoot(serverNumber, boot),
      onPowerOff: (serverNumber) => void fleet.machines.get(serverNumber)?.powerOff(),
    });
    try {
      await fleet.settled();
    } catch (error) {
      await fleet.stop();
      throw error;
    }
    return fleet;
  }

  /** The machine of a server; throws for a server without one. */
  machine(serverNumber: number): RobotMachine {
    const machine = this.machines.get(serverNumber);
    if (!machine) throw new Error(`Robot server ${serverNumber} has no machine (unknown, or no IPv4 address)`);
    return machine;
  }

  /** The next `count` reboots of the server do not take (at run time, as the knob at start). */
  setResetsNotTaking(serverNumber: number, count: number): void {
    this.machine(serverNumber);
    this.notTaking.set(serverNumber, count);
  }

  /**
   * The server's machine hangs now and after every boot of its installed system, as a box with a
   * hardware fault that no reset cures, until `repair`.
   */
  async breakForGood(serverNumber: number): Promise<void> {
    this.broken.add(serverNumber);
    await this.machine(serverNumber).hang();
  }

  /** A person fixed the box: its next boot no longer hangs. */
  repair(serverNumber: number): void {
    this.broken.delete(serverNumber);
  }

  /** The server's machine hangs now: SSH stops answering until its next reboot. */
  async hang(serverNumber: number): Promise<void> {
    await this.machine(serverNumber).hang();
  }

  /** Resolves once every machine has done the boots asked for so far (a `man` boot waits for its technician). */
  async settled(): Promise<void> {
    for (const machine of this.machines.values()) await machine.settled();
  }

  /**
   * Passes each system's own `reboot` to the fake (REBOOT_REQUEST_PATH), and runs the kubelets of
   * the installed systems, as the Elastic Metal machines do
   * (fakeScalewayMachines.ts): a kubelet the self-join started joins through the node agent's TLS
   * bootstrap (machineKubelet.ts), a joined one sends its heartbeat; a hung or rebooting system's
   * does not. Trouble is said once through `log`.
   */
  startKubelets(log: (message: string) => void, intervalMs = 500): void {
    // Reboots on their own timer: a kubelet's join (a CSR and its approval) must not hold them up.
    this.rebootTimer = setInterval(() => this.passReboots(), 250);
    const tick = async (): Promise<void> => {
      if (this.stopped) return;
      await Promise.all([...this.machines].map(([serverNumber, machine]) => this.passKubelet(serverNumber, machine, log)));
      if (!this.stopped) this.kubeletTimer = setTimeout(() => (this.kubeletPass = tick()), intervalMs);
    };
    this.kubeletPass = tick();
  }

  /** A `reboot` run in a running system: the fake boots it as a reset would. */
  private passReboots(): void {
    for (const [serverNumber, machine] of this.machines) {
      const current = machine.current;
      if (!current || this.rebooted.has(current) || current.ownFile(REBOOT_REQUEST_PATH) === undefined) continue;
      this.rebooted.add(current);
      this.args.robot.rebootFromOs(serverNumber);
    }
  }

  /** One pass of a machine's kubelet: a join when it was started, else its heartbeat; none while it does not run installed. */
  private async passKubelet(serverNumber: number, machine: RobotMachine, log: (message: string) => void): Promise<void> {
    const current = machine.current;
    const session = machine.session;
    if (!current || !session || machine.system !== "installed" || machine.hung) {
      this.kubelets.delete(serverNumber);
      return;
    }
    let entry = this.kubelets.get(serverNumber);
    if (entry?.machine !== current) {
      entry = { machine: current, kubelet: new MachineKubelet(current, session) };
      this.kubelets.set(serverNumber, entry);
    }
    try {
      await entry.kubelet.pass();
      this.kubeletTrouble.delete(serverNumber);
    } catch (error) {
      const message = (error as Error).message;
      if (this.kubeletTrouble.get(serverNumber) !== message) log(`Robot machine ${serverNumber}: kubelet: ${message}`);
      this.kubeletTrouble.set(serverNumber, message);
    }
  }

  /** Detaches from the fake and stops every machine. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.rebootTimer);
    clearTimeout(this.kubeletTimer);
    await this.kubeletPass;
    this.args.robot.attachMachines(undefined);
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    for (const machine of this.machines.values()) await machine.stop();
  }

  private takes(serverNumber: number): boolean {
    const left = this.notTaking.get(serverNumber) ?? 0;
    if (left <= 0) return true;
    this.notTaking.set(serverNumber, left - 1);
    return false;
  }

  private onBoot(serverNumber: number, boot: FakeRobotBoot): void {
    const machine = this.machines.get(serverNumber);
    if (!machine) return;
    const run = () => {
      if (boot.took === false) void machine.rebootUnchanged().then(() => (this.broken.has(serverNumber) ? machine.hang() : undefined));
      else if (boot.into === "rescue") void machine.boot("rescue", this.rescueKeys(boot));
      else void machine.boot("installed").then(() => this.hangIfKnobbed(serverNumber, machine));
    };
    // A manual reset (`man`) boots when the technician is done.
    const delay = boot.at - Date.now();
    if (delay <= 0) return run();
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      run();
    }, delay);
    this.timers.add(timer);
  }

  /** The public keys the rescue activation named, from the fake's key store (a key deleted since is left out). */
  private rescueKeys(boot: FakeRobotBoot): string[] {
    return (boot.rescue?.authorizedKeys ?? []).flatMap((fingerprint) => {
      const key = this.args.robot.state.key(fingerprint);
      return key ? [key.data] : [];
    });
  }

  /** The hang knobs: a broken machine hangs at every boot; else once, at the first boot of a system installed through the rescue. */
  private async hangIfKnobbed(serverNumber: number, machine: RobotMachine): Promise<void> {
    if (this.broken.has(serverNumber)) return machine.hang();
    if (!this.hanging.has(serverNumber) || !machine.justInstalled) return;
    this.hanging.delete(serverNumber);
    await machine.hang();
  }
}
