/**
 * Issue 40 part 2, the foundation: the stack-runs workflow on a Temporal development server (the
 * toolchain's CLI on loopback) with a fake engine run, on workers of this process and of their own
 * processes (temporalWorkerProgram.ts: one process registers one worker per task queue and task
 * type, and a worker to kill needs a process of its own). The histories these tests leave are
 * replayed at the end against the workflow code (Temporal's determinism rules), and against a
 * workflow that schedules differently, which must be refused.
 */
import assert from "node:assert/strict";
import { fork } from "node:child_process";
import { once } from "node:events";
import { join } from "node:path";
import { Context } from "@temporalio/activity";
import { CancelledFailure, WorkflowFailedError, type Client } from "@temporalio/client";
import type { TestWorkflowEnvironment } from "@temporalio/testing";
import { bundleWorkflowCode, Worker, type History, type WorkflowBundle } from "@temporalio/worker";
import { DeterminismViolationError } from "@temporalio/workflow";
import type { StackRun } from "../../../automation/temporal/runBatchActivity";
import {
  signalClaimsChanged,
  stackRunsStatus,
  stackRunsWorkflowId,
  type StackRunsTarget,
} from "../../../automation/temporal/stackRunsClient";
import {
  PHASE_ATTRIBUTE,
  STACK_ATTRIBUTE,
  type RunBatchInput,
  type RunBatchResult,
  type StackRunsSettings,
} from "../../../automation/temporal/stackRunsContract";
import { bundleStackRunsWorkflows, createStackRunsWorker } from "../../../automation/temporal/stackRunsWorker";
import { startTemporalDevServer } from "../../support/temporalDevServer";
import { QUIET_LOGGER } from "../../support/temporalRuntime";
import type { ProgramRun, WorkerProgramConfig, WorkerProgramMessage } from "../../support/temporalWorkerProgram";
import { missingTools, skipUnlessAvailable } from "../../support/toolchainRequirement";
import { until } from "../../support/until";

const CLUSTER = "c1";
const WORKER_PROGRAM = join(__dirname, "..", "..", "support", "temporalWorkerProgram.js");
const CHANGED_WORKFLOW = require.resolve("../../support/reorderedStackRunsWorkflow");

/** Short windows and timeouts, so each test takes seconds. */
const FAST: StackRunsSettings = {
  batch: { idleMs: 1000, maxMs: 5000 },
  retry: { initialMs: 300, maxMs: 500 },
  heartbeatTimeoutMs: 2000,
  runTimeoutMs: 60_000,
  runsPerExecution: 100,
};

interface StartedRun {
  readonly shard: string;
  readonly attempt: number;
  readonly at: number;
}

/** A fake engine run of a worker of this process: the runs that started and ended, and how many are under way. */
class FakeRuns {
  readonly started: StartedRun[] = [];
  readonly ended: Array<StartedRun & { readonly endedAt: number }> = [];
  activeNow = 0;

  constructor(private readonly behaviour: (input: RunBatchInput, signal: AbortSignal, attempt: number) => Promise<RunBatchResult>) {}

  readonly run: StackRun = async (input, signal) => {
    const started = { shard: input.shard, attempt: Context.current().info.attempt, at: Date.now() };
    this.started.push(started);
    this.activeNow += 1;
    try {
      return await this.behaviour(input, signal, started.attempt);
    } finally {
      this.activeNow -= 1;
      this.ended.push({ ...started, endedAt: Date.now() });
    }
  };

  of(shard: string): StartedRun[] {
    return this.started.filter((run) => run.shard === shard);
  }
}

const lasting =
  (ms: number) =>
  (_input: RunBatchInput, signal: AbortSignal): Promise<RunBatchResult> =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(() => resolve({ summary: `ran for ${ms} ms` }), ms);
      signal.addEventListener("abort", () => {
        clearTimeout(timer);
        reject(signal.reason as Error);
      });
    });

const nodeIds = (prefix: string, count: number) => Array.from({ length: count }, (_, i) => `${prefix}${i}`);

/** A worker program running: what it reported, and its end. */
interface WorkerProgram {
  readonly messages: WorkerProgramMessage[];
  started(): ProgramRun[];
  ended(): Array<ProgramRun & { readonly endedAt: number }>;
  kill(): Promise<void>;
}

async function startWorkerProgram(config: WorkerProgramConfig): Promise<WorkerProgram> {
  const child = fork(WORKER_PROGRAM, [JSON.stringify(config)], { stdio: ["ignore", "inherit", "inherit", "ipc"] });
  const messages: WorkerProgramMessage[] = [];
  child.on("message", (message: WorkerProgramMessage) => messages.push(message));
  const exited = once(child, "exit");
  const kill = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill("SIGKILL");
    await exited;
  };
  try {
    await until(
      `${config.identity} to poll`,
      () => {
        if (child.exitCode !== null) throw new Error(`${config.identity} exited with ${child.exitCode}`);
        return messages.some((m) => "ready" in m) ? true : undefined;
      },
      60_000,
      undefined,
      50,
    );
  } catch (error) {
    await kill();
    throw error;
  }
  return {
    messages,
    started: () => messages.flatMap((m) => ("started" in m ? [m.started] : [])),
    ended: () => messages.flatMap((m) => ("ended" in m ? [m.ended] : [])),
    kill,
  };
}

/** Whether two runs were under way at the same moment. */
const overlap = (a: { at: number; endedAt: number }, b: { at: number; endedAt: number }) => a.at < b.endedAt && b.at < a.endedAt;

describe("stack runs on Temporal (development server, fake engine run)", function () {
  this.timeout(120_000);
  let env: TestWorkflowEnvironment;
  let client: Client;
  let bundle: WorkflowBundle;
  /** Each test its own task queue: no worker of one test takes another's tasks. */
  let taskQueue = "";
  let queues = 0;
  /** Every execution the tests leave, replayed by the last two tests. */
  const executions: Array<{ workflowId: string; runId: string }> = [];

  before(async function () {
    skipUnlessAvailable(this, missingTools("temporal"));
    [env, bundle] = await Promise.all([startTemporalDevServer(), bundleStackRunsWorkflows(QUIET_LOGGER)]);
    client = env.client;
  });
  after(async () => {
    await env?.teardown();
  });
  beforeEach(() => {
    taskQueue = `stack-runs-${++queues}`;
  });

  const target = (settings: Partial<StackRunsSettings> = {}): StackRunsTarget => ({
    client,
    taskQueue,
    settings: { ...FAST, ...settings },
  });

  const worker =
    (identity: string, options: { run?: StackRun; workflows?: false } = {}) =>
    () =>
      createStackRunsWorker({
        connection: env.nativeConnection,
        taskQueue,
        identity,
        workflows: options.workflows ?? bundle,
        ...(options.run ? { run: options.run } : {}),
      });

  /**
   * Creates the workers and runs `body` while they poll, then shuts them down, also when a creation
   * or `body` failed: a worker left registered keeps the SDK's runtime, and this process, alive.
   */
  async function withWorkers<T>(create: Array<() => Promise<Worker>>, body: () => Promise<T>): Promise<T> {
    const workers: Worker[] = [];
    const running: Array<Promise<void>> = [];
    let result: T;
    let stopped: Array<PromiseSettledResult<void>>;
    try {
      for (const make of create) {
        const made = await make();
        workers.push(made);
        running.push(made.run());
      }
      result = await body();
    } finally {
      for (const w of workers) if (w.getState() === "RUNNING") w.shutdown();
      stopped = await Promise.allSettled(running);
    }
    // A worker that crashed fails a test that otherwise passed.
    const crashed = stopped.find((s) => s.status === "rejected");
    if (crashed) throw crashed.reason;
    return result;
  }

  /** Keeps every execution of the stack's workflow (continued-as-new ones too) for the replay tests. */
  async function keepExecutions(shard: string, firstRunId: string): Promise<void> {
    const workflowId = stackRunsWorkflowId(CLUSTER, shard);
    const latest = (await client.workflow.getHandle(workflowId).describe()).runId;
    for (let runId: string | undefined = latest; runId;) {
      executions.push({ workflowId, runId });
      if (runId === firstRunId) break;
      const history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
      runId = history.events?.[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId ?? undefined;
    }
  }

  it("batches a burst of changes into one run, runs a stack once at a time across two workers, and shows it to operators", async () => {
    const programs: WorkerProgram[] = [];
    try {
      // Long enough that the changes during the first run and the operator's look land inside it on a busy machine.
      const program = (identity: string) => startWorkerProgram({ address: env.address, taskQueue, identity, runMs: 3000, workflows: true });
      programs.push(...(await Promise.all([program("worker-a"), program("worker-b")])));
      const started = () => programs.flatMap((p) => p.started());
      const ended = () => programs.flatMap((p) => p.ended());

      // A quiet span of 2 s: the 40 signals of the burst arrive well within it.
      const burstTarget = target({ batch: { idleMs: 2000, maxMs: 10_000 } });
      const [handle] = await Promise.all([
        ...nodeIds("a", 20).map((id) => signalClaimsChanged(burstTarget, CLUSTER, "s0", [id])),
        ...nodeIds("b", 20).map((id) => signalClaimsChanged(burstTarget, CLUSTER, "s1", [id])),
      ]);
      await until("the first run of s0", () => (started().some((r) => r.shard === "s0") ? true : undefined), 30_000, undefined, 50);

      // Changes during the run wait for the next one; the operator sees the run and what waits.
      const during = nodeIds("d", 10);
      await Promise.all(during.map((id) => signalClaimsChanged(burstTarget, CLUSTER, "s0", [id])));
      const status = await stackRunsStatus(client, CLUSTER, "s0");
      assert.equal(status.phase, "running");
      assert.equal(status.runs, 1);
      assert.deepEqual([...status.pendingNodeIds].sort(), [...during].sort());
      const running = await handle!.describe();
      assert.equal(running.typedSearchAttributes.get(PHASE_ATTRIBUTE), "running");
      assert.equal(running.typedSearchAttributes.get(STACK_ATTRIBUTE), "c1-api-s0");

      const result = await handle!.result();
      assert.equal(result.runs, 2, "the burst's run and one for the changes during it");
      assert.deepEqual([...result.lastRun!.nodeIds].sort(), [...during].sort());
      assert.equal(result.lastRun!.outcome, "succeeded");
      assert.equal(result.phase, "waiting");
      assert.equal((await handle!.describe()).typedSearchAttributes.get(PHASE_ATTRIBUTE), "waiting");
      const s1 = client.workflow.getHandle(stackRunsWorkflowId(CLUSTER, "s1"));
      assert.equal((await s1.result()).runs, 1, "one run for s1's burst");

      const runs = ended();
      assert.equal(runs.length, started().length, "every run ended");
      const of = (shard: string) => runs.filter((r) => r.shard === shard);
      assert.equal(of("s0").length, 2);
      assert.ok(!overlap(of("s0")[0]!, of("s0")[1]!), "never two runs of one stack at once");
      assert.ok(
        of("s0").some((a) => overlap(a, of("s1")[0]!)),
        "two stacks do run at once",
      );
      await keepExecutions("s0", handle!.signaledRunId);
      await keepExecutions("s1", (await s1.describe()).runId);
    } finally {
      await Promise.all(programs.map((p) => p.kill()));
    }
  });

  it("starts the run at the window's longest span while changes keep coming", async () => {
    const fake = new FakeRuns(lasting(100));
    await withWorkers([worker("worker-a", { run: fake.run })], async () => {
      const settings = { batch: { idleMs: 400, maxMs: 1200 } };
      const first = await signalClaimsChanged(target(settings), CLUSTER, "s2", ["t0"]);
      const firstAt = Date.now();
      // A change every 150 ms for 3 s: the quiet span (400 ms) never elapses.
      for (const id of nodeIds("t", 20).slice(1)) {
        await new Promise((r) => setTimeout(r, 150));
        await signalClaimsChanged(target(settings), CLUSTER, "s2", [id]);
      }
      const trickleEnded = Date.now();
      await first.result();
      const runs = fake.of("s2");
      assert.ok(runs.length >= 2, `${runs.length} runs`);
      // The trickle lasts about 3 s, past the longest span (1.2 s): a window that waited for quiet
      // would start its run only after it. No tighter bound: a loaded machine delays the worker.
      assert.ok(
        runs[0]!.at < trickleEnded,
        `the first run began while the changes kept coming (${runs[0]!.at - firstAt} ms after the first, the trickle ${trickleEnded - firstAt} ms)`,
      );
      await keepExecutions("s2", first.signaledRunId);
    });
  });

  it("retries a run that failed as a whole with batchWindow's backoff", async () => {
    const fake = new FakeRuns(async (_input, _signal, attempt) => {
      if (attempt < 3) throw new Error(`engine run failed as a whole (attempt ${attempt})`);
      return { summary: "went through" };
    });
    await withWorkers([worker("worker-a", { run: fake.run })], async () => {
      const handle = await signalClaimsChanged(target(), CLUSTER, "s3", ["r0"]);
      const result = await handle.result();
      assert.deepEqual(
        fake.of("s3").map((r) => r.attempt),
        [1, 2, 3],
      );
      const [first, second, third] = fake.ended.filter((r) => r.shard === "s3");
      // retryDelay(1) = 300 ms, retryDelay(2) = 600 ms capped at 500 ms.
      assert.ok(second!.at - first!.endedAt >= 280, `second attempt after ${second!.at - first!.endedAt} ms`);
      assert.ok(third!.at - second!.endedAt >= 480, `third attempt after ${third!.at - second!.endedAt} ms`);
      assert.deepEqual(result.lastRun, { number: 1, outcome: "succeeded", nodeIds: ["r0"], summary: "went through" });
      await keepExecutions("s3", handle.signaledRunId);
    });
  });

  it("cancels the run under way when the workflow is cancelled, and closes only once the run has stopped", async () => {
    const aborted: string[] = [];
    const fake = new FakeRuns(
      (input, signal) =>
        new Promise((_resolve, reject) =>
          signal.addEventListener("abort", () => {
            aborted.push(input.shard);
            reject(signal.reason as Error);
          }),
        ),
    );
    await withWorkers([worker("worker-a", { run: fake.run })], async () => {
      const handle = await signalClaimsChanged(target(), CLUSTER, "s4", ["x0"]);
      await until("the run to start", () => (fake.of("s4").length === 1 ? true : undefined), 20_000, undefined, 50);
      await handle.cancel();
      await assert.rejects(
        handle.result(),
        (error: unknown) => error instanceof WorkflowFailedError && error.cause instanceof CancelledFailure,
      );
      assert.deepEqual(aborted, ["s4"]);
      assert.equal(fake.activeNow, 0, "the run had stopped before the workflow closed");
      assert.equal((await handle.describe()).status.name, "CANCELLED");
      assert.equal(fake.of("s4").length, 1, "a cancelled run is not retried");
      await keepExecutions("s4", handle.signaledRunId);
    });
  });

  it("continues as new after its bounded number of runs, carrying the changes no run has covered", async () => {
    const fake = new FakeRuns(lasting(800));
    await withWorkers([worker("worker-a", { run: fake.run })], async () => {
      const settings = { runsPerExecution: 1 };
      const handle = await signalClaimsChanged(target(settings), CLUSTER, "s5", ["n1"]);
      await until("the first run", () => (fake.of("s5").length === 1 ? true : undefined), 20_000, undefined, 50);
      await signalClaimsChanged(target(settings), CLUSTER, "s5", ["n2"]);
      const result = await handle.result();
      assert.equal(result.runs, 2);
      assert.deepEqual(result.lastRun?.nodeIds, ["n2"]);
      assert.equal((await client.workflow.getHandle(handle.workflowId, handle.signaledRunId).describe()).status.name, "CONTINUED_AS_NEW");
      assert.notEqual((await handle.describe()).runId, handle.signaledRunId);
      await keepExecutions("s5", handle.signaledRunId);
    });
  });

  it("hands the run of a killed worker to another worker", async () => {
    // Activities only: this process runs the workflow tasks, so the first attempt goes to the program.
    const program = await startWorkerProgram({ address: env.address, taskQueue, identity: "killed", workflows: false });
    try {
      await withWorkers([worker("workflows-only")], async () => {
        const handle = await signalClaimsChanged(target(), CLUSTER, "s6", ["w0"]);
        const [started] = await until(
          "the program's run",
          () => (program.started().length ? program.started() : undefined),
          20_000,
          undefined,
          50,
        );
        assert.deepEqual({ shard: started!.shard, attempt: started!.attempt }, { shard: "s6", attempt: 1 });
        await program.kill();

        const fake = new FakeRuns(async () => ({ summary: "finished by the survivor" }));
        await withWorkers([worker("survivor", { run: fake.run, workflows: false })], async () => {
          const result = await handle.result();
          assert.deepEqual(
            fake.of("s6").map((r) => r.attempt),
            [2],
          );
          assert.equal(result.lastRun?.summary, "finished by the survivor");
        });
        assert.deepEqual(program.ended(), [], "the killed run never finished");
        await keepExecutions("s6", handle.signaledRunId);
      });
    } finally {
      await program.kill();
    }
  });

  async function histories(): Promise<Array<{ workflowId: string; history: History }>> {
    return Promise.all(
      executions.map(async ({ workflowId, runId }) => ({
        workflowId,
        history: await client.workflow.getHandle(workflowId, runId).fetchHistory(),
      })),
    );
  }

  async function replay(workflowBundle: WorkflowBundle): Promise<Array<Error | undefined>> {
    const errors: Array<Error | undefined> = [];
    for await (const result of Worker.runReplayHistories({ workflowBundle }, await histories())) errors.push(result.error);
    return errors;
  }

  it("replays every history these tests recorded with the workflow code (determinism)", async function () {
    if (executions.length === 0) this.skip();
    // Six stacks, and the continued-as-new execution of one.
    assert.equal(executions.length, 8);
    assert.deepEqual(
      await replay(bundle),
      executions.map(() => undefined),
    );
  });

  it("refuses those histories when the workflow code schedules differently", async function () {
    if (executions.length === 0) this.skip();
    const changed = await bundleWorkflowCode({ workflowsPath: CHANGED_WORKFLOW, logger: QUIET_LOGGER });
    const errors = await replay(changed);
    assert.equal(errors.length, executions.length);
    for (const error of errors) assert.ok(error instanceof DeterminismViolationError, String(error));
  });
});
