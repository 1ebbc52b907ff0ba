/**
 * Runs `node bin/nodefleet.js serve` as a child process on 127.0.0.1 (port 0: the address is read
 * from its stderr), for crash-recovery and end-to-end tests.
 */
import { spawn, type ChildProcess } from "node:child_process";
import * as path from "node:path";
import { NodefleetClient } from "../../automation/client/nodefleetClient";
import { existsSync } from "node:fs";
import { killProcesses, processTrees } from "../../automation/engine/cliProcesses";
import { leftoversOfEndedEngines, stopProcesses } from "../../automation/engine/leftoverProcesses";
import { TOKEN, TOKENS } from "./apiHarness";

export const BIN = path.resolve(__dirname, "..", "..", "..", "bin", "nodefleet.js");

export interface ServeProcess {
  readonly child: ChildProcess;
  readonly baseUrl: string;
  readonly client: NodefleetClient;
  /** Its data directory. */
  readonly dataDir: string;
  /** Everything the process wrote to stderr so far. */
  stderr(): string;
  exited(): Promise<number | null>;
}

export const REPOSITORY_ROOT = path.resolve(__dirname, "..", "..", "..");

export interface ServeOptions {
  readonly stack?: string;
  /** Several --stack arguments (names or patterns) instead of `stack`: one service for their clusters. */
  readonly stacks?: readonly string[];
  readonly port?: number;
  /** The project it runs in (its stacks/ folder). Default: this repository. */
  readonly cwd?: string;
  /** The cluster the client addresses. Default: example. */
  readonly clusterId?: string;
  readonly engine?: "automation" | "simulated";
  /** How long to wait for it to listen. Default 30 s (an automation engine's start takes longer). */
  readonly startTimeoutMs?: number;
  /** The nodefleet CLI to run (another build's bin/nodefleet.js). Default: this repository's. */
  readonly bin?: string;
}

export async function startServe(dataDir: string, env: Record<string, string> = {}, options: ServeOptions = {}): Promise<ServeProcess> {
  const args = [
    options.bin ?? BIN,
    "serve",
    ...(options.stacks ?? [options.stack ?? "example"]).flatMap((stack) => ["--stack", stack]),
    "--data-dir",
    dataDir,
    "--port",
    String(options.port ?? 0),
    ...(options.engine ? ["--engine", options.engine] : []),
  ];
  const child = spawn(process.execPath, args, {
    cwd: options.cwd ?? REPOSITORY_ROOT,
    env: {
      ...process.env,
      HCLOUD_TOKEN: "",
      SCW_SECRET_KEY: "",
      NODEFLEET_API_TOKENS: TOKENS,
      NODEFLEET_SIM_BOOT_DELAY_MS: "100",
      NODEFLEET_BATCH_IDLE_MS: "200",
      NODEFLEET_BATCH_MAX_MS: "1500",
      NODEFLEET_RETRY_INITIAL_MS: "200",
      NODEFLEET_RETRY_MAX_MS: "1000",
      NODEFLEET_LOG_LEVEL: "warn",
      ...env,
    },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  const exit = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const baseUrl = await new Promise<string>((resolve, reject) => {
    const timeoutMs = options.startTimeoutMs ?? 30_000;
    const timer = setTimeout(() => reject(new Error(`serve did not start within ${timeoutMs / 1000} s:\n${stderr}`)), timeoutMs);
    child.stderr!.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
      const match = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(stderr);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    });
    void exit.then((code) => {
      clearTimeout(timer);
      reject(new Error(`serve exited with ${code} before listening:\n${stderr}`));
    });
  });
  return {
    child,
    baseUrl,
    client: new NodefleetClient({ baseUrl, clusterId: options.clusterId ?? "example", token: TOKEN }),
    dataDir,
    stderr: () => stderr,
    exited: () => exit,
  };
}

/**
 * `serve --stack local --engine automation` in `project`, with the environment `nodefleet local up`
 * printed (`cloudEnv`), as a user runs it on the local cloud; `env` adds to or overrides it.
 */
export function serveOnLocalCloud(
  dataDir: string,
  cloudEnv: Record<string, string>,
  project: string,
  env: Record<string, string> = {},
  bin?: string,
): Promise<ServeProcess> {
  return startServe(
    dataDir,
    { ...cloudEnv, NODEFLEET_BATCH_IDLE_MS: "300", NODEFLEET_API_TOKENS: `local:${TOKEN}`, ...env },
    { stack: "local", engine: "automation", cwd: project, clusterId: "local", startTimeoutMs: 180_000, ...(bin ? { bin } : {}) },
  );
}

/** SIGKILL, as a crash would, and wait until the process is gone. */
export async function crash(serve: ServeProcess): Promise<void> {
  serve.child.kill("SIGKILL");
  await serve.exited();
}

/**
 * SIGKILL of the service and everything it started (the pulumi CLI, its language host and provider
 * plugins), as a machine losing the service's container would, and wait until the service is gone.
 */
export async function crashWithChildren(serve: ServeProcess): Promise<void> {
  killProcesses(processTrees([serve.child.pid!]));
  await serve.exited();
}

/**
 * SIGTERM, as an operator stops it, and wait until it has exited; nothing when it is gone already.
 * A run the shutdown abandoned can leave its CLI's plugins (process groups of their own) running;
 * they are stopped as the next start on the directory would (leftoverProcesses.ts), so no test
 * leaves a process behind.
 */
export async function stopServe(serve: ServeProcess | undefined): Promise<void> {
  if (serve && serve.child.exitCode === null) {
    serve.child.kill("SIGTERM");
    await serve.exited();
  }
  if (serve && existsSync(serve.dataDir)) await stopProcesses(leftoversOfEndedEngines(serve.dataDir));
}
