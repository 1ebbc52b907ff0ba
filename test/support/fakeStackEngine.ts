/**
 * An in-memory StackEngine for route and reconciler tests: it "runs" an API stack's program by
 * reading its args (the members), keeps one fake server per member in the stack that created it
 * and reports create/same/delete steps (a run deletes only its own stack's servers). Knobs: a run delay (per stack too), sold-out server types, create errors by type (quota, image), failing members, transient errors, forced
 * replacements (for the preview guard), and an unreachable cluster API (the member's token Secret
 * step fails with the given error in each up while it is set), servers deleted outside Pulumi, and
 * (with `keepsState`) a stored state whose digest changes with every write, the service's own or
 * one made outside it (`editStateOutside`), and an up that dies after writing it (`dieAfterUp`).
 */
import { memberOutputName } from "../../automation/reconciler/runOutcome";
import type {
  RefreshOptions,
  ResourceStep,
  RunOptions,
  RunResult,
  StackDefinition,
  StackEngine,
  StepOp,
  StoredState,
} from "../../automation/engine/stackEngine";
import { emptySummary } from "../../automation/engine/stackEngine";
import type { AutoscaledProgramArgs } from "../../automation/reconciler/apiStack";

export interface FakeServer {
  readonly serverId: string;
  readonly nodeId: string;
  readonly serverType: string;
  readonly ipv4: string;
  readonly privateIpv4: string;
  /** The stack whose run created it. */
  readonly stack: string;
}

const SERVER_TYPE = "hcloud:index/server:Server";

export class FakeStackEngine implements StackEngine {
  readonly kind = "simulated" as const;
  readonly servers = new Map<string, FakeServer>();
  ups = 0;
  previews = 0;
  /** Largest number of runs in progress at once (across stacks). */
  maxConcurrent = 0;
  /** Largest number of runs in progress at once on one stack (must stay 1). */
  maxConcurrentPerStack = 0;
  /** Runs (up, preview, refresh) in progress. */
  running = 0;
  private readonly runningByStack = new Map<string, number>();
  /** The stack of every up, in order. */
  readonly upStacks: string[] = [];
  private nextId = 1000;
  delayMs = 0;
  /** A run delay for one stack instead of delayMs. */
  readonly stackDelays = new Map<string, number>();
  /** Server types sold out everywhere (`cpx21`) or in one location (`cpx21@fsn1`). */
  outOfStock = new Set<string>();
  failNodes = new Set<string>();
  /** Create errors by server type (`*`: every type), as Hetzner reports a quota or an unusable image. */
  createErrors = new Map<string, string>();
  /** Each up/preview call shifts one entry; a string entry throws it as a transient engine error. */
  transientErrors: string[] = [];
  forceReplace = new Set<string>();
  /** While set, every up fails each new member's bootstrap-token Secret step with this error (and creates no server). */
  secretError: string | undefined;
  /** Members of every up, in order. */
  readonly upMembers: string[][] = [];
  /**
   * Servers deleted outside Pulumi: their delete fails with not_found, as upstream's, until a
   * refresh that targets them drops them.
   */
  readonly vanished = new Set<string>();
  /** The targets of every refresh, in order (undefined: the whole stack). */
  readonly refreshTargets: Array<readonly string[] | undefined> = [];
  /** Writes of the stored state so far (ups and refreshes, and edits outside the service). */
  stateWrites = 0;
  /** The next up writes the state and then throws this, as a process killed before its caller saw the result. */
  dieAfterUp: string | undefined;
  /** Set by keepsState(): the engine reports its stored state, so the guard may be skipped. */
  storedState?: (stack: StackDefinition) => Promise<StoredState | undefined>;

  /** Reports a stored state (servers with their placement group) whose digest is the count of its writes. */
  keepsState(): this {
    this.storedState = async (stack) => ({
      digest: `writes-${this.stateWrites}`,
      resources: [...this.servers.values()]
        .filter((server) => server.stack === stack.stackName)
        .flatMap((server) => {
          const step = this.serverStep(stack, "same", server.nodeId);
          const group = { urn: `${step.urn}-pg`, type: "hcloud:index/placementGroup:PlacementGroup", id: `pg-${server.serverId}` };
          return [{ urn: step.urn, type: SERVER_TYPE, id: server.serverId, inputs: { placementGroupId: group.id } }, group];
        }),
    });
    return this;
  }

  /** A `pulumi stack import`, a person's up or a refresh outside the service: the state is written. */
  editStateOutside(): void {
    this.stateWrites += 1;
  }

  private members(stack: StackDefinition): AutoscaledProgramArgs["members"] {
    return (stack.program.args as AutoscaledProgramArgs).members;
  }

  private serverStep(stack: StackDefinition, op: StepOp, nodeId: string, error?: string): ResourceStep {
    return {
      op,
      urn: `urn:pulumi:${stack.stackName}::nodefleet::nodefleet:hcloud:NodePool$${SERVER_TYPE}::pool-server-${nodeId}`,
      type: SERVER_TYPE,
      name: `pool-server-${nodeId}`,
      keys: [],
      ...(error ? { error } : {}),
    };
  }

  private plan(stack: StackDefinition, apply: boolean): RunResult {
    const members = this.members(stack);
    const steps: ResourceStep[] = [];
    const wanted = new Set(members.map((m) => m.nodeId));
    const step = (op: StepOp, nodeId: string, error?: string): ResourceStep => this.serverStep(stack, op, nodeId, error);
    for (const m of members) {
      if (this.servers.has(m.nodeId)) {
        steps.push(step(this.forceReplace.has(m.nodeId) ? "replace" : "same", m.nodeId));
        continue;
      }
      let error: string | undefined;
      if (apply && this.secretError !== undefined) {
        steps.push({
          op: "create",
          urn: `urn:pulumi:${stack.stackName}::nodefleet::nodefleet:kubernetes:BootstrapToken$kubernetes:core/v1:Secret::pool-token-${m.nodeId}-secret-object`,
          type: "kubernetes:core/v1:Secret",
          name: `pool-token-${m.nodeId}-secret-object`,
          keys: [],
          error: this.secretError,
        });
        continue;
      }
      const createError = this.createErrors.get(m.snapshot.serverType) ?? this.createErrors.get("*");
      if (apply && (this.outOfStock.has(m.snapshot.serverType) || this.outOfStock.has(`${m.snapshot.serverType}@${m.snapshot.location}`))) {
        error = `resource_unavailable: server type ${m.snapshot.serverType} is sold out in ${m.snapshot.location}`;
      } else if (apply && createError !== undefined) {
        error = createError;
      } else if (apply && this.failNodes.has(m.nodeId)) {
        error = "server create failed: simulated failure";
      }
      steps.push(step("create", m.nodeId, error));
      if (apply && !error) {
        const n = this.nextId++;
        this.servers.set(m.nodeId, {
          serverId: String(n),
          nodeId: m.nodeId,
          serverType: m.snapshot.serverType,
          ipv4: `203.0.113.${n % 250}`,
          privateIpv4: `10.0.1.${n % 250}`,
          stack: stack.stackName,
        });
      }
    }
    for (const [nodeId, server] of [...this.servers]) {
      if (wanted.has(nodeId) || server.stack !== stack.stackName) continue;
      if (apply && this.vanished.has(nodeId)) {
        steps.push(step("delete", nodeId, `deleting ${nodeId}: server not found (not_found)`));
        continue;
      }
      steps.push(step("delete", nodeId));
      if (apply) this.servers.delete(nodeId);
    }
    const summary = emptySummary();
    for (const s of steps) summary[s.op] += 1;
    const outputs = Object.fromEntries(
      [...this.servers.values()]
        .filter((s) => wanted.has(s.nodeId))
        .map((s) => [memberOutputName(s.nodeId), { serverId: s.serverId, ipv4: s.ipv4, privateIpv4: s.privateIpv4 }]),
    );
    return {
      kind: apply ? "up" : "preview",
      summary,
      steps,
      outputs,
      succeeded: steps.every((s) => !s.error),
      durationMs: this.delayMs,
      simulated: true,
    };
  }

  private async run(stack: StackDefinition, apply: boolean, options?: RunOptions): Promise<RunResult> {
    this.running += 1;
    this.maxConcurrent = Math.max(this.maxConcurrent, this.running);
    const onStack = (this.runningByStack.get(stack.stackName) ?? 0) + 1;
    this.runningByStack.set(stack.stackName, onStack);
    this.maxConcurrentPerStack = Math.max(this.maxConcurrentPerStack, onStack);
    try {
      const delayMs = this.stackDelays.get(stack.stackName) ?? this.delayMs;
      if (delayMs > 0) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, delayMs);
          options?.signal?.addEventListener("abort", () => {
            clearTimeout(timer);
            resolve();
          });
        });
      }
      if (options?.signal?.aborted) throw new Error("run aborted");
      const transient = this.transientErrors.shift();
      if (transient) throw new Error(transient);
      if (apply) {
        this.upMembers.push(this.members(stack).map((m) => m.nodeId));
        this.upStacks.push(stack.stackName);
      }
      const result = this.plan(stack, apply);
      if (apply) this.stateWrites += 1;
      const dying = apply ? this.dieAfterUp : undefined;
      this.dieAfterUp = undefined;
      if (dying) throw new Error(dying);
      return result;
    } finally {
      this.running -= 1;
      this.runningByStack.set(stack.stackName, this.runningByStack.get(stack.stackName)! - 1);
    }
  }

  up(stack: StackDefinition, options?: RunOptions): Promise<RunResult> {
    this.ups += 1;
    return this.run(stack, true, options);
  }

  preview(stack: StackDefinition, options?: RunOptions): Promise<RunResult> {
    this.previews += 1;
    return this.run(stack, false, options);
  }

  async refresh(stack: StackDefinition, options?: RefreshOptions): Promise<RunResult> {
    this.refreshTargets.push(options?.targets);
    this.stateWrites += 1;
    const steps: ResourceStep[] = [];
    for (const [nodeId, server] of [...this.servers]) {
      if (server.stack !== stack.stackName) continue;
      const step = this.serverStep(stack, "same", nodeId);
      if (options?.targets && !options.targets.includes(step.urn)) continue;
      const gone = this.vanished.delete(nodeId);
      if (gone) this.servers.delete(nodeId);
      steps.push(gone ? { ...step, op: "delete" } : step);
    }
    const summary = emptySummary();
    for (const s of steps) summary[s.op] += 1;
    return { kind: "refresh", summary, steps, outputs: {}, succeeded: true, durationMs: 0, simulated: true };
  }

  async outputs(stack: StackDefinition): Promise<Record<string, unknown>> {
    return this.plan(stack, false).outputs;
  }
}
