/**
 * The simulated cloud's fault-injection and timing knobs (docs/design.md §4.4), read from the environment
 * variables exactly as named, each overridable per engine instance (tests set them per engine).
 */
export interface SimulationKnobs {
  /** NODEFLEET_SIM_BOOT_DELAY_MS: a created server reports `running` this long after creation. Default 2000. */
  readonly bootDelayMs: number;
  /** NODEFLEET_SIM_FAIL_CREATE_RATE: probability (0..1) that a cloud create fails; seeded, so reproducible. Default 0. */
  readonly failCreateRate: number;
  /** NODEFLEET_SIM_OUT_OF_STOCK: server types / offers whose creates fail as sold out (`resource_unavailable`). */
  readonly outOfStock: readonly string[];
  /**
   * NODEFLEET_SIM_QUOTA_EXCEEDED: server types whose creates fail as over the project's quota
   * (`resource_limit_exceeded`), or `*` for every type. Default none.
   */
  readonly quotaExceeded: readonly string[];
  /** NODEFLEET_SIM_CRASH_AFTER_STEPS: the engine process dies after this many applied steps (unset: never). */
  readonly crashAfterSteps?: number;
  /** Seed of the create-failure draw (NODEFLEET_SIM_SEED). Default "nodefleet". */
  readonly seed: string;
  /**
   * NODEFLEET_SIM_PRIVATE_NIC_DELAY_MS (local cloud only): a machine sees a private network attached
   * after its create this long after the attach action. Default 0.
   */
  readonly privateNicDelayMs?: number;
  /** NODEFLEET_SIM_SCW_INSTALL_MS (local cloud only): how long an Elastic Metal OS install runs. Default 2000. */
  readonly scwInstallMs?: number;
  /**
   * NODEFLEET_SIM_SCW_VLAN_DELAY_MS (local cloud only): an Elastic Metal private-network attachment
   * reports its VLAN tag this long after it is `attached` (null until then). Default 0.
   */
  readonly scwVlanDelayMs?: number;
  /**
   * NODEFLEET_SIM_SCW_MISSING_PERMISSIONS (local cloud only): Scaleway permission sets the fake's API
   * key lacks, e.g. `ElasticMetalFullAccess`; requests that need one fail with 403. Default none.
   */
  readonly scwMissingPermissions?: readonly string[];
  /**
   * NODEFLEET_SIM_HCLOUD_RATE_LIMIT (local cloud only): requests per hour the fake Hetzner API allows
   * a project, instead of Hetzner's default 3600 (which Hetzner raises on request; benchmarks of
   * 1000-node fleets need more).
   */
  readonly hcloudRateLimit?: number;
  /** NODEFLEET_SIM_ROBOT_SERVERS (local cloud only): dedicated servers the fake Robot account has. Default 2. */
  readonly robotServers?: number;
  /**
   * NODEFLEET_SIM_ROBOT_RATE_LIMIT (local cloud only): requests per route and hour the fake Robot
   * webservice allows before 403 RATE_LIMIT_EXCEEDED, instead of Robot's documented limit of each route.
   */
  readonly robotRateLimit?: number;
  /** NODEFLEET_SIM_ROBOT_LOGIN_REVOKED=1 (local cloud only): the fake Robot webservice refuses every login (401). */
  readonly robotLoginRevoked?: boolean;
  /**
   * NODEFLEET_SIM_ROBOT_RESETS_NOT_TAKING (local cloud only): the first this many reboots of each Robot
   * machine do not take (it comes back into the OS it ran; a rescue activation stays pending). Default 0.
   */
  readonly robotResetsNotTaking?: number;
  /**
   * NODEFLEET_SIM_ROBOT_HANG (local cloud only): Robot server numbers whose machine hangs (SSH stops
   * answering) at the first boot of a system installed through the rescue, until its next reboot. Default none.
   */
  readonly robotHang?: readonly number[];
  /** NODEFLEET_SIM_ROBOT_BIOS (local cloud only): Robot server numbers that boot in BIOS mode; the others boot UEFI. */
  readonly robotBios?: readonly number[];
  /** NODEFLEET_SIM_ROBOT_INSTALL_MS (local cloud only): how long the Robot machines' installimage stand-in sleeps in its install. Default 0. */
  readonly robotInstallMs?: number;
}

const DEFAULT_BOOT_DELAY_MS = 2000;

function numberFrom(name: string, text: string | undefined, min: number, max: number): number | undefined {
  if (text === undefined || text.trim() === "") return undefined;
  const value = Number(text);
  if (!Number.isFinite(value) || value < min || value > max) {
    throw new Error(`${name} must be a number between ${min} and ${max}, got ${JSON.stringify(text)}`);
  }
  return value;
}

/** A whole number within bounds, or undefined when unset. */
function wholeFrom(name: string, text: string | undefined, min: number, max: number): number | undefined {
  const value = numberFrom(name, text, min, max);
  if (value !== undefined && !Number.isInteger(value)) throw new Error(`${name} must be a whole number, got ${JSON.stringify(text)}`);
  return value;
}

/** `1`/`true` or `0`/`false`, undefined when unset. */
function flagFrom(name: string, text: string | undefined): boolean | undefined {
  if (text === undefined || text.trim() === "") return undefined;
  const value = text.trim().toLowerCase();
  if (value === "1" || value === "true") return true;
  if (value === "0" || value === "false") return false;
  throw new Error(`${name} must be 1, true, 0 or false, got ${JSON.stringify(text)}`);
}

/** A list of Robot server numbers (whole numbers), undefined when unset. */
function serverNumbersFrom(name: string, text: string | undefined): number[] | undefined {
  const numbers = listFrom(text);
  const bad = numbers?.find((n) => !/^[1-9]\d{0,9}$/.test(n));
  if (bad !== undefined) throw new Error(`${name} must list Robot server numbers separated by commas, got ${JSON.stringify(bad)}`);
  return numbers?.map(Number);
}

function listFrom(text: string | undefined): string[] | undefined {
  return text
    ?.split(",")
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

/** A list of Scaleway permission set names (`ElasticMetalFullAccess`, `IPAMReadOnly`, ...). */
function permissionSetsFrom(text: string | undefined): string[] | undefined {
  const sets = listFrom(text);
  const bad = sets?.find((s) => !/^[A-Z][A-Za-z0-9]*(FullAccess|ReadOnly)$/.test(s));
  if (bad !== undefined)
    throw new Error(
      `NODEFLEET_SIM_SCW_MISSING_PERMISSIONS must list permission set names such as ElasticMetalFullAccess, got ${JSON.stringify(bad)}`,
    );
  return sets;
}

/** Whether a create of `serverType` fails as over quota under the knob's list (`*`: every type). */
export function overQuota(quotaExceeded: readonly string[], serverType: string): boolean {
  return quotaExceeded.includes("*") || quotaExceeded.includes(serverType);
}

export function knobsFromEnv(env: NodeJS.ProcessEnv): Partial<SimulationKnobs> {
  const crash = numberFrom("NODEFLEET_SIM_CRASH_AFTER_STEPS", env.NODEFLEET_SIM_CRASH_AFTER_STEPS, 1, Number.MAX_SAFE_INTEGER);
  return {
    bootDelayMs: numberFrom("NODEFLEET_SIM_BOOT_DELAY_MS", env.NODEFLEET_SIM_BOOT_DELAY_MS, 0, 86_400_000),
    failCreateRate: numberFrom("NODEFLEET_SIM_FAIL_CREATE_RATE", env.NODEFLEET_SIM_FAIL_CREATE_RATE, 0, 1),
    outOfStock: listFrom(env.NODEFLEET_SIM_OUT_OF_STOCK),
    quotaExceeded: listFrom(env.NODEFLEET_SIM_QUOTA_EXCEEDED),
    crashAfterSteps: crash === undefined ? undefined : Math.floor(crash),
    seed: env.NODEFLEET_SIM_SEED || undefined,
    privateNicDelayMs: numberFrom("NODEFLEET_SIM_PRIVATE_NIC_DELAY_MS", env.NODEFLEET_SIM_PRIVATE_NIC_DELAY_MS, 0, 86_400_000),
    scwInstallMs: numberFrom("NODEFLEET_SIM_SCW_INSTALL_MS", env.NODEFLEET_SIM_SCW_INSTALL_MS, 0, 86_400_000),
    scwVlanDelayMs: numberFrom("NODEFLEET_SIM_SCW_VLAN_DELAY_MS", env.NODEFLEET_SIM_SCW_VLAN_DELAY_MS, 0, 86_400_000),
    scwMissingPermissions: permissionSetsFrom(env.NODEFLEET_SIM_SCW_MISSING_PERMISSIONS),
    hcloudRateLimit: wholeFrom("NODEFLEET_SIM_HCLOUD_RATE_LIMIT", env.NODEFLEET_SIM_HCLOUD_RATE_LIMIT, 1, 1_000_000_000),
    robotServers: wholeFrom("NODEFLEET_SIM_ROBOT_SERVERS", env.NODEFLEET_SIM_ROBOT_SERVERS, 0, 250),
    robotRateLimit: wholeFrom("NODEFLEET_SIM_ROBOT_RATE_LIMIT", env.NODEFLEET_SIM_ROBOT_RATE_LIMIT, 0, 1_000_000),
    robotLoginRevoked: flagFrom("NODEFLEET_SIM_ROBOT_LOGIN_REVOKED", env.NODEFLEET_SIM_ROBOT_LOGIN_REVOKED),
    robotResetsNotTaking: wholeFrom("NODEFLEET_SIM_ROBOT_RESETS_NOT_TAKING", env.NODEFLEET_SIM_ROBOT_RESETS_NOT_TAKING, 0, 1000),
    robotHang: serverNumbersFrom("NODEFLEET_SIM_ROBOT_HANG", env.NODEFLEET_SIM_ROBOT_HANG),
    robotBios: serverNumbersFrom("NODEFLEET_SIM_ROBOT_BIOS", env.NODEFLEET_SIM_ROBOT_BIOS),
    robotInstallMs: numberFrom("NODEFLEET_SIM_ROBOT_INSTALL_MS", env.NODEFLEET_SIM_ROBOT_INSTALL_MS, 0, 86_400_000),
  };
}

/** Options win over the environment; unset everywhere means the documented default. */
export function resolveKnobs(options: Partial<SimulationKnobs>, env: NodeJS.ProcessEnv): SimulationKnobs {
  const fromEnv = knobsFromEnv(env);
  const pick = <K extends keyof SimulationKnobs>(key: K): SimulationKnobs[K] | undefined =>
    (options[key] !== undefined ? options[key] : fromEnv[key]) as SimulationKnobs[K] | undefined;
  const failCreateRate = pick("failCreateRate") ?? 0;
  if (failCreateRate < 0 || failCreateRate > 1) throw new Error(`failCreateRate must be within 0..1, got ${failCreateRate}`);
  return {
    bootDelayMs: pick("bootDelayMs") ?? DEFAULT_BOOT_DELAY_MS,
    failCreateRate,
    outOfStock: pick("outOfStock") ?? [],
    quotaExceeded: pick("quotaExceeded") ?? [],
    crashAfterSteps: pick("crashAfterSteps"),
    seed: pick("seed") ?? "nodefleet",
  };
}
