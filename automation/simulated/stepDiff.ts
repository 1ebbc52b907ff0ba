/**
 * Pure step planning for the simulated engine: given a resource's previous recorded inputs (if any)
 * and the inputs the program registers now, decide create / update / replace / same, with the
 * changed keys and the keys that force the replacement; and find the deletes (previous resources
 * the program no longer declares). No Pulumi runtime needed.
 */
import type { StepOp } from "../engine/stackEngine";
import { type ReplaceTriggerEntry, replaceTriggersFor } from "./replaceTriggers";

export interface ResourceInputs {
  readonly type: string;
  readonly inputs: Readonly<Record<string, unknown>>;
}

export interface StepDecision {
  readonly op: Exclude<StepOp, "delete">;
  /** Top-level input keys whose value changed, sorted. */
  readonly keys: readonly string[];
  /** Replace-triggering property paths that changed (replace only), sorted. */
  readonly replaceKeys: readonly string[];
}

/** Structural equality of JSON-like values (object key order does not matter). */
export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== typeof b || a === null || b === null || typeof a !== "object") {
    // Pulumi hands numbers and their string form interchangeably for ids; do not count that as a change.
    return (
      typeof a !== "object" &&
      typeof b !== "object" &&
      a !== undefined &&
      b !== undefined &&
      String(a) === String(b) &&
      (typeof a === "number" || typeof b === "number")
    );
  }
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const bb = b as unknown[];
    return a.length === bb.length && a.every((v, i) => deepEqual(v, bb[i]));
  }
  const ao = a as Record<string, unknown>;
  const bo = b as Record<string, unknown>;
  const keys = new Set([...Object.keys(ao), ...Object.keys(bo)]);
  for (const key of keys) {
    if (!deepEqual(ao[key], bo[key])) return false;
  }
  return true;
}

function valueAt(value: unknown, path: string): unknown {
  let current = value;
  for (const part of path.split(".")) {
    if (typeof current !== "object" || current === null) return undefined;
    current = (current as Record<string, unknown>)[part];
  }
  return current;
}

/** Absent and undefined inputs are the same thing to a provider. */
function definedKeys(inputs: Readonly<Record<string, unknown>>): string[] {
  return Object.keys(inputs).filter((k) => inputs[k] !== undefined);
}

export function changedKeys(previous: Readonly<Record<string, unknown>>, next: Readonly<Record<string, unknown>>): string[] {
  const keys = new Set([...definedKeys(previous), ...definedKeys(next)]);
  return [...keys].filter((k) => !deepEqual(previous[k], next[k])).sort();
}

export function decideStep(
  previous: ResourceInputs | undefined,
  next: ResourceInputs,
  triggers: (type: string) => ReplaceTriggerEntry | undefined = replaceTriggersFor,
): StepDecision {
  if (!previous) return { op: "create", keys: [], replaceKeys: [] };
  if (previous.type !== next.type) return { op: "replace", keys: ["__type"], replaceKeys: ["__type"] };
  const keys = changedKeys(previous.inputs, next.inputs);
  if (keys.length === 0) return { op: "same", keys: [], replaceKeys: [] };
  const entry = triggers(next.type);
  const replaceKeys = entry?.allInputs
    ? keys
    : (entry?.properties ?? []).filter((path) => !deepEqual(valueAt(previous.inputs, path), valueAt(next.inputs, path))).sort();
  return { op: replaceKeys.length > 0 ? "replace" : "update", keys, replaceKeys };
}

/** Previous resources not declared any more, in reverse creation order (dependents go first). */
export function planDeletes<T extends { readonly urn: string }>(
  previousInCreationOrder: readonly T[],
  declaredUrns: ReadonlySet<string>,
): T[] {
  return previousInCreationOrder.filter((r) => !declaredUrns.has(r.urn)).reverse();
}
