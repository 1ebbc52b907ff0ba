/**
 * Collections of records by id kept as the fake Hetzner API keeps its state (a snapshot and a
 * journal of changes, fakeHcloud/fakeHcloudJournal.ts): what the fake Scaleway API and the fake
 * Robot webservice persist, so a restarted local cloud keeps its machines.
 */
import { FakeHcloudJournal } from "./fakeHcloud/fakeHcloudJournal";

type JournalEntry<Kind> = { kind: Kind; record: { id: string } } | { kind: Kind; remove: string };

export class JournaledCollections<Kinds extends { [K in keyof Kinds]: { id: string } }> {
  private readonly collections = new Map<keyof Kinds, Map<string, { id: string }>>();
  private readonly journal: FakeHcloudJournal;

  /** Loads the collections of `kinds` from `file` (what `owner` names in errors). */
  constructor(file: string, owner: string, kinds: ReadonlyArray<keyof Kinds & string>) {
    for (const kind of kinds) this.collections.set(kind, new Map());
    this.journal = new FakeHcloudJournal(file, owner);
    const { snapshot, entries } = this.journal.load<JournalEntry<keyof Kinds>>();
    const persisted = snapshot === undefined ? {} : (JSON.parse(snapshot) as Partial<Record<string, Array<{ id: string }>>>);
    for (const kind of kinds) for (const record of persisted[kind] ?? []) this.collection(kind).set(record.id, record);
    for (const entry of entries) this.apply(entry);
    if (entries.length > 0) this.compact();
  }

  private collection(kind: keyof Kinds): Map<string, { id: string }> {
    const collection = this.collections.get(kind);
    if (!collection) throw new Error(`no collection ${String(kind)}`);
    return collection;
  }

  private apply(entry: JournalEntry<keyof Kinds>): void {
    if ("remove" in entry) this.collection(entry.kind).delete(entry.remove);
    else this.collection(entry.kind).set(entry.record.id, entry.record);
  }

  private record(entry: JournalEntry<keyof Kinds>): void {
    if (this.journal.append(entry)) this.compact();
  }

  /** Folds the journal into a new snapshot (the fakes call it on close). */
  compact(): void {
    const snapshot = Object.fromEntries([...this.collections].map(([kind, records]) => [kind, [...records.values()]]));
    this.journal.compact(JSON.stringify(snapshot));
  }

  /** The records of a kind, in creation order. */
  all<K extends keyof Kinds>(kind: K): Array<Kinds[K]> {
    return [...this.collection(kind).values()] as Array<Kinds[K]>;
  }

  get<K extends keyof Kinds>(kind: K, id: string): Kinds[K] | undefined {
    return this.collection(kind).get(id) as Kinds[K] | undefined;
  }

  /** Adds or replaces (by id) a record, journalled before the request is answered. */
  put<K extends keyof Kinds>(kind: K, record: Kinds[K]): Kinds[K] {
    this.collection(kind).set(record.id, record);
    this.record({ kind, record });
    return record;
  }

  remove(kind: keyof Kinds, id: string): void {
    this.collection(kind).delete(id);
    this.record({ kind, remove: id });
  }
}
