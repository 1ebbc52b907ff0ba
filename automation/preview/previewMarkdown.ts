/**
 * The Markdown of `nodefleet preview`, as posted in a pull request comment: pure formatting of a
 * PreviewReport. The hidden marker lets the workflow find and update its own comment; the size
 * cap keeps the comment under GitHub's 65,536-character body limit with room to spare.
 */
import { bookkeepingLine } from "./bookkeepingSteps";
import type { NodeReplacement, PoolRollout, PoolRow, PreviewReport, StackPreview, StepRow } from "./stackPreview";
import { IN_PLACE_CHANGES, type InPlaceChange } from "../../components/fleet/rolloutPlan";

/** Hidden in the rendered comment; the workflow looks for it to update the comment in place. */
export const PREVIEW_MARKER = "<!-- nodefleet-preview -->";
export const MAX_PREVIEW_CHARS = 60_000;

/** `12345` -> `12,345`, independent of the machine's locale. */
function groupDigits(n: number): string {
  return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
}

/** An inline code span that survives backticks in the text and `|` inside a table cell. */
function code(text: string): string {
  const cell = text.replace(/\|/g, "\\|");
  const longest = Math.max(0, ...(cell.match(/`+/g) ?? []).map((r) => r.length));
  const fence = "`".repeat(longest + 1);
  return longest > 0 ? `${fence} ${cell} ${fence}` : `${fence}${cell}${fence}`;
}

/** A fenced block whose fence is longer than any backtick run inside it. */
function fenced(text: string): string[] {
  const longest = Math.max(0, ...(text.match(/`+/g) ?? []).map((r) => r.length));
  const fence = "`".repeat(Math.max(3, longest + 1));
  return [`${fence}text`, ...text.replace(/\s+$/, "").split("\n"), fence];
}

function plural(n: number, one: string, many = `${one}s`): string {
  return `${groupDigits(n)} ${n === 1 ? one : many}`;
}

function summaryLine(stack: StackPreview): string {
  const s = stack.summary;
  return `**Changes:** ${s.create} to create, ${s.update} to update, ${s.replace} to replace, ${s.delete} to delete, ${s.same} unchanged`;
}

function countCell(row: PoolRow): string {
  const delta = row.nodesAfter - row.nodesBefore;
  const change = delta === 0 ? "" : ` (${delta > 0 ? "+" : ""}${delta})`;
  return `${row.nodesBefore} → ${row.nodesAfter}${change}`;
}

function typesCell(row: PoolRow): string {
  const list = (types: readonly string[], count: number) => (types.length > 0 ? types.join(", ") : count === 0 ? "none" : "?");
  const before = list(row.serverTypesBefore, row.nodesBefore);
  const after = list(row.serverTypesAfter, row.nodesAfter);
  return before === after ? before : `${before} → ${after}`;
}

function poolTable(pools: readonly PoolRow[]): string[] {
  if (pools.length === 0) return ["No node pool changes size or servers."];
  return [
    "| Pool | Nodes before → after | Server types |",
    "| --- | --- | --- |",
    ...pools.map(
      (row) => `| ${code(row.pool)}${row.change === "kept" ? "" : ` (${row.change})`} | ${countCell(row)} | ${typesCell(row)} |`,
    ),
  ];
}

function reason(r: NodeReplacement): string {
  if (r.forcedBy.length === 0)
    return "forced by an input Hetzner cannot change in place (location, image, server type, ssh keys or user data)";
  const inputs = r.forcedBy
    .map((input) =>
      input === "serverType" && r.serverTypeBefore && r.serverTypeAfter && r.serverTypeBefore !== r.serverTypeAfter
        ? `${code(input)} (${r.serverTypeBefore} → ${r.serverTypeAfter})`
        : code(input),
    )
    .join(", ");
  const fields = r.configFields.length > 0 ? `; config: ${r.configFields.map(code).join(", ")}` : "";
  return `forced by ${inputs}${fields}`;
}

function replacementLine(r: NodeReplacement): string {
  if (r.kind === "replace") return `- ${code(r.node)} (pool ${code(r.pool)}) is replaced, ${reason(r)}`;
  return `- ${code(r.node)} (pool ${code(r.pool)}): new server ${code(r.newName)} replaces ${code(r.oldName)}, ${reason(r)}; the new one is created before the old one is deleted`;
}

const IN_PLACE_CHANGE_LINES = {
  reinstall: "drained, then reinstalled now",
  replace: "drained, then its server released and a new one ordered now",
  "re-join": "drained, then re-joined now (new version installed in place)",
  "kubelet-config": "drained, then its kubelet config re-pushed now (kubelet restarted)",
} as const satisfies Record<InPlaceChange, string>;

function rolloutLines(r: PoolRollout): string[] {
  if ("inPlace" in r) {
    const lines = [`- pool ${code(r.pool)}: ${plural(r.remaining, "member")} still to update after this run`];
    for (const change of IN_PLACE_CHANGES) {
      const members = r.updating.filter((u) => u.change === change).map((u) => code(u.nodeId));
      if (members.length > 0) lines.push(`  - ${IN_PLACE_CHANGE_LINES[change]}: ${members.join(", ")}`);
    }
    if (r.waiting) lines.push(`  - waiting: ${r.waiting}`);
    return lines;
  }
  const lines = [`- pool ${code(r.pool)}: ${plural(r.remaining, "member")} still to replace after this run`];
  if (r.replacing.length > 0) lines.push(`  - replacing now (new server created beside the old one): ${r.replacing.map(code).join(", ")}`);
  if (r.removing.length > 0) lines.push(`  - drained and deleted (replacement Ready): ${r.removing.map(code).join(", ")}`);
  if (r.unprotecting.length > 0)
    lines.push(`  - delete protection lifted, deleted by the next run: ${r.unprotecting.map(code).join(", ")}`);
  if (r.waiting) lines.push(`  - waiting: ${r.waiting}`);
  return lines;
}

function keysCell(step: StepRow): string {
  const forcing = new Set(step.replaceKeys);
  const keys = [...step.replaceKeys, ...step.keys.filter((k) => !forcing.has(k))];
  return keys.map((k) => (forcing.has(k) ? `${code(k)} **(forces replacement)**` : code(k))).join(", ");
}

function stepTable(steps: readonly StepRow[]): string[] {
  if (steps.length === 0) return ["No resource changes."];
  return [
    "| Op | Type | Name | Changed keys |",
    "| --- | --- | --- | --- |",
    ...steps.map((s) => `| ${s.op}${s.error ? " (failed)" : ""} | ${code(s.type)} | ${code(s.name)} | ${keysCell(s)} |`),
  ];
}

function before(stack: StackPreview): string {
  if (stack.engine === "automation") {
    const fields = stack.baseRef ? ` (config fields compared with ${code(stack.baseRef)})` : "";
    return `Before: the stack's deployed state${fields}.`;
  }
  return stack.baseRef
    ? `Before: the stack config at ${code(stack.baseRef)}, applied to a scratch simulated cloud.`
    : "Before: the simulated cloud in the data directory.";
}

function stackSection(stack: StackPreview): string[] {
  const lines: string[] = [];
  lines.push(`## Stack ${code(stack.stack)}${stack.succeeded ? "" : ": preview failed"}`, "");
  if (stack.simulated) {
    lines.push("> [!NOTE]", "> Simulated engine: computed against a simulated cloud, not a real one.", "");
  }
  lines.push(`${before(stack)} After: this change's stack config.`, "");
  if (stack.error) lines.push("The preview failed:", "", ...fenced(stack.error), "");
  if (!stack.succeeded && stack.steps.length === 0) return lines;

  lines.push(summaryLine(stack), "");
  const bookkeeping = stack.bookkeeping && bookkeepingLine(stack.bookkeeping);
  if (bookkeeping) lines.push(bookkeeping, "");
  lines.push("### Nodes per pool", "", ...poolTable(stack.pools), "");
  if (stack.replacements.length > 0) {
    lines.push("### Servers replaced", "", ...stack.replacements.map(replacementLine), "");
  }
  if (stack.rollouts.length > 0) {
    lines.push("### Rolling replacement", "", ...stack.rollouts.flatMap(rolloutLines), "");
  }
  lines.push("### Steps", "", ...stepTable(stack.steps), "");
  if (stack.summary.same > 0) lines.push(`${plural(stack.summary.same, "unchanged resource")} not listed.`, "");
  const failed = stack.steps.filter((s) => s.error);
  if (failed.length > 0 && !stack.error) {
    lines.push("Failed steps:", "", ...failed.map((s) => `- ${code(s.name)}: ${s.error!.split("\n")[0]}`), "");
  }
  return lines;
}

function heading(report: PreviewReport): string[] {
  const lines = [PREVIEW_MARKER, `# nodefleet preview: project ${code(report.project)}`, ""];
  if (report.stacks.length > 1) {
    const states = report.stacks.map((s) => `${code(s.stack)} ${s.succeeded ? "ok" : "**failed**"}`);
    lines.push(`${plural(report.stacks.length, "stack")}: ${states.join(", ")}.`, "");
  }
  return lines;
}

/**
 * Cuts `full` at a line boundary so that, with the note saying how much was left out, it fits in
 * `maxChars`; closes a code fence left open by the cut.
 */
export function capMarkdown(full: string, maxChars: number = MAX_PREVIEW_CHARS): string {
  if (full.length <= maxChars) return full;
  const lines = full.split("\n");
  const note = (leftOut: number, leftLines: number) =>
    `\n> [!WARNING]\n> Preview cut: ${groupDigits(leftOut)} characters (${plural(leftLines, "line")}) left out to stay under ${groupDigits(maxChars)} characters; \`nodefleet preview --json\` has every step (the preview workflow uploads it as an artifact).\n`;
  // prefix[k]: length of the first k lines joined; fenceAfter[k]: the fence left open after them.
  const prefix = [0];
  const fenceAfter: (string | null)[] = [null];
  let open: string | null = null;
  for (const [i, line] of lines.entries()) {
    prefix.push(prefix[i] + line.length + (i > 0 ? 1 : 0));
    const fence = /^(`{3,})/.exec(line)?.[1];
    if (fence && open === null) open = fence;
    else if (open !== null && line === open) open = null;
    fenceAfter.push(open);
  }
  for (let kept = lines.length - 1; kept >= 1; kept -= 1) {
    const closing = fenceAfter[kept] === null ? "" : `\n${fenceAfter[kept]}`;
    const leftOut = full.length - prefix[kept];
    const length = prefix[kept] + closing.length + 1 + note(leftOut, lines.length - kept).length;
    if (length <= maxChars) return `${lines.slice(0, kept).join("\n")}${closing}\n${note(leftOut, lines.length - kept)}`;
  }
  return note(full.length, lines.length).slice(1);
}

export function formatPreviewMarkdown(report: PreviewReport, maxChars: number = MAX_PREVIEW_CHARS): string {
  const lines = [...heading(report)];
  for (const stack of report.stacks) lines.push(...stackSection(stack));
  return capMarkdown(`${lines.join("\n").replace(/\n+$/, "")}\n`, maxChars);
}
