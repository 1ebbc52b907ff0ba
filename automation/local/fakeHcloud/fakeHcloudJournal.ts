/**
 * How the fake Hetzner Cloud keeps its state on disk without rewriting it whole on every request:
 * a snapshot (the whole state, written atomically) and a journal of the changes since, one JSON line
 * each, appended before the request is answered. A killed local cloud loses nothing it answered
 * (the lines are in the page cache, as the snapshot's writes always were); a line torn by the kill
 * is dropped on the next start. The journal is folded into a new snapshot once it has grown as
 * large as the snapshot, so each change costs its own bytes plus an amortized share of one rewrite.
 */
import { appendFileSync, readFileSync, rmSync, truncateSync } from "node:fs";
import { writeFileAtomic } from "../../simulated/simulatedCloud";

/** The journal is folded once it exceeds the snapshot's size, and never below this. */
const MIN_COMPACT_BYTES = 1024 * 1024;

export class FakeHcloudJournal {
  readonly journalPath: string;
  private journalBytes = 0;
  private snapshotBytes = 0;
  private tailChecked = false;
  /** Snapshots written since this fake started (tests: the state is not rewritten per request). */
  snapshotWrites = 0;

  /** `owner` names the fake in errors (the fake Scaleway API keeps its state the same way). */
  constructor(
    readonly snapshotPath: string,
    private readonly owner = "the fake Hetzner API",
  ) {
    this.journalPath = `${snapshotPath}.journal`;
  }

  /** The snapshot's text (undefined when there is none) and the journal's entries, a torn last line left out. */
  load<T>(): { snapshot: string | undefined; entries: T[] } {
    const snapshot = readIfPresent(this.snapshotPath);
    this.snapshotBytes = snapshot === undefined ? 0 : Buffer.byteLength(snapshot);
    const journal = readIfPresent(this.journalPath) ?? "";
    this.journalBytes = Buffer.byteLength(journal);
    const entries: T[] = [];
    const lines = journal.split("\n");
    for (const [i, line] of lines.entries()) {
      if (line.trim() === "") continue;
      try {
        entries.push(JSON.parse(line) as T);
      } catch (error) {
        // Only the last line can be torn (a kill in the middle of an append).
        if (i === lines.length - 1) break;
        throw new Error(`${this.owner}'s journal ${this.journalPath} is corrupt at line ${i + 1}: ${(error as Error).message}`);
      }
    }
    return { snapshot, entries };
  }

  /** Records one change; true when the journal has grown enough to be folded (compact). */
  append(entry: unknown): boolean {
    if (!this.tailChecked) {
      this.tailChecked = true;
      dropTornTail(this.journalPath);
    }
    const line = `${JSON.stringify(entry)}\n`;
    appendFileSync(this.journalPath, line, { mode: 0o600 });
    this.journalBytes += Buffer.byteLength(line);
    return this.journalBytes > Math.max(MIN_COMPACT_BYTES, this.snapshotBytes);
  }

  /** Writes the whole state as the new snapshot, then drops the journal it contains. */
  compact(snapshot: string): void {
    writeFileAtomic(this.snapshotPath, snapshot);
    rmSync(this.journalPath, { force: true });
    this.snapshotBytes = Buffer.byteLength(snapshot);
    this.journalBytes = 0;
    this.snapshotWrites++;
  }
}

function readIfPresent(path: string): string | undefined {
  try {
    return readFileSync(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
}

/** Cuts a line torn by a kill off the journal's end, so the next entry starts on a line of its own. */
function dropTornTail(path: string): void {
  const text = readIfPresent(path);
  if (text === undefined || text === "" || text.endsWith("\n")) return;
  truncateSync(path, Buffer.byteLength(text.slice(0, text.lastIndexOf("\n") + 1)));
}
