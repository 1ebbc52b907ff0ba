/**
 * Engine progress for people and for logs: one line per resource step with a running count (CLI,
 * stderr) and one structured record per step (the service's pino log). Simulated runs say so on
 * every line.
 */
import { type ChangeSummary, type EngineLogger, type ResourceStep, type RunOptions, type RunResult, emptySummary } from "./stackEngine";

const OP_SYMBOL: Record<ResourceStep["op"], string> = { create: "+", update: "~", replace: "+-", delete: "-", same: " " };

export function formatStepLine(step: ResourceStep, count: number, options: { simulated: boolean; total?: number }): string {
  const prefix = options.simulated ? "[simulated] " : "";
  const counter = options.total ? `${count}/${options.total}` : String(count);
  const changed =
    step.op === "replace" && step.replaceKeys?.length
      ? ` (replace: ${step.replaceKeys.join(", ")})`
      : step.keys.length
        ? ` (${step.keys.join(", ")})`
        : "";
  const failed = step.error ? ` FAILED: ${step.error}` : "";
  return `${prefix}[${counter}] ${OP_SYMBOL[step.op]} ${step.op} ${step.type} ${step.name}${changed}${failed}`;
}

function stepLogRecord(step: ResourceStep, count: number, simulated: boolean): Record<string, unknown> {
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

/** The change summary of the steps that took effect (failed steps changed nothing). */
function summarise(steps: readonly ResourceStep[]): ChangeSummary {
  const summary = emptySummary();
  for (const step of steps) if (!step.error) summary[step.op] += 1;
  return summary;
}

/**
 * Hands a step to the caller's `onStep` and logs it: failures as warnings, changes as info, unchanged
 * resources at debug (so a large `same` run does not flood the service log).
 */
export function reportStep(
  step: ResourceStep,
  count: number,
  options: RunOptions,
  logger: EngineLogger | undefined,
  simulated: boolean,
): void {
  options.onStep?.(step, count);
  if (!logger) return;
  const line = formatStepLine(step, count, { simulated });
  if (step.error) logger.warn(stepLogRecord(step, count, simulated), line);
  else if (step.op !== "same") logger.info(stepLogRecord(step, count, simulated), line);
  else logger.debug?.(stepLogRecord(step, count, simulated), line);
}

/** The RunResult of finished steps: succeeded when no step failed; `started` is a Date.now() value. */
export function runResult(
  kind: RunResult["kind"],
  steps: readonly ResourceStep[],
  outputs: Record<string, unknown>,
  started: number,
  simulated: boolean,
): RunResult {
  return {
    kind,
    summary: summarise(steps),
    steps,
    outputs,
    succeeded: steps.every((s) => !s.error),
    durationMs: Date.now() - started,
    simulated,
  };
}
