/**
 * What an engine run means for the claims it acted on, and whether a preview is safe to apply.
 * Pure functions over the run's steps and outputs; the reconciler applies the result.
 */
import type { ResourceStep, RunResult } from "../engine/stackEngine";
import type { Claim } from "../store/claimStore";
import type { RecordedClaimUpdate } from "../store/runStore";
import { classifyFailure, launchBackoffOf, type FailureSource, type LaunchBackoff } from "./failureClass";

/** What the API stack's program exports per member (see stacks/autoscaledProgram.ts). */
export interface MemberOutput {
  readonly serverId: string;
  readonly ipv4?: string;
  readonly privateIpv4?: string;
}

/** The stack output name of one member: one output each, so a failing member cannot hide the others'. */
export function memberOutputName(nodeId: string): string {
  return `member-${nodeId}`;
}

/** What the engine reports for an output whose value never became known (e.g. its resource failed). */
const UNKNOWN_OUTPUT = "04da6b54-80e4-46f7-96ec-b56ff0331ba9";

export function memberOutputs(outputs: Readonly<Record<string, unknown>>): Record<string, MemberOutput> {
  const members: Record<string, MemberOutput> = {};
  const prefix = memberOutputName("");
  for (const [key, value] of Object.entries(outputs)) {
    if (!key.startsWith(prefix) || value === UNKNOWN_OUTPUT || typeof value !== "object" || value === null) continue;
    members[key.slice(prefix.length)] = value as MemberOutput;
  }
  return members;
}

/** Steps that belong to a node: its resources carry the node id in their names. */
export function stepsOfNode(steps: readonly ResourceStep[], nodeId: string): ResourceStep[] {
  const pattern = nodePattern(nodeId);
  return steps.filter((s) => pattern.test(s.name) || pattern.test(s.urn));
}

/** A resource name or URN that carries the node id as a whole word. */
export function nodePattern(nodeId: string): RegExp {
  return new RegExp(`(^|[^a-z0-9])${nodeId}($|[^a-z0-9])`);
}

/** A sold-out create, as Hetzner (resource_unavailable, placement_error) or the simulated cloud report it. */
export function isSoldOut(message: string): boolean {
  return launchBackoffOf(message)?.kind === "soldOut";
}

/** What a failed create makes unavailable for a while: its offering, or its whole pool. */
export interface LaunchBackoffMark extends LaunchBackoff {
  readonly pool: string;
  readonly serverType: string;
  readonly location: string;
  /** The failure, for people. */
  readonly reason: string;
}

export interface ClaimUpdate extends RecordedClaimUpdate {
  /**
   * The create failed in a way the next create of the offering (or pool) would repeat: sold out,
   * quota, unusable image, full network or placement group (failureClass.ts launchBackoffOf).
   */
  readonly backoff?: LaunchBackoffMark;
}

/** A claim a transient failure held back: kept for the next run instead of failed. */
export interface WaitingClaim {
  readonly nodeId: string;
  /** The API that did not answer, when the failure says which. */
  readonly source: FailureSource | undefined;
  readonly reason: string;
}

export interface RunOutcome {
  readonly updates: ClaimUpdate[];
  /** Some claim did not reach its goal without a permanent failure: run again later. */
  readonly retry: boolean;
  /** Claims whose steps failed only transiently (an unreachable API): what the retry waits out. */
  readonly waiting: readonly WaitingClaim[];
}

/** How long after its admission a claim's transient failures are still retried (the engine's run deadline). */
export const DEFAULT_CREATE_DEADLINE_MS = 30 * 60_000;

/** The failed steps' first transient failure, or undefined when any of them failed for good. */
function transientFailure(failed: readonly ResourceStep[]): { source: FailureSource | undefined; reason: string } | undefined {
  let first: { source: FailureSource | undefined; reason: string } | undefined;
  for (const step of failed) {
    const failure = classifyFailure(step.error ?? "", step.type);
    if (!failure.transient) return undefined;
    first ??= { source: failure.source, reason: `${step.type} ${step.name}: ${failure.signature}` };
  }
  return first;
}

export function runOutcome(input: {
  /** Claims the run was meant to create or keep (PROVISIONING and RUNNING at run start). */
  readonly members: readonly Claim[];
  /** Claims the run was meant to remove. */
  readonly terminating: readonly Claim[];
  readonly result: Pick<RunResult, "steps" | "outputs">;
  readonly at: string;
  /** Epoch ms the run ended; with createDeadlineMs, when transient failures stop being retried. Default: Date.parse(at). */
  readonly now?: number;
  /** Default DEFAULT_CREATE_DEADLINE_MS after the claim's admission. */
  readonly createDeadlineMs?: number;
}): RunOutcome {
  const outputs = memberOutputs(input.result.outputs);
  const updates: ClaimUpdate[] = [];
  const waiting: WaitingClaim[] = [];
  const now = input.now ?? Date.parse(input.at);
  const deadlineMs = input.createDeadlineMs ?? DEFAULT_CREATE_DEADLINE_MS;
  let retry = false;
  // Failures no claim owns (a placement group, say) fail the new members that got no server through them.
  const claimed = [...input.members, ...input.terminating];
  const shared = input.result.steps.filter((s) => s.error && !claimed.some((c) => stepsOfNode([s], c.nodeId).length > 0));
  for (const claim of input.members) {
    const own = stepsOfNode(input.result.steps, claim.nodeId).filter((s) => s.error);
    const output = outputs[claim.nodeId];
    const failed = own.length > 0 ? own : !output ? shared : [];
    if (claim.status === "PROVISIONING" && failed.length > 0) {
      const transient = transientFailure(failed);
      // An outage the claim may outlive: the next run tries again, until the create's deadline.
      const admittedAt = Date.parse(claim.createdAt);
      const pastDeadline = Number.isFinite(admittedAt) && now - admittedAt > deadlineMs;
      if (transient && !pastDeadline) {
        waiting.push({ nodeId: claim.nodeId, ...transient });
        retry = true;
        continue;
      }
      const errors = failed.map((s) => `${s.type} ${s.name}: ${s.error}`).join("; ");
      const reason = (
        transient
          ? `still failing ${deadlineMs >= 60_000 ? `${Math.round(deadlineMs / 60_000)} min` : `${Math.round(deadlineMs / 1000)} s`} after admission, the create's deadline: ${errors}`
          : errors
      ).slice(0, 1000);
      // The widest backoff any failed step calls for: a pool-wide one covers the offering too.
      const backoffs = failed.map((s) => launchBackoffOf(s.error ?? "")).filter((b): b is LaunchBackoff => b !== undefined);
      const backoff = backoffs.find((b) => b.scope === "pool") ?? backoffs[0];
      const failureReason = backoff ? `${backoff.summary}: ${reason}`.slice(0, 1000) : reason;
      updates.push({
        nodeId: claim.nodeId,
        expectedStatus: "PROVISIONING",
        patch: { status: "FAILED", failureCode: backoff ? "InsufficientCapacity" : "CreateFailed", failureReason },
        ...(backoff
          ? { backoff: { ...backoff, pool: claim.pool, serverType: claim.instanceType, location: claim.zone, reason: failureReason } }
          : {}),
      });
    } else if (output) {
      updates.push({
        nodeId: claim.nodeId,
        expectedStatus: claim.status,
        patch: {
          ...(claim.status === "PROVISIONING" ? { status: "RUNNING" as const } : {}),
          instanceId: String(output.serverId),
          ipv4: output.ipv4 ?? null,
          privateIpv4: output.privateIpv4 ?? null,
        },
      });
    } else {
      retry = true;
    }
  }
  for (const claim of input.terminating) {
    const failed = stepsOfNode(input.result.steps, claim.nodeId).filter((s) => s.error);
    if (failed.length === 0 && !outputs[claim.nodeId]) {
      updates.push({ nodeId: claim.nodeId, expectedStatus: "TERMINATING", patch: { status: "GONE", goneAt: input.at } });
    } else {
      retry = true;
      const transient = transientFailure(failed);
      if (transient) waiting.push({ nodeId: claim.nodeId, ...transient });
    }
  }
  return { updates, retry, waiting };
}

export interface GuardViolation {
  readonly op: string;
  readonly type: string;
  readonly name: string;
  readonly nodeId?: string;
  readonly replaceKeys?: readonly string[];
}

/**
 * A preview may not replace or delete anything of a member that should stay (not TERMINATING, not
 * FAILED: a failed member never got its server), nor a server it cannot attribute to a claim.
 */
export function previewGuardViolations(steps: readonly ResourceStep[], claims: readonly Claim[]): GuardViolation[] {
  const violations: GuardViolation[] = [];
  for (const step of steps) {
    if (step.op !== "replace" && step.op !== "delete") continue;
    const owner = claims.find((c) => stepsOfNode([step], c.nodeId).length > 0);
    const protectedOwner = owner && owner.status !== "TERMINATING" && owner.status !== "FAILED" && owner.status !== "GONE";
    const unattributedServer = !owner && /Server$/.test(step.type);
    if (protectedOwner || unattributedServer) {
      violations.push({
        op: step.op,
        type: step.type,
        name: step.name,
        ...(owner ? { nodeId: owner.nodeId } : {}),
        ...(step.replaceKeys ? { replaceKeys: step.replaceKeys } : {}),
      });
    }
  }
  return violations;
}
