/**
 * The simulated cloud's persistent state, in `<dataDir>/simulated-cloud/`: `stacks/<stack>.json`,
 * the resources each stack's runs created (a snapshot, written atomically), and
 * `stacks/<stack>.journal`, one JSON line per step applied since, so a run killed mid-way leaves
 * exactly the steps it applied; `orphans.json`, servers "at the provider" that belong to no stack
 * (injected by tests); `deleted.json`, ids deleted out-of-band. `SimulatedCloud` is the read side
 * the scaling API polls and the hook for out-of-band changes. Nothing here talks to any cloud.
 */
import { randomUUID } from "node:crypto";
import { appendFileSync, existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, truncateSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { mapSecrets } from "../mocks/secretValues";
import { sha256Hex } from "../../components/shared/canonicalJson";
import { numericId } from "../mocks/seededValues";

/** One resource as the simulated cloud records it. */
export interface SimResource {
  readonly urn: string;
  readonly type: string;
  readonly name: string;
  readonly custom: boolean;
  readonly id?: string;
  /** Inputs as declared, with every secret replaced by a hash of its value (never stored in clear). */
  readonly inputs: Record<string, unknown>;
  /** Provider-computed outputs only (addresses, ids, random results), not the echoed inputs. */
  readonly outputs: Record<string, unknown>;
  readonly createdAt: string;
  readonly updatedAt: string;
  /** Servers: the moment the server counts as running (creation + boot delay). */
  readonly runningAt?: string;
  /** Bumped on every replacement, so a replacement gets fresh ids and addresses. */
  readonly generation: number;
}

export interface StackState {
  readonly stack: string;
  /** Number of `up` runs started, part of the seeded failure draw. */
  runs: number;
  /** Insertion order is creation order (deletes run in reverse). */
  readonly resources: Map<string, SimResource>;
  outputs: Record<string, unknown>;
}

type JournalEntry =
  | { readonly t: "put"; readonly r: SimResource }
  | { readonly t: "del"; readonly urn: string }
  | { readonly t: "outputs"; readonly outputs: Record<string, unknown> }
  | { readonly t: "runs"; readonly runs: number };

/** The shape a journal line must have to be applied (valid JSON of another shape is damage too). */
const journalEntrySchema = z.discriminatedUnion("t", [
  z.object({
    t: z.literal("put"),
    r: z.looseObject({
      urn: z.string(),
      type: z.string(),
      name: z.string(),
      inputs: z.record(z.string(), z.unknown()),
      outputs: z.record(z.string(), z.unknown()),
    }),
  }),
  z.object({ t: z.literal("del"), urn: z.string() }),
  z.object({ t: z.literal("outputs"), outputs: z.record(z.string(), z.unknown()) }),
  z.object({ t: z.literal("runs"), runs: z.number().int().nonnegative() }),
]);

interface StackSnapshot {
  readonly version: 1;
  readonly stack: string;
  readonly runs: number;
  readonly resources: SimResource[];
  readonly outputs: Record<string, unknown>;
}

const STACK_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;

export function assertStackName(stack: string): void {
  if (!STACK_NAME.test(stack)) throw new Error(`invalid stack name ${JSON.stringify(stack)}: letters, digits, '.', '_' and '-' only`);
}

export function simulatedCloudDir(dataDir: string): string {
  return join(dataDir, "simulated-cloud");
}

/** Writes a file so readers see the old or the new content, never a torn one. */
export function writeFileAtomic(path: string, content: string, mode = 0o600): void {
  const temp = `${path}.${process.pid}.${randomUUID().slice(0, 8)}.tmp`;
  writeFileSync(temp, content, { mode });
  renameSync(temp, path);
}

function readJson<T>(path: string, fallback: T): T {
  try {
    return JSON.parse(readFileSync(path, "utf8")) as T;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return fallback;
    throw new Error(`simulated cloud state ${path} is unreadable: ${(error as Error).message}`);
  }
}

/** Secrets stay comparable (a changed secret is a changed input) without being written down. */
export function hashSecrets(value: unknown): unknown {
  return mapSecrets(value, (secret) => ({ __secretSha256: sha256Hex(JSON.stringify(secret.value ?? null)) }));
}

/** The state file pair (snapshot + journal) of one stack. One writer at a time (see stackLock.ts). */
export class StackStateFile {
  readonly snapshotPath: string;
  readonly journalPath: string;

  constructor(
    readonly dataDir: string,
    readonly stack: string,
  ) {
    assertStackName(stack);
    const dir = join(simulatedCloudDir(dataDir), "stacks");
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    this.snapshotPath = join(dir, `${stack}.json`);
    this.journalPath = join(dir, `${stack}.journal`);
  }

  load(): StackState {
    const snapshot = readJson<StackSnapshot | undefined>(this.snapshotPath, undefined);
    const state: StackState = {
      stack: this.stack,
      runs: snapshot?.runs ?? 0,
      resources: new Map((snapshot?.resources ?? []).map((r) => [r.urn, r])),
      outputs: snapshot?.outputs ?? {},
    };
    let journal = "";
    try {
      journal = readFileSync(this.journalPath, "utf8");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
    }
    for (const entry of parseJournal(journal, this.journalPath)) applyEntry(state, entry);
    return state;
  }

  private tailChecked = false;

  /** Records one applied step before the run moves on (in the page cache: a killed process loses nothing; a power loss may, this is the demo engine). */
  append(entry: JournalEntry): void {
    if (!this.tailChecked) {
      this.tailChecked = true;
      dropTornTail(this.journalPath);
    }
    appendFileSync(this.journalPath, `${JSON.stringify(entry)}\n`, { mode: 0o600 });
  }

  /** Folds the journal into a new snapshot. Replaying the journal again is harmless (idempotent). */
  compact(state: StackState): void {
    const snapshot: StackSnapshot = {
      version: 1,
      stack: state.stack,
      runs: state.runs,
      resources: [...state.resources.values()],
      outputs: state.outputs,
    };
    writeFileAtomic(this.snapshotPath, JSON.stringify(snapshot));
    rmSync(this.journalPath, { force: true });
  }
}

export class JournalCorruptError extends Error {
  override readonly name = "JournalCorruptError";
  constructor(
    readonly path: string,
    readonly line: number,
    readonly following: number,
  ) {
    super(
      `simulated cloud journal ${path} is damaged: line ${line} is not a journal entry and ${following} entr${following === 1 ? "y follows" : "ies follow"} it, ` +
        "so the steps applied after it cannot be trusted; restore the data directory from a backup, " +
        `or remove line ${line} by hand once you have checked which steps it recorded, then start again`,
    );
  }
}

/**
 * The journal's entries. Only the last line may be unreadable, and only when it lacks its newline
 * (a write torn by a crash: the step never completed). An unreadable line with entries after it is
 * damage, not a crash, and skipping it (or everything after it) would silently lose applied steps.
 */
function parseJournal(text: string, path: string): JournalEntry[] {
  const lines = text.split("\n");
  const entries: JournalEntry[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (line.trim() === "") continue;
    try {
      entries.push(journalEntrySchema.parse(JSON.parse(line)) as JournalEntry);
    } catch {
      const torn = i === lines.length - 1; // no newline after it
      if (torn) break;
      throw new JournalCorruptError(path, i + 1, lines.slice(i + 1).filter((l) => l.trim() !== "").length);
    }
  }
  return entries;
}

/** Cuts a line torn by a crash off the journal's end, so the next entry starts on a line of its own. */
function dropTornTail(path: string): void {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return;
    throw error;
  }
  if (text === "" || text.endsWith("\n")) return;
  truncateSync(path, Buffer.byteLength(text.slice(0, text.lastIndexOf("\n") + 1)));
}

function applyEntry(state: StackState, entry: JournalEntry): void {
  switch (entry.t) {
    case "put":
      state.resources.set(entry.r.urn, entry.r);
      break;
    case "del":
      state.resources.delete(entry.urn);
      break;
    case "outputs":
      state.outputs = entry.outputs;
      break;
    case "runs":
      state.runs = entry.runs;
      break;
  }
}

export type ServerProvider = "hcloud" | "scaleway";

export const SERVER_TYPES: Readonly<Record<string, ServerProvider>> = {
  "hcloud:index/server:Server": "hcloud",
  "scaleway:elasticmetal/server:Server": "scaleway",
};

/** A server as a provider's API would list it. */
export interface SimulatedServer {
  readonly id: string;
  readonly name: string;
  readonly provider: ServerProvider;
  /** hcloud server type or Elastic Metal offer. */
  readonly serverType: string;
  /** hcloud location or Scaleway zone. */
  readonly location: string;
  readonly labels: Readonly<Record<string, string>>;
  /** `initializing` until the boot delay has passed, then `running`. */
  readonly status: "initializing" | "running";
  readonly createdAt: string;
  readonly runningAt: string;
  readonly ipv4?: string;
  readonly privateIpv4?: string;
  /** The stack whose state holds it; absent for orphans. */
  readonly stack?: string;
  readonly urn?: string;
}

/** Scaleway has tags, not labels: `key=value` tags are read as labels. */
function labelsOf(resource: SimResource): Record<string, string> {
  const labels = resource.inputs.labels;
  if (labels && typeof labels === "object" && !Array.isArray(labels)) {
    return Object.fromEntries(Object.entries(labels).map(([k, v]) => [k, String(v)]));
  }
  const tags = resource.inputs.tags;
  if (Array.isArray(tags)) {
    return Object.fromEntries(
      tags
        .filter((t): t is string => typeof t === "string")
        .map((t) => (t.includes("=") ? [t.slice(0, t.indexOf("=")), t.slice(t.indexOf("=") + 1)] : [t, ""])),
    );
  }
  return {};
}

function firstString(...values: unknown[]): string {
  for (const v of values) if (typeof v === "string" && v !== "") return v;
  return "";
}

/**
 * `privateIpv4` comes from the server's own `networks` or, when it joins through a separate
 * ServerNetwork resource, from that attachment (pass it in).
 */
function serverFromResource(
  resource: SimResource,
  stack: string | undefined,
  now: number,
  privateIpv4?: string,
): SimulatedServer | undefined {
  const provider = SERVER_TYPES[resource.type];
  if (!provider || !resource.id) return undefined;
  const runningAt = resource.runningAt ?? resource.createdAt;
  const i = resource.inputs;
  const o = resource.outputs;
  return {
    id: resource.id,
    name: firstString(i.name, i.hostname, resource.name),
    provider,
    serverType: firstString(i.serverType, o.offerName, i.offer),
    location: firstString(i.location, i.datacenter, i.zone),
    labels: labelsOf(resource),
    status: Date.parse(runningAt) <= now ? "running" : "initializing",
    createdAt: resource.createdAt,
    runningAt,
    ipv4:
      firstString(o.ipv4Address, Array.isArray(o.ips) ? (o.ips[0] as Record<string, unknown> | undefined)?.address : undefined) ||
      undefined,
    privateIpv4: firstString(o.privateIpv4, privateIpv4) || undefined,
    stack,
    urn: stack ? resource.urn : undefined,
  };
}

/** hcloud label selector: `k=v`, `k!=v`, `k`, `!k`, comma-separated (all must hold); or an object of k=v. */
export function matchesSelector(
  labels: Readonly<Record<string, string>>,
  selector: string | Readonly<Record<string, string>> | undefined,
): boolean {
  if (selector === undefined) return true;
  if (typeof selector !== "string") return Object.entries(selector).every(([k, v]) => labels[k] === v);
  return selector
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "")
    .every((term) => {
      if (term.startsWith("!")) return !(term.slice(1) in labels);
      const ne = term.indexOf("!=");
      if (ne > 0) return labels[term.slice(0, ne)] !== term.slice(ne + 2);
      const eq = term.indexOf("=");
      if (eq > 0)
        return (
          labels[term.slice(0, eq).trim()] ===
          term
            .slice(eq + 1)
            .replace(/^=/, "")
            .trim()
        );
      return term in labels;
    });
}

export interface OrphanServerSpec {
  readonly name: string;
  readonly labels?: Readonly<Record<string, string>>;
  readonly serverType?: string;
  readonly location?: string;
  readonly provider?: ServerProvider;
  /** Creation time (default now); orphan reclaimers compare it with their grace period. */
  readonly createdAt?: Date;
}

/** Read side of the simulated cloud, plus the out-of-band changes a real provider console allows. */
export class SimulatedCloud {
  readonly dir: string;

  constructor(readonly dataDir: string) {
    this.dir = simulatedCloudDir(dataDir);
  }

  private get orphansPath(): string {
    return join(this.dir, "orphans.json");
  }

  private get deletedPath(): string {
    return join(this.dir, "deleted.json");
  }

  /** Stacks that have state in this data directory. */
  stacks(): string[] {
    let names: string[] = [];
    try {
      names = readdirSync(join(this.dir, "stacks"));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
    }
    const stacks = new Set(
      names.filter((n) => n.endsWith(".json") || n.endsWith(".journal")).map((n) => n.replace(/\.(json|journal)$/, "")),
    );
    return [...stacks].filter((s) => STACK_NAME.test(s)).sort();
  }

  /** The stack's resources as of its last applied step (including a run in progress). */
  stackResources(stack: string): SimResource[] {
    return [...new StackStateFile(this.dataDir, stack).load().resources.values()];
  }

  stackOutputs(stack: string): Record<string, unknown> {
    return new StackStateFile(this.dataDir, stack).load().outputs;
  }

  deletedIds(): Set<string> {
    return new Set(readJson<string[]>(this.deletedPath, []));
  }

  private orphans(): SimResource[] {
    return readJson<SimResource[]>(this.orphansPath, []);
  }

  /** Every resource that exists at the "provider": stacks' resources and orphans, minus out-of-band deletions. */
  allResources(): Array<{ stack?: string; resource: SimResource }> {
    const deleted = this.deletedIds();
    const all: Array<{ stack?: string; resource: SimResource }> = [];
    for (const stack of this.stacks()) {
      for (const resource of this.stackResources(stack)) all.push({ stack, resource });
    }
    for (const resource of this.orphans()) all.push({ resource });
    return all.filter((e) => !e.resource.id || !deleted.has(e.resource.id));
  }

  /** Servers of every provider, optionally filtered by a label selector (hcloud syntax or an object). */
  listServers(selector?: string | Readonly<Record<string, string>>, now: number = Date.now()): SimulatedServer[] {
    const all = this.allResources();
    const attachments = new Map<string, string>();
    for (const { resource } of all) {
      if (resource.type === "hcloud:index/serverNetwork:ServerNetwork" && typeof resource.outputs.ip === "string") {
        attachments.set(String(resource.inputs.serverId), resource.outputs.ip);
      }
    }
    return all
      .map((e) => serverFromResource(e.resource, e.stack, now, e.resource.id ? attachments.get(e.resource.id) : undefined))
      .filter((s): s is SimulatedServer => s !== undefined && matchesSelector(s.labels, selector));
  }

  getServer(id: string, now: number = Date.now()): SimulatedServer | undefined {
    return this.listServers(undefined, now).find((s) => s.id === id);
  }

  /** A server no stack knows (what a crash between create and state write would leave behind). */
  injectOrphanServer(spec: OrphanServerSpec): SimulatedServer {
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    const provider = spec.provider ?? "hcloud";
    const type = provider === "hcloud" ? "hcloud:index/server:Server" : "scaleway:elasticmetal/server:Server";
    const orphans = this.orphans();
    const seed = `orphan/${spec.name}/${orphans.length}`;
    const created = (spec.createdAt ?? new Date()).toISOString();
    const resource: SimResource = {
      urn: `orphan::${spec.name}::${orphans.length}`,
      type,
      name: spec.name,
      custom: true,
      id: provider === "hcloud" ? numericId(seed) : `${spec.location ?? "fr-par-2"}/${sha256Hex(seed).slice(0, 8)}`,
      inputs:
        provider === "hcloud"
          ? { name: spec.name, labels: { ...spec.labels }, serverType: spec.serverType ?? "cpx21", location: spec.location ?? "hel1" }
          : {
              name: spec.name,
              tags: Object.entries(spec.labels ?? {}).map(([k, v]) => `${k}=${v}`),
              offer: spec.serverType ?? "EM-A115X-SSD",
              zone: spec.location ?? "fr-par-2",
            },
      outputs: {},
      createdAt: created,
      updatedAt: created,
      runningAt: created,
      generation: 0,
    };
    writeFileAtomic(this.orphansPath, JSON.stringify([...orphans, resource]));
    return serverFromResource(resource, undefined, Date.now())!;
  }

  /** Deletes a server at the "provider" (not in any stack's state: a refresh notices). Not found is success. */
  deleteServer(id: string): boolean {
    const exists = this.listServers().some((s) => s.id === id);
    if (!exists) return false;
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    const orphans = this.orphans();
    const remaining = orphans.filter((r) => r.id !== id);
    if (remaining.length !== orphans.length) {
      writeFileAtomic(this.orphansPath, JSON.stringify(remaining));
    } else {
      writeFileAtomic(this.deletedPath, JSON.stringify([...this.deletedIds(), id]));
    }
    return true;
  }

  /** True when nothing was ever simulated in this data directory. */
  isEmpty(): boolean {
    return !existsSync(this.dir) || this.stacks().length === 0;
  }
}
