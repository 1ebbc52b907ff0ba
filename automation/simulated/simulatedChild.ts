/**
 * The simulated engine's child process: receives one run request over IPC, runs the program's
 * compiled module under Pulumi's mock runtime against the simulated cloud, reports each step and
 * the result, and exits. One run per process because the mock runtime is process-global.
 * It dies with its parent (IPC disconnect, or the parent pid gone).
 */
import { runUnderMocks } from "../mocks/runUnderMocks";
import type { ProgramReference, ResourceStep, StackConfigValue } from "../engine/stackEngine";
import { runProgramReference } from "../gitStackProgram";
import { configValues } from "../stackConfigFile";
import { SimulatedCloud, StackStateFile } from "./simulatedCloud";
import { SimulatedProvider } from "./simulatedProvider";
import { processAlive } from "../engine/cliProcesses";
import { acquireStackLock } from "./stackLock";
import type { SimulationKnobs } from "./simulationKnobs";
import { errorMessage } from "../../components/shared/errorMessage";

export interface ChildRequest {
  readonly kind: "up" | "preview";
  readonly dataDir: string;
  readonly stack: string;
  readonly project: string;
  readonly program: ProgramReference;
  readonly config: Readonly<Record<string, StackConfigValue>>;
  readonly knobs: SimulationKnobs;
  readonly parentPid: number;
}

export type ChildMessage =
  | { readonly type: "step"; readonly step: ResourceStep; readonly count: number }
  | { readonly type: "log"; readonly level: "info" | "warn"; readonly message: string }
  | { readonly type: "stats"; readonly maxRssBytes: number }
  | { readonly type: "done"; readonly steps: ResourceStep[]; readonly outputs: Record<string, unknown> }
  | { readonly type: "failed"; readonly message: string; readonly steps: ResourceStep[] };

function send(message: ChildMessage): Promise<void> {
  return new Promise((resolve) => {
    if (!process.send || !process.connected) return resolve();
    process.send(message, undefined, {}, () => resolve());
  });
}

function dieWithParent(parentPid: number): void {
  process.on("disconnect", () => process.kill(process.pid, "SIGKILL"));
  setInterval(() => {
    if (!processAlive(parentPid)) process.kill(process.pid, "SIGKILL");
  }, 500).unref();
}

function defaultSubnet(config: Readonly<Record<string, StackConfigValue>>): string | undefined {
  for (const [key, entry] of Object.entries(config)) {
    if (!key.endsWith(":network")) continue;
    const value = typeof entry.value === "string" ? safeJson(entry.value) : entry.value;
    const subnet = (value as { subnet?: unknown } | undefined)?.subnet;
    if (typeof subnet === "string") return subnet;
  }
  return undefined;
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

async function run(request: ChildRequest): Promise<void> {
  dieWithParent(request.parentPid);
  // The SDK captures a stack trace per promise for leak diagnostics that nobody reads here; full
  // traces are most of the CPU time of a 1000-node run.
  Error.stackTraceLimit = 3;
  const lock = request.kind === "up" ? acquireStackLock(request.dataDir, request.stack) : undefined;
  if (lock?.staleHolder) {
    await send({
      type: "log",
      level: "warn",
      message: `removed the stale lock of dead process ${lock.staleHolder.pid} (a previous run crashed)`,
    });
  }
  const file = new StackStateFile(request.dataDir, request.stack);
  const state = file.load();
  const cloud = new SimulatedCloud(request.dataDir);
  const others = cloud
    .allResources()
    .filter((e) => e.stack !== request.stack)
    .map((e) => e.resource);
  const provider = new SimulatedProvider({
    stack: request.stack,
    project: request.project,
    mode: request.kind,
    knobs: request.knobs,
    state,
    journal: request.kind === "up" ? file : undefined,
    others,
    defaultSubnet: defaultSubnet(request.config),
    onStep: (step, count) => void send({ type: "step", step, count }),
    crash: () => {
      // As abrupt as a real crash: no cleanup, the lock and the journal stay behind.
      process.kill(process.pid, "SIGKILL");
    },
    now: () => Date.now(),
  });

  let failure: string | undefined;
  // A registration that throws (duplicate URN, unknown `get` id) leaves the program's outputs pending
  // forever under the mock runtime: end the run on the first such error instead of hanging.
  let fatal: (error: unknown) => void = () => undefined;
  const fatalError = new Promise<never>((_, reject) => {
    fatal = reject;
  });
  const guarded =
    <A, R>(f: (a: A) => R) =>
    (a: A): R => {
      try {
        return f(a);
      } catch (error) {
        fatal(error);
        throw error;
      }
    };
  process.on("unhandledRejection", (reason) => fatal(reason));
  let outputs: Record<string, unknown> = {};
  try {
    const result = await Promise.race([
      fatalError,
      runUnderMocks({
        stack: request.stack,
        project: request.project,
        config: configValues(request.config),
        secretKeys: Object.entries(request.config)
          .filter(([, v]) => v.secret)
          .map(([k]) => k),
        record: false,
        newResource: guarded((args) => provider.newResource(args)),
        // A failed look-up rejects only that invoke: programs may catch it (adopt-or-create).
        call: (args) => provider.call(args),
        program: () => runProgramReference(request.program),
      }),
    ]);
    outputs = (result.outputs ?? {}) as Record<string, unknown>;
  } catch (error) {
    failure = errorMessage(error);
  }
  if (failure === undefined) provider.finish(outputs);
  if (request.kind === "up") file.compact(state);
  lock?.release();
  await send({ type: "stats", maxRssBytes: process.resourceUsage().maxRSS * 1024 });
  if (failure !== undefined) await send({ type: "failed", message: failure, steps: provider.steps });
  else await send({ type: "done", steps: provider.steps, outputs });
}

if (require.main === module) {
  process.once("message", (request: ChildRequest) => {
    run(request).then(
      () => process.exit(0),
      async (error: unknown) => {
        await send({ type: "failed", message: errorMessage(error), steps: [] });
        process.exit(1);
      },
    );
  });
}
