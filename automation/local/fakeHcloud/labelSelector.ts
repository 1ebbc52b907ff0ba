/**
 * Hetzner Cloud label selectors, as the API evaluates `label_selector`: comma-separated
 * requirements `k=v`, `k==v`, `k!=v`, `k`, `!k`, `k in (a,b)`, `k notin (a,b)`, all of which must hold.
 */
export type LabelPredicate = (labels: Readonly<Record<string, string>>) => boolean;

class LabelSelectorError extends Error {
  override readonly name = "LabelSelectorError";
}

/** Splits on commas outside parentheses. */
function requirements(selector: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let current = "";
  for (const char of selector) {
    if (char === "(") depth += 1;
    if (char === ")") depth -= 1;
    if (char === "," && depth === 0) {
      parts.push(current.trim());
      current = "";
    } else current += char;
  }
  parts.push(current.trim());
  return parts.filter(Boolean);
}

function requirement(text: string): LabelPredicate {
  let match = /^([^\s!=]+)\s+(in|notin)\s+\(([^)]*)\)$/.exec(text);
  if (match) {
    const [, key, op, list] = match;
    const values = new Set(list!.split(",").map((v) => v.trim()));
    return op === "in" ? (l) => key! in l && values.has(l[key!]!) : (l) => !(key! in l) || !values.has(l[key!]!);
  }
  match = /^([^\s!=]+)\s*(==|=|!=)\s*([^\s,]*)$/.exec(text);
  if (match) {
    const [, key, op, value] = match;
    return op === "!=" ? (l) => l[key!] !== value : (l) => l[key!] === value;
  }
  match = /^(!?)([^\s!=()]+)$/.exec(text);
  if (match) {
    const [, not, key] = match;
    return not ? (l) => !(key! in l) : (l) => key! in l;
  }
  throw new LabelSelectorError(`invalid label selector requirement ${JSON.stringify(text)}`);
}

/** Parsed selectors: a firewall's selector is evaluated for every server rendered, on every list. */
const parsed = new Map<string, LabelPredicate>();
const PARSED_KEPT = 256;

export function parseLabelSelector(selector: string): LabelPredicate {
  const known = parsed.get(selector);
  if (known) return known;
  const predicates = requirements(selector).map(requirement);
  const predicate: LabelPredicate = (labels) => predicates.every((p) => p(labels));
  if (parsed.size >= PARSED_KEPT) parsed.delete(parsed.keys().next().value!);
  parsed.set(selector, predicate);
  return predicate;
}
