/**
 * Messages in plain words for the config problems the schema leaves to zod's defaults ("Invalid
 * input: expected number, received undefined"): whoever reads them wrote a YAML stack file, not a
 * zod schema. Used as the parse's error map, so a field's own message in the schema still wins and
 * only the generic cases are worded here.
 */
import type { z } from "zod";
import { nearestName } from "../shared/nearestName";

type RawIssue = z.core.$ZodRawIssue;

const EXPECTED: Readonly<Record<string, string>> = {
  number: "a number",
  int: "a whole number",
  string: "a string",
  boolean: "true or false",
  array: "a list",
  tuple: "a list",
  object: "a map of keys to values",
  record: "a map of keys to values",
};

/** What a YAML author wrote, in their terms. */
function describeValue(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "a list";
  if (typeof value === "object") return "a map";
  if (typeof value === "string") return `the string ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}...` : value)}`;
  if (typeof value === "number") return `the number ${value}`;
  return String(value);
}

/** The keys a strict object knows, from the schema that raised an unrecognized-keys issue. */
function knownKeysOf(issue: RawIssue): string[] {
  const shape = (issue.inst as { _zod?: { def?: { shape?: Record<string, unknown> } } } | undefined)?._zod?.def?.shape;
  return shape ? Object.keys(shape) : [];
}

function bound(issue: RawIssue & { origin?: unknown; inclusive?: unknown }, value: number | bigint, side: "at least" | "at most"): string {
  const exclusive = issue.inclusive === false;
  const comparison = exclusive ? (side === "at least" ? "more than" : "less than") : side;
  switch (issue.origin) {
    case "string":
      return side === "at least" && Number(value) === 1 && !exclusive ? "must not be empty" : `must be ${comparison} ${value} characters`;
    case "array":
    case "set":
      return side === "at least" && Number(value) === 1 && !exclusive
        ? "needs at least one entry"
        : `must have ${comparison} ${value} entries`;
    default:
      return `must be ${comparison} ${value}`;
  }
}

/**
 * The plain message for a generic issue, or undefined to keep zod's. `requiredFor` names what needs
 * a missing field ("an autoscaled pool"), so "required" says why.
 */
export function plainIssueMessage(issue: RawIssue, requiredFor?: string): string | undefined {
  switch (issue.code) {
    case "invalid_type":
      if (issue.input === undefined) return requiredFor ? `required for ${requiredFor}` : "required";
      return `must be ${EXPECTED[issue.expected] ?? issue.expected}, not ${describeValue(issue.input)}`;
    case "unrecognized_keys": {
      const known = knownKeysOf(issue);
      const each = issue.keys.map((key) => {
        const nearest = nearestName(key, known);
        return `unknown key ${key}${nearest ? ` (did you mean ${nearest}?)` : ""}`;
      });
      return `${each.join("; ")}${known.length > 0 ? `; the keys here are ${known.join(", ")}` : ""}`;
    }
    case "invalid_value":
      return issue.values.length === 1
        ? `must be ${JSON.stringify(issue.values[0])}`
        : `must be one of ${issue.values.map((v) => JSON.stringify(v)).join(", ")}`;
    case "too_small":
      return bound(issue, issue.minimum, "at least");
    case "too_big":
      return bound(issue, issue.maximum, "at most");
    case "invalid_format":
      return issue.format === "regex" && typeof issue.pattern === "string"
        ? `must match the pattern ${issue.pattern}`
        : `must be a valid ${issue.format}`;
    default:
      return undefined;
  }
}
