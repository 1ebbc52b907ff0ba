/**
 * Where a bare-metal Node is on the remediation ladder, kept on the Node itself as the condition
 * `NodefleetRemediation` (custom condition types beside kubelet's, as node-problem-detector keeps
 * its own): a restart of the service resumes the ladder where it was, and operators see what was
 * done and since when with `kubectl describe node`.
 */
import { REMEDIATION_LADDER, type RemediationStep } from "../../components/robot/robotRemediation";

export const REMEDIATION_CONDITION_TYPE = "NodefleetRemediation";

/** The condition's reason per step; `none` is written as `Healthy` with status False. */
const REASONS: Readonly<Record<RemediationStep, string>> = {
  none: "Healthy",
  "ssh-reboot": "SshReboot",
  "sw-reset": "SoftwareReset",
  "hw-reset": "HardwareReset",
  failed: "PermanentFailure",
};

/** A step and when it started (ms since the epoch). */
export interface RecordedStep {
  readonly step: RemediationStep;
  readonly sinceMs: number;
}

interface Condition {
  readonly type?: unknown;
  readonly status?: unknown;
  readonly reason?: unknown;
  readonly lastTransitionTime?: unknown;
}

/** The step a Node's conditions record: `none` without the condition, with status False or an unknown reason. */
export function recordedStep(conditions: readonly unknown[] | undefined): RecordedStep {
  const condition = (conditions ?? []).find((c): c is Condition => (c as Condition | null)?.type === REMEDIATION_CONDITION_TYPE);
  if (!condition || condition.status !== "True") return { step: "none", sinceMs: 0 };
  const step = (Object.keys(REASONS) as RemediationStep[]).find((s) => s !== "none" && REASONS[s] === condition.reason);
  const since = typeof condition.lastTransitionTime === "string" ? Date.parse(condition.lastTransitionTime) : NaN;
  return step ? { step, sinceMs: Number.isFinite(since) ? since : 0 } : { step: "none", sinceMs: 0 };
}

/** What each step tells an operator. */
function messageOf(step: RemediationStep, rungWaitMs: number | undefined): string {
  switch (step) {
    case "none":
      return "the Node is Ready; no remediation is running";
    case "failed":
      return "every rung of the remediation ladder was tried and the Node stayed NotReady: a person must look at the machine (nodefleet does nothing more)";
    default: {
      const waitMs = rungWaitMs ?? REMEDIATION_LADDER.find((r) => r.step === step)!.waitMs;
      return `nodefleet ran a ${step} because the Node was NotReady; it waits ${waitMs >= 60_000 ? `${waitMs / 60_000} min` : `${waitMs / 1000} s`} for it to come back before the next rung`;
    }
  }
}

/** The condition recording `step` since `sinceMs`: True while on the ladder or failed, False when healthy again. */
export function remediationCondition(step: RemediationStep, sinceMs: number, rungWaitMs?: number): Record<string, string> {
  const time = new Date(sinceMs).toISOString().replace(/\.\d{3}Z$/, "Z");
  return {
    type: REMEDIATION_CONDITION_TYPE,
    status: step === "none" ? "False" : "True",
    reason: REASONS[step],
    message: messageOf(step, rungWaitMs),
    lastTransitionTime: time,
    lastHeartbeatTime: time,
  };
}
