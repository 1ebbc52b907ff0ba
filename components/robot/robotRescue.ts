/**
 * `pulumi-nodejs:dynamic/nodefleet:RobotRescue`: puts an adopted Robot server into the Linux rescue
 * system: deletes a pending rescue activation (its keys may be stale), activates rescue with the
 * pool's SSH key fingerprints, then resets along CAPH's ladder with the reset types the server
 * offers: `sw` (a clean reboot) while the installed system answers on SSH, `hw` when it has not gone
 * down in time; never `power` (a power-button press, no power cycle). With `checkRescue` it checks
 * instead that each reboot reached the rescue (SSH in, RESCUE_SYSTEM_CHECK) and escalates (ssh
 * reboot, sw, hw) when the box came back into its installed OS (rescueBootLadder.ts), and adopts a
 * rescue that already runs with the pool's keys (a killed run's boot) without a reset. Creating it starts a
 * (re)install; its outputs give the server's address. A `pulumi.dynamic` resource: its serialized
 * provider uses only the Robot client and its inputs; the credentials are a secret input and output.
 */
import type * as ChildProcess from "node:child_process";
import type * as Fs from "node:fs";
import type * as Net from "node:net";
import type * as Os from "node:os";
import type * as Path from "node:path";
import * as pulumi from "@pulumi/pulumi";
import {
  ROBOT_BASE_URL,
  RobotClient,
  type RobotCredentials,
  type RobotResetType,
  isRobotNotFound,
  robotCredentialsFromEnv,
} from "./robotClient";
import { type RescueProbe, bootIntoRescue } from "./rescueBootLadder";
import { RESCUE_SYSTEM_CHECK } from "./rescueSystemCheck";

export interface RobotRescueState {
  serverNumber: number;
  fingerprints: string[];
  /** The member's generation: a new one reinstalls the server. */
  generation: string;
  baseUrl: string;
  /** JSON of RobotCredentials, or "" when none were configured (render, simulation). */
  credentials: string;
  /** Output: the server's main IPv4 address (from GET /server). */
  serverIp?: string;
  /** Output: the reset types used to boot into rescue, comma-separated (e.g. `sw` or `sw,hw`). */
  resetType?: string;
  /** Seconds each ladder step waits for the system to go down; default RESET_WAIT_SECONDS. */
  resetWaitSeconds?: number;
  /** `host:port` probed for "still answering"; default the server's address, port 22 (tests use a local listener). */
  probe?: string;
  /**
   * Public keys (OpenSSH lines) to upload to the Robot account when it has none by their
   * fingerprint (which `fingerprints` holds too); absent for pools that name deposited keys only.
   */
  uploadKeys?: RobotKeyToUpload[];
  /**
   * Check the boot (rescueBootLadder.ts): after each reboot, SSH in as root and run
   * RESCUE_SYSTEM_CHECK; a box back in its installed OS gets the next rung (ssh reboot, sw, hw).
   * Absent or false: the older ladder, which only waits for the installed system to go down.
   */
  checkRescue?: boolean;
  /** The private key (OpenSSH PEM) the check logs in with; a secret. Absent: the SSH agent (SSH_AUTH_SOCK). */
  sshPrivateKey?: string;
}

/** A public key a pool names, with the fingerprint Robot will give it. */
export interface RobotKeyToUpload {
  readonly fingerprint: string;
  /** The OpenSSH line (`type base64 [comment]`). */
  readonly line: string;
}

/**
 * Uploads each key the account lacks (`GET /key/{fingerprint}` answers 404) with `POST /key`, named
 * by its comment or `nodefleet`; a key already there, under any name, is left as it is.
 */
async function uploadMissingKeys(client: RobotClient, keys: readonly RobotKeyToUpload[]): Promise<string[]> {
  const uploaded: string[] = [];
  for (const { fingerprint, line } of keys) {
    if (await client.key(fingerprint)) continue;
    const [type, base64, ...comment] = line.trim().split(/\s+/);
    try {
      await client.uploadKey(comment.join(" ") || "nodefleet", `${type} ${base64}`);
    } catch (error) {
      // Another member's rescue uploaded it between the look-up and the upload (they run at once).
      if ((error as { status?: unknown; code?: unknown }).code === "KEY_ALREADY_EXISTS") continue;
      throw error;
    }
    uploaded.push(fingerprint);
  }
  return uploaded;
}

/** The reset ladder for the rescue boot: `sw` then `hw`, of those the server offers. */
export function rescueResetLadder(offered: readonly string[]): RobotResetType[] {
  const ladder = (["sw", "hw"] as const).filter((type) => offered.includes(type));
  if (ladder.length === 0) {
    throw new Error(
      `the server offers neither an sw nor an hw reset (only ${offered.join(", ") || "none"}); reset it by hand after rescue activation`,
    );
  }
  return ladder;
}

/** How long a step of the ladder waits for the installed system to go down before the next one. */
const RESET_WAIT_SECONDS = 180;

export interface ResetLadderIo {
  /** Robot's reset call. */
  readonly reset: (type: RobotResetType) => Promise<void>;
  /** True while the installed system accepts TCP connections on its SSH port. */
  readonly answers: () => Promise<boolean>;
  readonly sleep: (ms: number) => Promise<void>;
  /** Seconds to wait after a reset for the system to go down (default RESET_WAIT_SECONDS). */
  readonly waitSeconds?: number;
  /** Seconds between probes (default 5). */
  readonly probeSeconds?: number;
}

/**
 * Walks the ladder and returns the reset types used. A system that does not answer at all is hung
 * or off, and CTRL+ALT+DEL would do nothing: it starts at `hw`. After each reset but the last, it
 * waits for the system to stop answering; if it does, the reboot into rescue is under way.
 */
export async function resetAlongLadder(ladder: readonly RobotResetType[], io: ResetLadderIo): Promise<RobotResetType[]> {
  const waitMs = (io.waitSeconds ?? RESET_WAIT_SECONDS) * 1000;
  const stepMs = (io.probeSeconds ?? 5) * 1000;
  const answering = await io.answers();
  const skipped = answering ? [...ladder] : ladder.filter((type) => type !== "sw");
  const steps = skipped.length > 0 ? skipped : [...ladder];
  const used: RobotResetType[] = [];
  for (const [index, type] of steps.entries()) {
    await io.reset(type);
    used.push(type);
    if (index === steps.length - 1) break;
    let down = false;
    for (let waited = 0; waited < waitMs && !down; waited += stepMs) {
      await io.sleep(stepMs);
      down = !(await io.answers());
    }
    if (down) break;
  }
  return used;
}

/**
 * The checked boot (rescueBootLadder.ts) with the system ssh client: the rescue's host key is
 * unknown (a fresh one at each rescue boot), so it is not verified here, as on every rescue
 * connection (docs/security.md); what runs is the read-only RESCUE_SYSTEM_CHECK, or `reboot` for
 * the ssh-reboot rung. Built-ins only (required inside): the provider is serialized into the state.
 */
async function checkedBootIntoRescue(client: RobotClient, inputs: RobotRescueState, host: string, port: number): Promise<string[]> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const childProcess = require("node:child_process") as typeof ChildProcess;
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const fs = require("node:fs") as typeof Fs;
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const os = require("node:os") as typeof Os;
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const path = require("node:path") as typeof Path;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "nodefleet-rescue-check-"));
  const keyFile = path.join(dir, "key");
  if (inputs.sshPrivateKey)
    fs.writeFileSync(keyFile, inputs.sshPrivateKey.endsWith("\n") ? inputs.sshPrivateKey : `${inputs.sshPrivateKey}\n`, { mode: 0o600 });
  const ssh = (command: string) =>
    new Promise<{ status: number | null; stderr: string }>((resolve) => {
      const child = childProcess.spawn(
        "ssh",
        [
          ...["-F", "/dev/null", "-p", String(port), "-o", "BatchMode=yes", "-o", "ConnectTimeout=10", "-o", "LogLevel=ERROR"],
          ...["-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "GlobalKnownHostsFile=/dev/null"],
          ...(inputs.sshPrivateKey ? ["-i", keyFile, "-o", "IdentitiesOnly=yes"] : []),
          `root@${host}`,
          command,
        ],
        { stdio: ["ignore", "ignore", "pipe"] },
      );
      let stderr = "";
      child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
      child.once("error", (error) => resolve({ status: 255, stderr: error.message }));
      child.once("close", (status) => resolve({ status, stderr }));
    });
  const probe = async (): Promise<RescueProbe> => {
    const { status, stderr } = await ssh(RESCUE_SYSTEM_CHECK);
    if (status === 0) return "rescue";
    // ssh's own failure (255): refused authentication means something answers; anything else, nothing does.
    if (status === 255)
      return /Permission denied|Host key verification failed|Too many authentication failures/.test(stderr) ? "other" : "down";
    return "other";
  };
  try {
    return await bootIntoRescue(inputs.serverNumber, (await client.resetOptions(inputs.serverNumber)).type, {
      reset: (type) => client.reset(inputs.serverNumber, type),
      sshReboot: async () => {
        const { status, stderr } = await ssh("nohup sh -c 'sleep 1; reboot' >/dev/null 2>&1 &");
        if (status !== 0) throw new Error(stderr.trim().split("\n").pop() || `ssh exit ${status}`);
      },
      probe,
      ensureRescueActive: async () => {
        if (!(await client.getRescue(inputs.serverNumber)).active) await client.activateRescue(inputs.serverNumber, inputs.fingerprints);
      },
      sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
      ...(inputs.resetWaitSeconds !== undefined ? { waitSeconds: inputs.resetWaitSeconds } : {}),
    });
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

function robotClientFor(state: Pick<RobotRescueState, "baseUrl" | "credentials" | "serverNumber">): RobotClient {
  if (!state.credentials) {
    throw new Error(
      `Robot server ${state.serverNumber}: no Robot webservice credentials were configured; set HROBOT_USER and HROBOT_PASSWORD (or secret config nodefleet:hrobotUser and nodefleet:hrobotPassword)`,
    );
  }
  return new RobotClient({ baseUrl: state.baseUrl, credentials: JSON.parse(state.credentials) as RobotCredentials });
}

/** Inputs whose change replaces the rescue (delete first), which reinstalls the server: another server, generation or rescue keys. */
export const ROBOT_RESCUE_REPLACE_ON_CHANGES = ["serverNumber", "generation", "fingerprints"] as const;

/** Exported for tests, which run its serialized form as the engine would. */
export const robotRescueProvider: pulumi.dynamic.ResourceProvider = {
  async create(inputs: RobotRescueState) {
    const client = robotClientFor(inputs);
    const server = await client.getServer(inputs.serverNumber);
    if (!server.server_ip) {
      throw new Error(
        `Robot server ${inputs.serverNumber} has no IPv4 address (server_ip is null: it was ordered IPv6-only); nodefleet reaches the rescue and installed systems over SSH to the main IPv4 address, so order one for it or remove the server from the pool`,
      );
    }
    await uploadMissingKeys(client, inputs.uploadKeys ?? []);
    const ladder = rescueResetLadder((await client.resetOptions(inputs.serverNumber)).type);
    // A pending activation from an earlier attempt may carry other keys: replace it.
    if ((await client.getRescue(inputs.serverNumber)).active) await client.deactivateRescue(inputs.serverNumber);
    await client.activateRescue(inputs.serverNumber, inputs.fingerprints);
    const ip = server.server_ip;
    // Built-ins only: the provider is serialized into the state.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const net = require("node:net") as typeof Net;
    const probe = inputs.probe ? /^(.+):(\d+)$/.exec(inputs.probe) : null;
    const probeHost = probe ? probe[1] : ip;
    const probePort = probe ? Number(probe[2]) : 22;
    const answers = () =>
      new Promise<boolean>((resolve) => {
        if (!probeHost) return resolve(false);
        const socket = net.connect({ host: probeHost, port: probePort, timeout: 3000 });
        const done = (up: boolean) => {
          socket.destroy();
          resolve(up);
        };
        socket.once("connect", () => done(true));
        socket.once("timeout", () => done(false));
        socket.once("error", () => done(false));
      });
    if (inputs.checkRescue) {
      const used = await checkedBootIntoRescue(client, inputs, probeHost ?? ip, probePort);
      // The box ran a rescue with our keys already (a killed run's boot, adopted): the activation
      // just made must not outlive it, or the install's reboot would boot the rescue again.
      if (used.length === 0) await client.deactivateRescue(inputs.serverNumber);
      return { id: String(inputs.serverNumber), outs: { ...inputs, serverIp: ip, resetType: used.join(",") } };
    }
    const used = await resetAlongLadder(ladder, {
      reset: (type) => client.reset(inputs.serverNumber, type),
      answers,
      sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
      ...(inputs.resetWaitSeconds !== undefined ? { waitSeconds: inputs.resetWaitSeconds } : {}),
    });
    return { id: String(inputs.serverNumber), outs: { ...inputs, serverIp: ip, resetType: used.join(",") } };
  },
  async diff(_id: string, olds: RobotRescueState, news: RobotRescueState) {
    const replaces: string[] = ROBOT_RESCUE_REPLACE_ON_CHANGES.filter((k) => JSON.stringify(olds[k]) !== JSON.stringify(news[k]));
    return {
      changes: replaces.length > 0 || olds.credentials !== news.credentials || olds.baseUrl !== news.baseUrl,
      replaces,
      // One physical server: the old rescue is deactivated before the new one is activated.
      deleteBeforeReplace: true,
    };
  },
  // Credentials or endpoint only: stored in place, nothing happens to the server.
  async update(_id: string, olds: RobotRescueState, news: RobotRescueState) {
    return { outs: { ...news, serverIp: olds.serverIp, resetType: olds.resetType } };
  },
  // The server stays (it is bought, not created): deleting only deactivates a pending rescue boot.
  async delete(_id: string, props: RobotRescueState) {
    if (!props.credentials) return;
    try {
      await robotClientFor(props).deactivateRescue(props.serverNumber);
    } catch (err) {
      if (!isRobotNotFound(err)) throw err;
    }
  },
};

export interface RobotRescueArgs {
  /** The Robot server number of the adopted server. */
  readonly serverNumber: number;
  /** MD5 fingerprints of Robot SSH keys the rescue system accepts. */
  readonly fingerprints: readonly string[];
  /** The member's generation suffix; a new value reinstalls the server. */
  readonly generation: string;
  /** Public keys to upload when the account lacks them (their fingerprints are in `fingerprints` too). Default none. */
  readonly uploadKeys?: readonly RobotKeyToUpload[];
  /** Robot webservice credentials; a secret. Default: none (create then fails, naming the variables to set). */
  readonly credentials?: pulumi.Input<RobotCredentials | undefined>;
  /** Default ROBOT_BASE_URL. */
  readonly baseUrl?: string;
  /** Check that each reboot reached the rescue system, escalating when it did not (RobotRescueState.checkRescue). Default false. */
  readonly checkRescue?: boolean;
  /** The private key the check logs in with; a secret. Default: the SSH agent. */
  readonly sshPrivateKey?: pulumi.Input<string>;
}

/**
 * Credentials from secret config nodefleet:hrobotUser/hrobotPassword, else (unless `fromEnv` is
 * false: the plugin reads its own environment) HROBOT_USER/HROBOT_PASSWORD.
 */
export function configuredRobotCredentials(fromEnvToo = true): pulumi.Output<RobotCredentials | undefined> | undefined {
  const config = new pulumi.Config("nodefleet");
  const user = config.get("hrobotUser");
  const password = config.getSecret("hrobotPassword");
  if (user !== undefined && password !== undefined) return pulumi.secret(password.apply((p) => ({ user, password: p })));
  if (!fromEnvToo) return undefined;
  const fromEnv = robotCredentialsFromEnv();
  return fromEnv ? pulumi.secret(pulumi.output(fromEnv)) : undefined;
}

/** A rescue's inputs but the credentials, the dynamic one's and the plugin's (robotRescueResource.ts) alike. */
export function robotRescueInputs(args: Omit<RobotRescueArgs, "credentials">): Record<string, pulumi.Input<unknown>> {
  return {
    serverNumber: args.serverNumber,
    fingerprints: [...args.fingerprints],
    generation: args.generation,
    // Only when given, so the inputs of pools without keys to upload stay as they were.
    ...(args.uploadKeys && args.uploadKeys.length > 0 ? { uploadKeys: args.uploadKeys.map((k) => ({ ...k })) } : {}),
    baseUrl: args.baseUrl ?? ROBOT_BASE_URL,
    // Only when asked for, so the inputs of existing rescues stay as they were.
    ...(args.checkRescue ? { checkRescue: true } : {}),
    ...(args.sshPrivateKey !== undefined ? { sshPrivateKey: pulumi.secret(args.sshPrivateKey) } : {}),
  };
}

export class RobotRescue extends pulumi.dynamic.Resource {
  declare readonly serverIp: pulumi.Output<string>;
  declare readonly resetType: pulumi.Output<string>;

  constructor(name: string, args: RobotRescueArgs, opts?: pulumi.CustomResourceOptions) {
    const credentials = pulumi.secret(
      pulumi.output(args.credentials).apply((c) => (c ? JSON.stringify({ user: c.user, password: c.password }) : "")),
    );
    super(
      robotRescueProvider,
      name,
      { ...robotRescueInputs(args), credentials, serverIp: undefined, resetType: undefined },
      { ...opts, additionalSecretOutputs: ["credentials", "sshPrivateKey"] },
      "nodefleet",
      "RobotRescue",
    );
  }
}
