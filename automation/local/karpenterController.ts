/**
 * The toolchain's `nodefleet-karpenter` (Karpenter's core controllers with nodefleet's driver) as a
 * child process against a cluster: outside the cluster, with the kubeconfig it is given (the admin's,
 * or a ServiceAccount's to run under a chart's RBAC), no leader election unless asked for (replicas
 * then share one Lease, as the chart's Deployment does), and metrics and health probes on free ports (Karpenter's defaults, 8080 and 8081, are
 * the scaling API's and the fake Hetzner API's). With a pid file, a controller left by a run that was
 * killed outright is stopped by the next start, and a second start beside a live one is refused.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { isProcessAlive } from "../store/dataDirLock";
import { findTool } from "../engine/toolchain";
import { freePort } from "./freePort";
import { KARPENTER_NAMESPACE } from "./karpenterObjects";

const KARPENTER_CONTROLLER = "nodefleet-karpenter";

export class KarpenterControllerError extends Error {
  override readonly name = "KarpenterControllerError";
}

/** The controller binary, or an error saying how to build it. */
export function karpenterControllerBinary(env: NodeJS.ProcessEnv = process.env): string {
  const binary = findTool(KARPENTER_CONTROLLER, env);
  if (!binary)
    throw new KarpenterControllerError(
      `${KARPENTER_CONTROLLER} is not on PATH or in the toolchain cache: run \`npm run toolchain\` (it builds Karpenter's controllers with nodefleet's driver)`,
    );
  return binary;
}

export interface KarpenterControllerOptions {
  /** A kubeconfig with the rights Karpenter's controllers need (the admin's on the local cloud). */
  readonly kubeconfig: string;
  /** Where the token Secrets are. Default `karpenter`. */
  readonly namespace?: string;
  /** The controller's environment is `env` plus its settings. Default: this process's. */
  readonly env?: NodeJS.ProcessEnv;
  /** Karpenter's LOG_LEVEL. Default info. */
  readonly logLevel?: string;
  /** Called with each chunk the controller writes (stdout and stderr). */
  readonly onOutput?: (chunk: Buffer) => void;
  /** Records {pid, binary, owner} here while it runs (see the file comment). */
  readonly pidFile?: string;
  /**
   * Karpenter's leader election on, with this Lease (its operator's LEADER_ELECTION_NAME and
   * LEADER_ELECTION_NAMESPACE, which it needs outside a cluster). Default: off, the only replica.
   */
  readonly leaderElection?: { readonly name: string; readonly namespace: string };
}

export interface KarpenterController {
  readonly child: ChildProcess;
  readonly binary: string;
  readonly metricsPort: number;
  readonly healthPort: number;
  /** The last 200 000 characters it wrote. */
  log(): string;
  /** Resolves with its exit code (or signal name) when it exits, however that happens. */
  readonly exited: Promise<number | string>;
  /** SIGTERM, SIGKILL after `graceMs` (default 15 s); resolves once it has exited. */
  stop(graceMs?: number): Promise<void>;
}

interface PidRecord {
  readonly pid: number;
  readonly binary: string;
  readonly owner: number;
}

/** Whether `pid` runs `binary` (its first argument, or its second when an interpreter runs it as a script). */
function runs(pid: number, binary: string): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").slice(0, 2).includes(binary);
  } catch {
    return false;
  }
}

/**
 * Refuses (throws) when the controller recorded in `file` runs for another live process; kills one
 * whose owner is gone (a run killed outright).
 */
export function takeOverPidFile(file: string): void {
  let record: PidRecord;
  try {
    record = JSON.parse(readFileSync(file, "utf8")) as PidRecord;
  } catch {
    return;
  }
  if (!runs(record.pid, record.binary)) return;
  if (record.owner !== process.pid && isProcessAlive(record.owner)) {
    throw new KarpenterControllerError(
      `${KARPENTER_CONTROLLER} already runs here (pid ${record.pid}, started by pid ${record.owner}); stop that one first (Ctrl-C where it runs)`,
    );
  }
  try {
    process.kill(record.pid, "SIGKILL");
  } catch {
    // Gone meanwhile.
  }
}

export async function startKarpenterController(options: KarpenterControllerOptions): Promise<KarpenterController> {
  const env = options.env ?? process.env;
  const binary = karpenterControllerBinary(env);
  if (options.pidFile) takeOverPidFile(options.pidFile);
  const [metricsPort, healthPort] = [await freePort(), await freePort()];
  const child = spawn(binary, [], {
    env: {
      ...env,
      KUBECONFIG: options.kubeconfig,
      SYSTEM_NAMESPACE: options.namespace ?? KARPENTER_NAMESPACE,
      DISABLE_LEADER_ELECTION: options.leaderElection ? "false" : "true",
      ...(options.leaderElection
        ? { LEADER_ELECTION_NAME: options.leaderElection.name, LEADER_ELECTION_NAMESPACE: options.leaderElection.namespace }
        : {}),
      METRICS_PORT: String(metricsPort),
      HEALTH_PROBE_PORT: String(healthPort),
      LOG_LEVEL: options.logLevel ?? "info",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let log = "";
  const keep = (chunk: Buffer) => {
    log = (log + chunk.toString()).slice(-200_000);
    options.onOutput?.(chunk);
  };
  child.stdout!.on("data", keep);
  child.stderr!.on("data", keep);
  const exited = new Promise<number | string>((resolve) => {
    child.once("error", (error) => {
      log += `\n${error.message}\n`;
      resolve(error.message);
    });
    child.once("exit", (code, signal) => resolve(code ?? signal ?? "unknown"));
  });
  const pidFile = options.pidFile;
  if (pidFile && child.pid !== undefined) {
    writeFileSync(pidFile, JSON.stringify({ pid: child.pid, binary, owner: process.pid } satisfies PidRecord), { mode: 0o600 });
    void exited.then(() => rmSync(pidFile, { force: true }));
  }
  return {
    child,
    binary,
    metricsPort,
    healthPort,
    log: () => log,
    exited,
    async stop(graceMs = 15_000) {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill("SIGTERM");
        const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
        await exited;
        clearTimeout(timer);
      }
      if (pidFile) rmSync(pidFile, { force: true });
    },
  };
}
