/**
 * The remediation ladder for an unhealthy dedicated (Robot) node, as CAPH runs it: an SSH reboot,
 * then a software reset (Robot `POST /reset type=sw`, CTRL+ALT+DEL), then a hardware reset
 * (`type=hw`), each given a fixed time to bring the node back; after the last one the node is a
 * permanent failure that needs a person. A pure function from where the node is on the ladder,
 * how long ago that step started and whether it is healthy, to the next action, so any scheduler
 * (the scaling API, a cron job) can drive it and persist nothing but the step and its start time.
 */

/** Where a node is: not being remediated, waiting after one of the rungs, or given up on. */
export type RemediationStep = "none" | "ssh-reboot" | "sw-reset" | "hw-reset" | "failed";

/** A step that is a rung of the ladder. */
export type RemediationRung = Exclude<RemediationStep, "none" | "failed">;

/** The rungs in order, with how long each waits for the node to come back. */
export const REMEDIATION_LADDER: ReadonlyArray<{ readonly step: RemediationRung; readonly waitMs: number }> = [
  { step: "ssh-reboot", waitMs: 5 * 60_000 },
  { step: "sw-reset", waitMs: 10 * 60_000 },
  { step: "hw-reset", waitMs: 10 * 60_000 },
];

/** Position on the ladder: none 0, the rungs 1..3, failed 4 (used for ordering only). */
export const REMEDIATION_ORDER: readonly RemediationStep[] = ["none", ...REMEDIATION_LADDER.map((r) => r.step), "failed"];

export type RemediationAction =
  /** Healthy and nothing running: nothing to do. */
  | { readonly kind: "none" }
  /** The node came back: leave the ladder (step back to none). */
  | { readonly kind: "recovered" }
  /** Give the current rung more time. */
  | { readonly kind: "wait"; readonly remainingMs: number }
  /** Run the next rung now (ssh reboot or a Robot reset) and record it as the step, starting now. */
  | { readonly kind: "escalate"; readonly step: RemediationRung }
  /** The last rung did not help: mark the node permanently failed (terminal). */
  | { readonly kind: "fail" }
  /** Already permanently failed: stays so until a person intervenes (replaces or re-adds the node). */
  | { readonly kind: "failed" };

export interface RemediationState {
  readonly step: RemediationStep;
  /** Time since the current step started (ignored for none and failed). */
  readonly elapsedMs: number;
  /** Whether the node is healthy now (SSH answers with the expected hostname, the Node is Ready). */
  readonly healthy: boolean;
}

/**
 * The next action from `state`. `rungWaitMs` replaces every rung's own wait (the local cloud and
 * its tests, whose machines reboot in seconds); without it each rung waits as the ladder says.
 */
export function nextRemediation(state: RemediationState, rungWaitMs?: number): RemediationAction {
  if (state.step === "failed") return { kind: "failed" };
  if (state.step === "none") return state.healthy ? { kind: "none" } : { kind: "escalate", step: REMEDIATION_LADDER[0].step };
  if (state.healthy) return { kind: "recovered" };
  const index = REMEDIATION_LADDER.findIndex((r) => r.step === state.step);
  const rung = REMEDIATION_LADDER[index];
  const elapsed = Number.isFinite(state.elapsedMs) ? Math.max(0, state.elapsedMs) : 0;
  const waitMs = rungWaitMs ?? rung.waitMs;
  if (elapsed < waitMs) return { kind: "wait", remainingMs: waitMs - elapsed };
  const next = REMEDIATION_LADDER[index + 1];
  return next ? { kind: "escalate", step: next.step } : { kind: "fail" };
}

/** The step a node is on after `action` (what a scheduler persists). */
export function stepAfter(current: RemediationStep, action: RemediationAction): RemediationStep {
  switch (action.kind) {
    case "none":
    case "wait":
      return current;
    case "recovered":
      return "none";
    case "escalate":
      return action.step;
    case "fail":
    case "failed":
      return "failed";
  }
}

/** The Robot reset type a rung triggers (the SSH reboot needs no Robot call). */
export function robotResetTypeFor(step: RemediationRung): "sw" | "hw" | undefined {
  return step === "sw-reset" ? "sw" : step === "hw-reset" ? "hw" : undefined;
}
