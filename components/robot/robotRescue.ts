/**
 * `pulumi-nodejs:dynamic/nodefleet:RobotRescue`: puts an adopted Robot server into the Linux rescue
 * system: activates rescue for the next boot with the pool's SSH key fingerprints, then resets the
 * server (hardware reset where Robot offers it, since the installed OS may not answer; else power,
 * else software). Creating it is what starts a (re)install; its outputs give the server's address.
 *
 * A `pulumi.dynamic` resource: the provider is serialized into the state, so it uses only the Robot
 * client (built-ins only) and its inputs. The credentials are a secret input and output.
 */
import * as pulumi from "@pulumi/pulumi";
import { ROBOT_BASE_URL, RobotClient, type RobotCredentials, type RobotResetType, isRobotNotFound, robotCredentialsFromEnv } from "./robotClient";

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
  /** Output: the reset type used to boot into rescue. */
  resetType?: string;
}

/** Prefers a hardware reset (works whatever state the OS is in), then power cycling, then CTRL+ALT+DEL. */
export function rescueResetType(offered: readonly string[]): RobotResetType {
  for (const type of ["hw", "power", "sw"] as const) if (offered.includes(type)) return type;
  throw new Error(`the server offers no automatic reset (only ${offered.join(", ") || "none"}); reset it by hand after rescue activation`);
}

function robotClientFor(state: Pick<RobotRescueState, "baseUrl" | "credentials" | "serverNumber">): RobotClient {
  if (!state.credentials) {
    throw new Error(
      `Robot server ${state.serverNumber}: no Robot webservice credentials were configured; set HROBOT_USER and HROBOT_PASSWORD (or secret config nodefleet:hrobotUser and nodefleet:hrobotPassword)`,
    );
  }
  return new RobotClient({ baseUrl: state.baseUrl, credentials: JSON.parse(state.credentials) as RobotCredentials });
}

/** Exported for tests, which run its serialized form as the engine would. */
export const robotRescueProvider: pulumi.dynamic.ResourceProvider = {
  async create(inputs: RobotRescueState) {
    const client = robotClientFor(inputs);
    const server = await client.getServer(inputs.serverNumber);
    await client.activateRescue(inputs.serverNumber, inputs.fingerprints);
    const resetType = rescueResetType((await client.resetOptions(inputs.serverNumber)).type);
    await client.reset(inputs.serverNumber, resetType);
    return { id: String(inputs.serverNumber), outs: { ...inputs, serverIp: server.server_ip ?? "", resetType } };
  },
  async diff(_id: string, olds: RobotRescueState, news: RobotRescueState) {
    const replaces: string[] = (["serverNumber", "generation"] as const).filter((k) => olds[k] !== news[k]);
    if (JSON.stringify(olds.fingerprints) !== JSON.stringify(news.fingerprints)) replaces.push("fingerprints");
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
  /** Robot webservice credentials; a secret. Default: none (create then fails, naming the variables to set). */
  readonly credentials?: pulumi.Input<RobotCredentials | undefined>;
  /** Default ROBOT_BASE_URL. */
  readonly baseUrl?: string;
}

/** Credentials from secret config nodefleet:hrobotUser/hrobotPassword, else HROBOT_USER/HROBOT_PASSWORD. */
export function configuredRobotCredentials(): pulumi.Output<RobotCredentials | undefined> | undefined {
  const config = new pulumi.Config("nodefleet");
  const user = config.get("hrobotUser");
  const password = config.getSecret("hrobotPassword");
  if (user !== undefined && password !== undefined) return pulumi.secret(password.apply((p) => ({ user, password: p })));
  const fromEnv = robotCredentialsFromEnv();
  return fromEnv ? pulumi.secret(pulumi.output(fromEnv)) : undefined;
}

export class RobotRescue extends pulumi.dynamic.Resource {
  declare readonly serverIp: pulumi.Output<string>;
  declare readonly resetType: pulumi.Output<string>;

  constructor(name: string, args: RobotRescueArgs, opts?: pulumi.CustomResourceOptions) {
    const credentials = pulumi.secret(pulumi.output(args.credentials).apply((c) => (c ? JSON.stringify({ user: c.user, password: c.password }) : "")));
    super(
      robotRescueProvider,
      name,
      {
        serverNumber: args.serverNumber,
        fingerprints: [...args.fingerprints],
        generation: args.generation,
        baseUrl: args.baseUrl ?? ROBOT_BASE_URL,
        credentials,
        serverIp: undefined,
        resetType: undefined,
      },
      { ...opts, additionalSecretOutputs: ["credentials"] },
      "nodefleet",
      "RobotRescue",
    );
  }
}
