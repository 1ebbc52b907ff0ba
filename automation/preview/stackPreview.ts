/**
 * The data of one stack's preview, derived from an engine RunResult: the change summary, node
 * counts per pool before and after with the server types involved, the servers that get a new
 * generation (and the config change that forces it), and the non-trivial steps. Pure: the
 * Markdown (previewMarkdown.ts) and `--json` are two renderings of this.
 */
import type { HcloudPoolRolloutSummary } from "../../components/hcloud/hcloudNodePool";
import { IN_PLACE_CHANGES, type InPlaceChange, type InPlaceRolloutSummary } from "../../components/fleet/rolloutPlan";
import type { ChangeSummary, ResourceStep, RunResult, StepOp } from "../engine/stackEngine";
import { emptySummary } from "../engine/stackEngine";
import { maskSecretText } from "../render/maskSecrets";
import { type Bookkeeping, separateBookkeeping } from "./bookkeepingSteps";
import type { ConfigChange, FleetLayout, PoolLayout } from "./fleetLayout";

/** Resource types that are one node each. */
const SERVER_TYPES: ReadonlySet<string> = new Set(["hcloud:index/server:Server", "scaleway:elasticmetal/server:Server"]);
/** Pool components: `nodefleet:hcloud:NodePool`, `nodefleet:scaleway:ElasticMetalPool`, ... */
const POOL_COMPONENT = /^nodefleet:[^:]+:[A-Za-z]*Pool$/;
const FLEET_COMPONENT = "nodefleet:index:Fleet";
/** `<hostname>-<generation>`: see components/fleet/generationSuffix.ts. */
const GENERATION_NAME = /^(.+)-[a-z0-9]{6}$/;

/**
 * A step as the engines report it. `pool` and `serverType` are optional per-step facts an engine
 * may add (read from the resource's `nodefleet.io/pool` label and its server type input); without
 * them the pool is found by name and the server type from the configs.
 */
export type PreviewStep = ResourceStep & {
  readonly pool?: string;
  readonly serverType?: { readonly before?: string; readonly after?: string };
};

export interface PreviewContext {
  readonly project: string;
  readonly stack: string;
  readonly engine: "automation" | "simulated";
  /** The git ref whose config is the "before" (applied to a scratch simulated cloud for the simulated engine). */
  readonly baseRef?: string;
  /** Layout of the config the stack had before (the base ref's), when known. */
  readonly before?: FleetLayout;
  /** Layout of the config being previewed (the working tree's), when it could be read. */
  readonly after?: FleetLayout;
  /** Per pool, the config changes that can force new server generations (base vs working tree). */
  readonly configChanges?: Readonly<Record<string, readonly ConfigChange[]>>;
  /** Plain secret values that must never be printed (tokens from the environment, secret config). */
  readonly knownSecrets?: readonly string[];
}

export interface PoolRow {
  readonly pool: string;
  /** `added`/`removed` when the pool's component is created/deleted (or the pool is only in one config). */
  readonly change: "added" | "removed" | "kept";
  readonly nodesBefore: number;
  readonly nodesAfter: number;
  readonly serverTypesBefore: readonly string[];
  readonly serverTypesAfter: readonly string[];
}

export interface NodeReplacement {
  /** Node hostname (`<cluster>-<nodeId>`) or, for a Pulumi replace, the resource name. */
  readonly node: string;
  readonly pool: string;
  /** `generation`: a new server name is created before the old one is deleted; `replace`: Pulumi replaces in place. */
  readonly kind: "generation" | "replace";
  readonly oldName: string;
  readonly newName: string;
  /** Server inputs that force the new server (`serverType`, `userData`, ...); empty when not known. */
  readonly forcedBy: readonly string[];
  /** The config fields behind it (`pool.labels`, `cluster.k0sVersion`), when both configs are known. */
  readonly configFields: readonly string[];
  readonly serverTypeBefore?: string;
  readonly serverTypeAfter?: string;
}

export interface StepRow {
  readonly op: StepOp;
  readonly type: string;
  readonly name: string;
  readonly keys: readonly string[];
  readonly replaceKeys: readonly string[];
  readonly error?: string;
}

/** A static pool's rollout step in this run, from the program's `rollout` output: a Hetzner Cloud pool's (surge) or a bare-metal pool's (in place). */
export type PoolRollout = HcloudPoolRolloutSummary | InPlaceRolloutSummary;

/** The rollouts in a run's outputs that do something or still have members to go; malformed entries are left out. */
export function rolloutsIn(outputs: Readonly<Record<string, unknown>>): PoolRollout[] {
  const list = Array.isArray(outputs.rollout) ? (outputs.rollout as unknown[]) : [];
  const strings = (v: unknown) => (Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : []);
  return list
    .filter((r): r is Record<string, unknown> => typeof r === "object" && r !== null && typeof (r as { pool?: unknown }).pool === "string")
    .map((r): PoolRollout => {
      const common = {
        pool: String(r.pool),
        remaining: typeof r.remaining === "number" ? r.remaining : 0,
        ...(typeof r.waiting === "string" ? { waiting: r.waiting } : {}),
      };
      if (r.inPlace === true) {
        const updating = (Array.isArray(r.updating) ? (r.updating as unknown[]) : []).flatMap((u) => {
          const { nodeId, change } = (u ?? {}) as { nodeId?: unknown; change?: unknown };
          return typeof nodeId === "string" && IN_PLACE_CHANGES.includes(change as InPlaceChange)
            ? [{ nodeId, change: change as InPlaceChange }]
            : [];
        });
        return { ...common, inPlace: true, updating };
      }
      return { ...common, replacing: strings(r.replacing), removing: strings(r.removing), unprotecting: strings(r.unprotecting) };
    })
    .filter((r) =>
      "inPlace" in r
        ? r.remaining > 0 || r.updating.length > 0
        : r.remaining > 0 || r.replacing.length > 0 || r.removing.length > 0 || r.unprotecting.length > 0,
    );
}

export interface StackPreview {
  readonly project: string;
  readonly stack: string;
  readonly engine: "automation" | "simulated";
  readonly simulated: boolean;
  readonly baseRef: string | null;
  readonly succeeded: boolean;
  /** Why the preview failed (masked); null when it succeeded. */
  readonly error: string | null;
  readonly summary: ChangeSummary;
  readonly pools: readonly PoolRow[];
  readonly replacements: readonly NodeReplacement[];
  /** Static pools rolling a fleet-wide change: what this run replaces and how many members remain. */
  readonly rollouts: readonly PoolRollout[];
  /** Every step except `same` and the bookkeeping, in engine order. */
  readonly steps: readonly StepRow[];
  /** Steps that are not changes to the fleet (bookkeepingSteps.ts); absent when there are none. */
  readonly bookkeeping?: Bookkeeping;
}

export interface PreviewReport {
  readonly project: string;
  readonly succeeded: boolean;
  readonly stacks: readonly StackPreview[];
}

export function previewReport(stacks: readonly StackPreview[]): PreviewReport {
  return { project: stacks[0]?.project ?? "", succeeded: stacks.every((s) => s.succeeded), stacks };
}

const BEFORE_OPS: ReadonlySet<StepOp> = new Set(["same", "update", "replace", "delete"]);
const AFTER_OPS: ReadonlySet<StepOp> = new Set(["same", "update", "replace", "create"]);

/** Pool names by resource-name prefix, from the pool components in the steps and from the configs. */
function poolPrefixes(steps: readonly PreviewStep[], context: PreviewContext): Map<string, string> {
  const prefixes = new Map<string, string>();
  const clusterId = steps.find((s) => s.type === FLEET_COMPONENT)?.name ?? context.after?.clusterId ?? context.before?.clusterId;
  for (const step of steps) {
    if (!POOL_COMPONENT.test(step.type)) continue;
    const pool = clusterId && step.name.startsWith(`${clusterId}-`) ? step.name.slice(clusterId.length + 1) : step.name;
    prefixes.set(step.name, pool);
  }
  for (const layout of [context.after, context.before]) {
    for (const pool of layout?.pools ?? []) prefixes.set(`${layout!.clusterId}-${pool.name}`, pool.name);
  }
  return prefixes;
}

function poolOf(step: PreviewStep, prefixes: Map<string, string>): string | undefined {
  if (step.pool) return step.pool;
  let best: string | undefined;
  for (const prefix of prefixes.keys()) {
    if (step.name.startsWith(`${prefix}-`) && (!best || prefix.length > best.length)) best = prefix;
  }
  return best === undefined ? undefined : prefixes.get(best);
}

/** The one server type every member of a pool runs, when a layout says so unambiguously. */
function layoutType(layout: FleetLayout | undefined, pool: string): string | undefined {
  const found: PoolLayout | undefined = layout?.pools.find((p) => p.name === pool);
  return found && found.serverTypes.length === 1 ? found.serverTypes[0] : undefined;
}

function serverTypeBefore(step: PreviewStep, pool: string, context: PreviewContext): string | undefined {
  if (step.serverType?.before) return step.serverType.before;
  const fromBase = layoutType(context.before, pool);
  if (fromBase) return fromBase;
  // Same name, same server type: the type is part of a server's generation suffix.
  return step.op === "same" || step.op === "update" ? layoutType(context.after, pool) : undefined;
}

function serverTypeAfter(step: PreviewStep, pool: string, context: PreviewContext): string | undefined {
  // An unchanged server keeps its type, also when a rollout keeps it at its old generation.
  if (!step.serverType?.after && step.op === "same") return serverTypeBefore(step, pool, context);
  return step.serverType?.after ?? layoutType(context.after, pool);
}

const sorted = (values: Iterable<string>): string[] => [...new Set(values)].sort();

function poolOrder(context: PreviewContext, seen: readonly string[]): string[] {
  const order = [...(context.after?.pools ?? []), ...(context.before?.pools ?? [])].map((p) => p.name);
  return [...new Set([...order.filter((p) => seen.includes(p)), ...seen])];
}

export function buildStackPreview(context: PreviewContext, outcome: { result: RunResult } | { error: string }): StackPreview {
  const knownSecrets = context.knownSecrets ?? [];
  const base = {
    project: context.project,
    stack: context.stack,
    engine: context.engine,
    baseRef: context.baseRef ?? null,
  };
  if ("error" in outcome) {
    return {
      ...base,
      simulated: context.engine === "simulated",
      succeeded: false,
      error: maskSecretText(outcome.error, knownSecrets),
      summary: emptySummary(),
      pools: [],
      replacements: [],
      rollouts: [],
      steps: [],
    };
  }
  const { result } = outcome;
  const separated = separateBookkeeping(result.steps as readonly PreviewStep[]);
  const steps = separated.steps;
  const prefixes = poolPrefixes(steps, context);

  // Node counts and server types per pool.
  const rows = new Map<string, { before: number; after: number; typesBefore: string[]; typesAfter: string[]; componentOp?: StepOp }>();
  const rowFor = (pool: string) => {
    let row = rows.get(pool);
    if (!row) rows.set(pool, (row = { before: 0, after: 0, typesBefore: [], typesAfter: [] }));
    return row;
  };
  for (const step of steps) {
    if (POOL_COMPONENT.test(step.type)) {
      const pool = prefixes.get(step.name) ?? step.name;
      if (step.op !== "same" || rows.has(pool)) rowFor(pool).componentOp = step.op;
    }
    if (!SERVER_TYPES.has(step.type)) continue;
    const pool = poolOf(step, prefixes) ?? "(no pool)";
    const row = rowFor(pool);
    if (BEFORE_OPS.has(step.op)) {
      row.before += 1;
      const type = serverTypeBefore(step, pool, context);
      if (type) row.typesBefore.push(type);
    }
    if (AFTER_OPS.has(step.op)) {
      row.after += 1;
      const type = serverTypeAfter(step, pool, context);
      if (type) row.typesAfter.push(type);
    }
  }
  const pools: PoolRow[] = poolOrder(context, [...rows.keys()]).map((pool) => {
    const row = rows.get(pool)!;
    const inBefore = context.before?.pools.some((p) => p.name === pool);
    const inAfter = context.after?.pools.some((p) => p.name === pool);
    const change =
      row.componentOp === "create" || (context.before && !inBefore && inAfter)
        ? "added"
        : row.componentOp === "delete" || (context.after && inBefore && !inAfter)
          ? "removed"
          : "kept";
    return {
      pool,
      change,
      nodesBefore: row.before,
      nodesAfter: row.after,
      serverTypesBefore: sorted(row.typesBefore),
      serverTypesAfter: sorted(row.typesAfter),
    };
  });

  // New generations: a server created and one deleted for the same node of a pool.
  const replacements: NodeReplacement[] = [];
  const pending = new Map<string, PreviewStep>();
  for (const step of steps) {
    if (!SERVER_TYPES.has(step.type)) continue;
    const pool = poolOf(step, prefixes) ?? "(no pool)";
    if (step.op === "replace") {
      replacements.push({
        node: step.name,
        pool,
        kind: "replace",
        oldName: step.name,
        newName: step.name,
        forcedBy: [...(step.replaceKeys ?? [])],
        configFields: [],
        serverTypeBefore: serverTypeBefore(step, pool, context),
        serverTypeAfter: serverTypeAfter(step, pool, context),
      });
      continue;
    }
    if (step.op !== "create" && step.op !== "delete") continue;
    const host = GENERATION_NAME.exec(step.name)?.[1];
    if (!host) continue;
    const key = `${pool}\u0000${host}`;
    const other = pending.get(key);
    if (!other || other.op === step.op) {
      pending.set(key, step);
      continue;
    }
    pending.delete(key);
    const [created, deleted] = step.op === "create" ? [step, other] : [other, step];
    const changes = context.configChanges?.[pool] ?? [];
    const typeBefore = serverTypeBefore(deleted, pool, context);
    const typeAfter = serverTypeAfter(created, pool, context);
    const forcedBy = sorted(changes.map((c) => c.serverInput));
    if (typeBefore && typeAfter && typeBefore !== typeAfter && !forcedBy.includes("serverType")) forcedBy.push("serverType");
    replacements.push({
      node: host,
      pool,
      kind: "generation",
      oldName: deleted.name,
      newName: created.name,
      forcedBy: sorted(forcedBy),
      configFields: changes.map((c) => c.field),
      serverTypeBefore: typeBefore,
      serverTypeAfter: typeAfter,
    });
  }
  const poolIndex = (pool: string) => pools.findIndex((p) => p.pool === pool);
  replacements.sort((a, b) => poolIndex(a.pool) - poolIndex(b.pool) || (a.node < b.node ? -1 : a.node > b.node ? 1 : 0));

  const rowsOut: StepRow[] = steps
    .filter((s) => s.op !== "same")
    .map((s) => ({
      op: s.op,
      type: s.type,
      name: s.name,
      keys: [...s.keys],
      replaceKeys: [...(s.replaceKeys ?? [])],
      ...(s.error ? { error: maskSecretText(s.error, knownSecrets) } : {}),
    }));
  const failed = steps.filter((s) => s.error);
  return {
    ...base,
    simulated: result.simulated,
    succeeded: result.succeeded,
    error: result.succeeded
      ? null
      : maskSecretText(
          failed.length > 0 ? failed.map((s) => `${s.name}: ${s.error}`).join("\n") : "the engine reported a failed preview",
          knownSecrets,
        ),
    summary: withoutBookkeeping({ ...emptySummary(), ...result.summary }, separated.bookkeeping),
    pools,
    replacements,
    rollouts: rolloutsIn(result.outputs ?? {}),
    steps: rowsOut,
    ...(separated.bookkeeping.length > 0 ? { bookkeeping: separated.summary } : {}),
  };
}

/** The engine's counts less the bookkeeping steps, which count as unchanged. */
function withoutBookkeeping(summary: ChangeSummary, bookkeeping: readonly PreviewStep[]): ChangeSummary {
  const out = { ...summary };
  for (const step of bookkeeping) {
    out[step.op] = Math.max(0, out[step.op] - 1);
    out.same += 1;
  }
  return out;
}
