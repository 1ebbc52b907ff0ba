/**
 * Every engine run of a cluster, persisted so `GET /operations` survives restarts. A run still
 * marked `running` when the service starts was cut short by a crash and is marked `abandoned`.
 */
import type Database from "better-sqlite3";
import type { ChangeSummary } from "../engine/stackEngine";
import type { Db } from "./database";
import { walSyncOf } from "./walSync";

export type OperationKind = "up" | "refresh" | "preview";
export type OperationResult = "running" | "succeeded" | "failed" | "abandoned";

export interface Operation {
  readonly id: number;
  readonly clusterId: string;
  readonly kind: OperationKind;
  readonly startedAt: string;
  readonly finishedAt?: string;
  readonly result: OperationResult;
  readonly summary?: ChangeSummary;
  /** Node ids whose claims the run acted on. */
  readonly nodes: string[];
  readonly error?: string;
  /** Free-form facts (e.g. the resources a preview guard refused). */
  readonly details?: unknown;
}

/** An operations row as both backends read it (PostgreSQL's has a shard column too, left out). */
export interface OperationRow {
  id: number;
  cluster_id: string;
  kind: OperationKind;
  started_at: string;
  finished_at: string | null;
  result: OperationResult;
  summary_json: string | null;
  nodes_json: string;
  error: string | null;
  details_json: string | null;
}

export function operationFromRow(row: OperationRow): Operation {
  return {
    id: row.id,
    clusterId: row.cluster_id,
    kind: row.kind,
    startedAt: row.started_at,
    ...(row.finished_at !== null ? { finishedAt: row.finished_at } : {}),
    result: row.result,
    ...(row.summary_json !== null ? { summary: JSON.parse(row.summary_json) as ChangeSummary } : {}),
    nodes: JSON.parse(row.nodes_json) as string[],
    ...(row.error !== null ? { error: row.error } : {}),
    ...(row.details_json !== null ? { details: JSON.parse(row.details_json) as unknown } : {}),
  };
}

/** How a run's operation ended. */
export interface OperationOutcome {
  readonly result: Exclude<OperationResult, "running">;
  readonly summary?: ChangeSummary;
  readonly error?: string;
  readonly details?: unknown;
}

/** An outcome as both backends store it: result, summary_json, error, details_json. */
export function finishedColumns(outcome: OperationOutcome): [string, string | null, string | null, string | null] {
  return [
    outcome.result,
    outcome.summary ? JSON.stringify(outcome.summary) : null,
    outcome.error ?? null,
    outcome.details === undefined ? null : JSON.stringify(outcome.details),
  ];
}

export class OperationLog {
  constructor(
    private readonly db: Db,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /**
   * A write, durable when it returns (walSync.ts): an operation recorded as started or finished
   * survives a power loss, as the claims it was written beside do.
   */
  private write(sql: string, ...params: unknown[]): Database.RunResult {
    return walSyncOf(this.db).writeDurably(() => this.db.prepare(sql).run(...params));
  }

  start(clusterId: string, kind: OperationKind, nodes: readonly string[]): number {
    const info = this.write(
      "INSERT INTO operations (cluster_id, kind, started_at, result, nodes_json) VALUES (?, ?, ?, 'running', ?)",
      clusterId,
      kind,
      this.now().toISOString(),
      JSON.stringify(nodes),
    );
    return Number(info.lastInsertRowid);
  }

  /**
   * A run opened as the guard's preview whose guard turned out unneeded (its fingerprint is
   * unchanged): before any engine call, it becomes the up it is.
   */
  becomeUp(id: number): void {
    this.write("UPDATE operations SET kind = 'up' WHERE id = ? AND result = 'running'", id);
  }

  finish(id: number, outcome: OperationOutcome): void {
    this.write(
      "UPDATE operations SET finished_at = ?, result = ?, summary_json = ?, error = ?, details_json = ? WHERE id = ?",
      this.now().toISOString(),
      ...finishedColumns(outcome),
      id,
    );
  }

  /** Marks runs cut short by a crash; returns how many. */
  abandonUnfinished(reason: string): number {
    return this.write(
      "UPDATE operations SET result = 'abandoned', finished_at = ?, error = ? WHERE result = 'running'",
      this.now().toISOString(),
      reason,
    ).changes;
  }

  list(clusterId: string, limit = 500): Operation[] {
    const rows = this.db
      .prepare("SELECT * FROM operations WHERE cluster_id = ? ORDER BY id DESC LIMIT ?")
      .all(clusterId, limit) as OperationRow[];
    return rows.map(operationFromRow);
  }

  get(id: number): Operation | undefined {
    const row = this.db.prepare("SELECT * FROM operations WHERE id = ?").get(id) as OperationRow | undefined;
    return row && operationFromRow(row);
  }
}
