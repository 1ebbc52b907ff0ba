/**
 * The healer as `serve` runs it: for the bare-metal pools of the served stack, with the stack's
 * kubeconfig, the Robot webservice and Scaleway credentials from the environment, and its mode from
 * NODEFLEET_HEAL (`on` by default, `dry-run`, `off`). Not built when the stack has no bare-metal
 * pool, or on the simulated engine (no cluster to read).
 */
import type { Logger } from "pino";
import type { FleetSpec } from "../../components/fleet/fleetSpec";
import { RobotClient, robotCredentialsFromEnv } from "../../components/robot/robotClient";
import { scalewayAccessFromEnv } from "../scaleway/elasticMetalApi";
import { BareMetalHealer, type HealMode } from "./bareMetalHealer";
import { bareMetalTargets } from "./bareMetalTargets";
import { recordStepWith, runRungWith } from "./remediationActions";

const HEAL_MODES = ["on", "dry-run", "off"] as const;

export interface HealSettings {
  readonly mode: HealMode | "off";
  readonly notReadyForMs: number;
  readonly intervalMs: number;
  /** Every rung's wait, when NODEFLEET_HEAL_RUNG_WAIT_MS sets one; else the ladder's own. */
  readonly rungWaitMs?: number;
}

/** NODEFLEET_HEAL, NODEFLEET_HEAL_NOT_READY_MS, NODEFLEET_HEAL_INTERVAL_MS and NODEFLEET_HEAL_RUNG_WAIT_MS, refused when malformed. */
export function healSettings(env: NodeJS.ProcessEnv, intEnv: (name: string, fallback: number) => number): HealSettings {
  const mode = env.NODEFLEET_HEAL || "on";
  if (!(HEAL_MODES as readonly string[]).includes(mode)) {
    throw new Error(`NODEFLEET_HEAL must be one of ${HEAL_MODES.join(", ")} (got ${JSON.stringify(mode)})`);
  }
  const intervalMs = intEnv("NODEFLEET_HEAL_INTERVAL_MS", 30_000);
  if (intervalMs === 0) throw new Error('NODEFLEET_HEAL_INTERVAL_MS must be a positive integer (got "0")');
  // 0 (the default) keeps each rung's own wait.
  const rungWaitMs = intEnv("NODEFLEET_HEAL_RUNG_WAIT_MS", 0);
  return {
    mode: mode as HealSettings["mode"],
    notReadyForMs: intEnv("NODEFLEET_HEAL_NOT_READY_MS", 5 * 60_000),
    intervalMs,
    ...(rungWaitMs > 0 ? { rungWaitMs } : {}),
  };
}

/** What the healer counts (api/serviceMetrics.ts implements it). */
export interface HealMetrics {
  remediation(clusterId: string, pool: string, action: string): void;
  cloudRequest(provider: string, operation: string): void;
}

export interface ServiceHealerArgs {
  readonly settings: HealSettings;
  readonly fleet: () => FleetSpec;
  /** The stack's kubeconfig as the service reads it now (undefined: none, nothing is healed). */
  readonly kubeconfig: () => string | undefined;
  /** The cluster's Nodes. */
  readonly listNodes: () => Promise<unknown>;
  readonly env: NodeJS.ProcessEnv;
  readonly metrics: HealMetrics;
  readonly logger: Logger;
}

export function serviceHealer(args: ServiceHealerArgs): BareMetalHealer | undefined {
  const { settings, env, metrics, logger } = args;
  if (settings.mode === "off" || bareMetalTargets(args.fleet()).length === 0) return undefined;
  const clusterId = args.fleet().cluster.id;
  const robotCredentials = robotCredentialsFromEnv(env);
  const scaleway = scalewayAccessFromEnv(env);
  const healer = new BareMetalHealer({
    targets: () => bareMetalTargets(args.fleet()),
    mode: settings.mode,
    notReadyForMs: settings.notReadyForMs,
    intervalMs: settings.intervalMs,
    ...(settings.rungWaitMs !== undefined ? { rungWaitMs: settings.rungWaitMs } : {}),
    logger,
    observe: (pool, action) => metrics.remediation(clusterId, pool, action),
    io: {
      listNodes: args.listNodes,
      recordStep: recordStepWith(args.kubeconfig, settings.rungWaitMs),
      runRung: runRungWith({
        ...(robotCredentials
          ? { robot: new RobotClient({ credentials: robotCredentials, ...(env.HROBOT_URL ? { baseUrl: env.HROBOT_URL } : {}) }) }
          : {}),
        ...(scaleway ? { scaleway } : {}),
        counted: (provider, operation) => metrics.cloudRequest(provider, operation),
      }),
    },
  });
  logger.info(
    { mode: settings.mode, notReadyForMs: settings.notReadyForMs },
    "bare-metal healing: NotReady Robot and Elastic Metal Nodes of the stack are remediated one per pool at a time",
  );
  return healer;
}
