/**
 * Heals the git stack's bare-metal Nodes (issue #38 part 5): a Robot or Elastic Metal Node that
 * stays NotReady past a grace period is walked up the remediation ladder of
 * components/robot/robotRemediation.ts (SSH reboot, software reset, hardware reset, each after its
 * wait) and then reported as permanently failed. One Node of a pool at a time, so a pool-wide
 * outage (a switch, the control plane) never resets a whole pool. The step lives on the Node
 * (remediationCondition.ts); the dry-run mode logs what it would do and touches nothing.
 */
import type { Logger } from "pino";
import { type RemediationRung, type RemediationStep, nextRemediation, stepAfter } from "../../components/robot/robotRemediation";
import { errorMessage } from "../../components/shared/errorMessage";
import type { BareMetalTarget } from "./bareMetalTargets";
import { type RecordedStep, recordedStep } from "./remediationCondition";

/** What the healer reads and does, so tests can drive it with fakes. */
export interface HealerIo {
  /** The cluster's Nodes (`GET /api/v1/nodes`). */
  readonly listNodes: () => Promise<unknown>;
  /** Writes the step on the Node (its NodefleetRemediation condition). */
  readonly recordStep: (nodeName: string, step: RemediationStep, sinceMs: number) => Promise<void>;
  /** Runs a rung on the target's machine; false when the target has no such rung (the next one runs at once). */
  readonly runRung: (target: BareMetalTarget, rung: RemediationRung) => Promise<boolean>;
}

export type HealMode = "on" | "dry-run";

export interface BareMetalHealerOptions {
  /** The members to watch, current (the stack file may change). */
  readonly targets: () => readonly BareMetalTarget[];
  readonly io: HealerIo;
  /** `dry-run` logs each action it would take and changes nothing. */
  readonly mode: HealMode;
  /** How long a Node is NotReady before the first rung (default 5 min, as CAPH's typical unhealthy timeout). */
  readonly notReadyForMs?: number;
  /** How long each rung waits for the Node to come back before the next (default: the ladder's own, 5/10/10 min). */
  readonly rungWaitMs?: number;
  /** Time between checks (default 30 s). */
  readonly intervalMs?: number;
  readonly now?: () => number;
  readonly logger?: Logger;
  /** Called per action taken (or, in dry run, that would be): a rung, `recovered` or `failed`. */
  readonly observe?: (pool: string, action: RemediationRung | "recovered" | "failed") => void;
}

/** One action of a check, as tests and logs see it. */
export interface HealAction {
  readonly node: string;
  readonly pool: string;
  readonly action: RemediationRung | "recovered" | "failed" | "skipped";
  /** For a skipped rung: the one the target does not have. */
  readonly rung?: RemediationRung;
}

interface NodeHealth {
  readonly ready: boolean;
  /** When the Ready condition last changed (ms), 0 when unknown. */
  readonly readyChangedMs: number;
  readonly recorded: RecordedStep;
}

interface NodeItem {
  metadata?: { name?: unknown };
  status?: { conditions?: Array<{ type?: unknown; status?: unknown; lastTransitionTime?: unknown }> };
}

/** Each Node's readiness and recorded step, by name. */
function nodeHealth(nodeList: unknown): Map<string, NodeHealth> {
  const items = (nodeList as { items?: unknown } | null | undefined)?.items;
  const health = new Map<string, NodeHealth>();
  if (!Array.isArray(items)) return health;
  for (const item of items as Array<NodeItem | null>) {
    const name = item?.metadata?.name;
    if (typeof name !== "string") continue;
    const conditions = item?.status?.conditions ?? [];
    const ready = conditions.find((c) => c?.type === "Ready");
    const changed = typeof ready?.lastTransitionTime === "string" ? Date.parse(ready.lastTransitionTime) : NaN;
    health.set(name, {
      ready: ready?.status === "True",
      readyChangedMs: Number.isFinite(changed) ? changed : 0,
      recorded: recordedStep(conditions),
    });
  }
  return health;
}

const ON_LADDER = new Set<RemediationStep>(["ssh-reboot", "sw-reset", "hw-reset"]);

export class BareMetalHealer {
  /** The steps this process took (the only record in dry run; ahead of a Node write that failed). */
  private readonly steps = new Map<string, RecordedStep>();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;
  private stopped = false;

  constructor(private readonly options: BareMetalHealerOptions) {}

  start(): void {
    this.stopped = false;
    const schedule = () => {
      if (this.stopped) return;
      this.timer = setTimeout(() => {
        this.running = this.check().finally(schedule);
      }, this.options.intervalMs ?? 30_000);
      this.timer.unref();
    };
    schedule();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running?.catch(() => undefined);
  }

  /** One check of every target: the actions taken (or, in dry run, that would be). */
  async check(): Promise<HealAction[]> {
    const { io, logger } = this.options;
    let health: Map<string, NodeHealth>;
    try {
      health = nodeHealth(await io.listNodes());
    } catch (error) {
      logger?.warn({ err: errorMessage(error) }, "bare-metal healing: listing the Nodes failed; no Node is remediated this time");
      return [];
    }
    const targets = [...this.options.targets()].sort((a, b) => a.nodeName.localeCompare(b.nodeName));
    // A Node that is gone (its member reinstalled or removed) holds no slot, whatever step it was on.
    const busyPools = new Set(
      targets.filter((t) => health.has(t.nodeName) && ON_LADDER.has(this.stepOf(t, health).step)).map((t) => t.pool),
    );
    for (const name of this.steps.keys()) if (!health.has(name)) this.steps.delete(name);
    const actions: HealAction[] = [];
    for (const target of targets) {
      const node = health.get(target.nodeName);
      // No Node: never joined or already removed; the stack, not the healer, owns that.
      if (!node) continue;
      try {
        actions.push(...(await this.heal(target, node, health, busyPools)));
      } catch (error) {
        logger?.warn(
          { node: target.nodeName, pool: target.pool, err: errorMessage(error) },
          "bare-metal healing: a remediation step failed; it is tried again at the next check",
        );
      }
    }
    return actions;
  }

  private stepOf(target: BareMetalTarget, health: Map<string, NodeHealth>): RecordedStep {
    return this.steps.get(target.nodeName) ?? health.get(target.nodeName)?.recorded ?? { step: "none", sinceMs: 0 };
  }

  private async heal(
    target: BareMetalTarget,
    node: NodeHealth,
    health: Map<string, NodeHealth>,
    busyPools: Set<string>,
  ): Promise<HealAction[]> {
    const now = (this.options.now ?? Date.now)();
    const current = this.stepOf(target, health);
    // A person who brings a failed machine back clears the failure: the Node is Ready again.
    if (current.step === "failed" && node.ready) return [await this.record(target, "none", now, "recovered")];
    if (current.step === "none" && !node.ready) {
      const notReadyFor = node.readyChangedMs > 0 ? now - node.readyChangedMs : Infinity;
      if (notReadyFor < (this.options.notReadyForMs ?? 5 * 60_000)) return [];
      if (busyPools.has(target.pool)) return [];
    }
    const action = nextRemediation({ step: current.step, elapsedMs: now - current.sinceMs, healthy: node.ready }, this.options.rungWaitMs);
    switch (action.kind) {
      // Leaving the ladder frees the pool's one remediation slot for the next NotReady Node.
      case "recovered":
        busyPools.delete(target.pool);
        return [await this.record(target, "none", now, "recovered")];
      case "fail":
        busyPools.delete(target.pool);
        return [await this.record(target, "failed", now, "failed")];
      case "escalate":
        busyPools.add(target.pool);
        return this.escalate(target, action.step, now);
      default:
        return [];
    }
  }

  /** Runs `rung`, or the next ones when the target lacks it, and records where that leaves the Node. */
  private async escalate(target: BareMetalTarget, rung: RemediationRung, now: number): Promise<HealAction[]> {
    const { io, mode, logger } = this.options;
    const skipped: HealAction[] = [];
    let step: RemediationStep = rung;
    while (step !== "failed") {
      const current = step as RemediationRung;
      if (mode === "dry-run") {
        logger?.warn({ node: target.nodeName, pool: target.pool, rung: current }, "bare-metal healing (dry run): would run this rung");
        break;
      }
      if (await io.runRung(target, current)) break;
      skipped.push({ node: target.nodeName, pool: target.pool, action: "skipped", rung: current });
      // The target has no such rung: move past it as if its wait had ended.
      const next = stepAfter(current, nextRemediation({ step: current, elapsedMs: Number.MAX_SAFE_INTEGER, healthy: false }));
      // The ladder only climbs; a step that does not move would loop.
      if (next === current) throw new Error(`the remediation ladder did not move past ${current}`);
      step = next;
    }
    if (step === "failed") return [...skipped, await this.record(target, "failed", now, "failed")];
    return [...skipped, await this.record(target, step, now, step as RemediationRung)];
  }

  private async record(target: BareMetalTarget, step: RemediationStep, now: number, action: HealAction["action"]): Promise<HealAction> {
    const { io, mode, logger, observe } = this.options;
    this.steps.set(target.nodeName, { step, sinceMs: now });
    if (mode === "on") await io.recordStep(target.nodeName, step, now);
    if (action !== "skipped") observe?.(target.pool, action as RemediationRung | "recovered" | "failed");
    const fields = { node: target.nodeName, pool: target.pool, action, dryRun: mode === "dry-run" };
    if (action === "failed")
      logger?.error(fields, "bare-metal healing: the Node stayed NotReady after every rung; it is marked permanently failed");
    else if (action === "recovered") logger?.info(fields, "bare-metal healing: the Node is Ready again");
    else logger?.warn(fields, "bare-metal healing: the Node is NotReady; ran the next rung of the ladder");
    return { node: target.nodeName, pool: target.pool, action };
  }
}
