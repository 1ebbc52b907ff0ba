/**
 * One engine step as a line the engine differential compares: op, name, changed keys, the keys that
 * forced a replacement, and FAILED; the same on both engines when they agree.
 */
import type { ResourceStep } from "../../automation/engine/stackEngine";

export function describeStep(step: ResourceStep): string {
  return [
    step.op,
    step.name,
    step.keys.length ? `keys=${step.keys.join(",")}` : "",
    step.replaceKeys?.length ? `replace=${step.replaceKeys.join(",")}` : "",
    step.error ? "FAILED" : "",
  ]
    .filter(Boolean)
    .join(" ");
}
