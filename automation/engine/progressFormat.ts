/**
 * Engine progress for people and for logs: one line per resource step with a running count (CLI,
 * stderr) and one structured record per step (the service's pino log). Simulated runs say so on
 * every line.
 */
import type { ChangeSummary, ResourceStep, RunResult } from "./stackEngine";

const OP_SYMBOL: Record<ResourceStep["op"], string> = { create: "+", update: "~", replace: "+-", delete: "-", same: " " };

export function formatStepLine(step: ResourceStep, count: number, options: { simulated: boolean; total?: number }): string {
  const prefix = options.simulated ? "[simulated] " : "";
  const counter = options.total ? `${count}/${options.total}` : String(count);
  const changed = step.op === "replace" && step.replaceKeys?.length ? ` (replace: ${step.replaceKeys.join(", ")})` : step.keys.length ? ` (${step.keys.join(", ")})` : "";
  const failed = step.error ? ` FAILED: ${step.error}` : "";
  return `${prefix}[${counter}] ${OP_SYMBOL[step.op]} ${step.op} ${step.type} ${step.name}${changed}${failed}`;
}

export function stepLogRecord(step: ResourceStep, count: number, simulated: boolean): Record<string, unknown> {
  return {
    event: "resource_step",
    simulated,
    count,
    op: step.op,
    type: step.type,
    name: step.name,
    urn: step.urn,
    ...(step.keys.length ? { keys: step.keys } : {}),
    ...(step.replaceKeys?.length ? { replaceKeys: step.replaceKeys } : {}),
    ...(step.error ? { error: step.error } : {}),
  };
}

export function formatSummary(summary: ChangeSummary): string {
  return (["create", "update", "replace", "delete", "same"] as const).map((op) => `${summary[op]} to ${op}`).join(", ");
}

export function formatRunResult(result: RunResult): string {
  const prefix = result.simulated ? "[simulated] " : "";
  const failed = result.steps.filter((s) => s.error).length;
  return `${prefix}${result.kind} ${result.succeeded ? "succeeded" : `finished with ${failed} failed step(s)`} in ${result.durationMs} ms: ${formatSummary(result.summary)}`;
}

/** The change summary of the steps that took effect (failed steps changed nothing). */
export function summarise(steps: readonly ResourceStep[]): ChangeSummary {
  const summary: ChangeSummary = { create: 0, update: 0, replace: 0, delete: 0, same: 0 };
  for (const step of steps) if (!step.error) summary[step.op] += 1;
  return summary;
}
