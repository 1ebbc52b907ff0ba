/**
 * `nodefleet:hrobot:RobotRescue`: the Robot rescue of a member as a resource of nodefleet's provider
 * plugin. It does what the dynamic RobotRescue does (robotRescue.ts: rescue activation with the
 * pool's keys, the reset ladder, with `checkRescue` the checked boot of rescueBootLadder.ts; delete
 * deactivates a pending rescue), through the same provider code run in the plugin process, but its
 * state holds no serialized code and no Robot credentials: the plugin takes those from the pool's
 * provider configuration (`robotCredentials`, a secret in the provider's state, once per pool) or
 * else from HROBOT_USER and HROBOT_PASSWORD in its environment. Members created before it keep their
 * dynamic rescue until they leave (fleet/memberResources.ts `plugin-all`): moving it would replace
 * it, and a new rescue reinstalls the server.
 */
import * as pulumi from "@pulumi/pulumi";
import type { BareMetalMemberResources } from "../provider/bareMetalMemberResources";
import { optionalStringFailures, positiveIntegerFailures, stringFailures } from "../provider/inputRules";
import { type CheckFailure, type ClusterAccess, type ResourceHandler, changedKeys } from "../provider/resourceHandler";
import type { InPlaceMemberResources } from "../fleet/memberResources";
import { robotCredentialsFromEnv } from "./robotClient";
import {
  ROBOT_RESCUE_REPLACE_ON_CHANGES,
  RobotRescue,
  type RobotRescueArgs,
  type RobotRescueState,
  robotRescueInputs,
  robotRescueProvider,
} from "./robotRescue";

export const ROBOT_RESCUE_TYPE = "nodefleet:hrobot:RobotRescue";

/** The inputs the plugin's rescue keeps: the dynamic one's, less the credentials. */
const INPUT_KEYS = [
  "serverNumber",
  "fingerprints",
  "generation",
  "baseUrl",
  "uploadKeys",
  "checkRescue",
  "sshPrivateKey",
  "resetWaitSeconds",
  "probe",
] as const;

/** Changed in place, nothing happening to the server (as the dynamic rescue's credentials and endpoint). */
const IN_PLACE_KEYS = ["baseUrl", "uploadKeys", "checkRescue", "sshPrivateKey", "resetWaitSeconds", "probe"] as const;

/** The provider's Robot credentials, else the plugin's environment's, as the dynamic provider's `credentials` input ("" for none). */
export function robotCredentialsJson(access: ClusterAccess, env: Readonly<Record<string, string | undefined>> = process.env): string {
  if (access.robotCredentialsJson) return access.robotCredentialsJson;
  const fromEnv = robotCredentialsFromEnv(env);
  return fromEnv ? JSON.stringify(fromEnv) : "";
}

function checkFailures(news: Record<string, unknown>): CheckFailure[] {
  const failures = [...positiveIntegerFailures("serverNumber", news.serverNumber), ...stringFailures("generation", news.generation)];
  failures.push(...stringFailures("baseUrl", news.baseUrl), ...optionalStringFailures("sshPrivateKey", news.sshPrivateKey));
  failures.push(...optionalStringFailures("probe", news.probe));
  if (!Array.isArray(news.fingerprints) || !news.fingerprints.every((f) => typeof f === "string" && f !== ""))
    failures.push({ property: "fingerprints", reason: "fingerprints must be a list of SSH key fingerprints" });
  const keys = news.uploadKeys;
  if (keys !== undefined && !(Array.isArray(keys) && keys.every((k) => typeof k?.fingerprint === "string" && typeof k?.line === "string")))
    failures.push({ property: "uploadKeys", reason: "uploadKeys must be a list of {fingerprint, line}" });
  if (news.checkRescue !== undefined && typeof news.checkRescue !== "boolean")
    failures.push({ property: "checkRescue", reason: "checkRescue must be true or false when given" });
  if (news.resetWaitSeconds !== undefined) failures.push(...positiveIntegerFailures("resetWaitSeconds", news.resetWaitSeconds));
  return failures;
}

/** Without the credential fields: what the state keeps. */
function withoutCredentials(outs: Record<string, unknown>): Record<string, unknown> {
  const { credentials: _credentials, ...rest } = outs;
  return rest;
}

/** Runs in the provider plugin. */
export const robotRescueHandler: ResourceHandler = {
  secretOutputs: ["sshPrivateKey"],
  check(news) {
    const inputs = Object.fromEntries(INPUT_KEYS.filter((k) => news[k] !== undefined).map((k) => [k, news[k]]));
    return { inputs, failures: checkFailures(news) };
  },
  // Another server, generation or rescue keys: a new rescue (the old one deactivated first), which reinstalls.
  diff(olds, news) {
    const replaces = changedKeys(olds, news, ROBOT_RESCUE_REPLACE_ON_CHANGES);
    return { changed: [...replaces, ...changedKeys(olds, news, IN_PLACE_KEYS)], replaces, deleteBeforeReplace: true };
  },
  async create(inputs, access) {
    const state = { ...inputs, credentials: robotCredentialsJson(access) } as unknown as RobotRescueState;
    const created = await robotRescueProvider.create!(state);
    return { id: created.id, outs: withoutCredentials(created.outs as Record<string, unknown>) };
  },
  // Nothing happens to the server: the new inputs are kept with the address and resets of its create.
  async update(_id, olds, news) {
    return { ...news, serverIp: olds.serverIp, resetType: olds.resetType };
  },
  // The server stays (it is bought): deleting deactivates a pending rescue boot, so it needs credentials.
  async delete(id, props, access) {
    const credentials = robotCredentialsJson(access);
    if (!credentials) {
      throw new Error(
        `Robot server ${String(props.serverNumber)}: cannot deactivate its rescue without Robot webservice credentials; set HROBOT_USER and HROBOT_PASSWORD (or secret config nodefleet:hrobotUser and nodefleet:hrobotPassword)`,
      );
    }
    await robotRescueProvider.delete!(id, { ...props, credentials } as unknown as RobotRescueState);
  },
};

/** The plugin rescue's inputs: the dynamic one's but the credentials, which the pool's provider holds. */
export type RobotRescueResourceArgs = Omit<RobotRescueArgs, "credentials">;

export class RobotRescueResource extends pulumi.CustomResource {
  /** The server's main IPv4 address. */
  declare readonly serverIp: pulumi.Output<string>;
  /** The reset types (or rungs) the boot into rescue used, comma-separated. */
  declare readonly resetType: pulumi.Output<string>;

  /** `opts.provider` must be the pool's ClusterAccessProvider. */
  constructor(name: string, args: RobotRescueResourceArgs, opts: pulumi.CustomResourceOptions) {
    super(
      ROBOT_RESCUE_TYPE,
      name,
      { ...robotRescueInputs(args), serverIp: undefined, resetType: undefined },
      { ...opts, additionalSecretOutputs: ["sshPrivateKey"] },
    );
  }
}

/**
 * A member's rescue in its flavour: the plugin's for `plugin-all` (through the pool's provider; the
 * credentials stay out of it), the dynamic RobotRescue, credentials and all, for the members created
 * before it.
 */
export function memberRobotRescue(
  name: string,
  args: RobotRescueArgs,
  flavour: InPlaceMemberResources,
  clusterSide: BareMetalMemberResources,
  opts: pulumi.CustomResourceOptions,
): RobotRescue | RobotRescueResource {
  if (flavour !== "plugin-all") return new RobotRescue(name, args, opts);
  const { credentials: _credentials, ...rest } = args;
  return new RobotRescueResource(name, rest, { ...opts, provider: clusterSide.provider() });
}
