/**
 * The fake Robot webservice's state: the account's dedicated servers (with what the machines of a
 * later part will read: the rescue activation, the resets asked for and the boot they cause) and its
 * SSH keys, kept in the data directory as the fake Hetzner API keeps its own (a snapshot and a
 * journal of changes, fakeHcloudJournal.ts), so a restarted local cloud keeps them.
 */
import { FakeHcloudJournal } from "../fakeHcloud/fakeHcloudJournal";

/** A rescue activation (POST /boot/{n}/rescue), as the fake keeps it. */
export interface FakeRobotRescue {
  os: string;
  keyboard: string;
  /** MD5 fingerprints of the uploaded keys it authorizes. */
  authorizedKeys: string[];
  /**
   * SHA-256 of the generated root password: the password itself is answered once and kept in
   * memory only (FakeRobotState.rescuePasswords), so the state file holds no secret in clear.
   */
  passwordSha256: string;
  activatedAt: number;
}

/** A reset asked for through POST /reset/{n}. */
export interface FakeRobotReset {
  type: string;
  at: number;
}

/**
 * A boot of the machine caused by a reset (or by the power button turning it on): into the rescue
 * system when one was activated (the activation is used up by that boot, as on Robot), else into
 * whatever is installed. The machines' boot cycle (part 2 of issue #38) reads this.
 */
export interface FakeRobotBoot {
  at: number;
  /** The reset type that caused it. */
  cause: string;
  into: "rescue" | "installed";
  /** The rescue it boots, when `into` is `rescue`. */
  rescue: FakeRobotRescue | null;
}

export interface FakeRobotServer {
  /** The server number as a string (the journal's record key). */
  id: string;
  serverNumber: number;
  name: string;
  product: string;
  dc: string;
  /** Main IPv4 address (a loopback address: the machines of part 2 listen there). */
  ip: string;
  /** Main IPv6 net. */
  ipv6Net: string;
  paidUntil: string;
  /** The reset types the server offers (GET /reset/{n} `type`). */
  resetTypes: string[];
  /** Whether the server's power can be read (and so `operating_status` is reported); else "not supported". */
  powerReadable: boolean;
  poweredOn: boolean;
  rescue: FakeRobotRescue | null;
  /** The last activation, active or used up (GET /boot/{n}/rescue/last). */
  lastRescue: FakeRobotRescue | null;
  /** The resets asked for, oldest first (the last 20). */
  resets: FakeRobotReset[];
  /** Epoch ms until which a manual reset (`man`) is with the technician. */
  manualResetUntil: number;
  /** The boots the resets caused, oldest first (the last 20). */
  boots: FakeRobotBoot[];
}

/** An SSH key of the account (GET /key). */
export interface FakeRobotKey {
  /** The MD5 fingerprint (the journal's record key). */
  id: string;
  name: string;
  type: string;
  size: number;
  data: string;
  createdAt: number;
}

interface Kinds {
  servers: FakeRobotServer;
  keys: FakeRobotKey;
}
type Kind = keyof Kinds;
type JournalEntry = { kind: Kind; record: { id: string } } | { kind: Kind; remove: string };

/** How many resets and boots a server keeps. */
const HISTORY = 20;

export class FakeRobotState {
  private readonly collections: { [K in Kind]: Map<string, Kinds[K]> } = { servers: new Map(), keys: new Map() };
  private readonly journal: FakeHcloudJournal;
  /** Rescue root passwords while active, by server number (never written to disk). */
  readonly rescuePasswords = new Map<number, string>();

  constructor(file: string) {
    this.journal = new FakeHcloudJournal(file, "the fake Robot webservice");
    const { snapshot, entries } = this.journal.load<JournalEntry>();
    const persisted = snapshot === undefined ? {} : (JSON.parse(snapshot) as Partial<{ [K in Kind]: Array<Kinds[K]> }>);
    for (const kind of Object.keys(this.collections) as Kind[])
      for (const record of persisted[kind] ?? []) (this.collections[kind] as Map<string, { id: string }>).set(record.id, record);
    for (const entry of entries) this.apply(entry);
    if (entries.length > 0) this.compact();
  }

  private apply(entry: JournalEntry): void {
    const collection = this.collections[entry.kind] as Map<string, { id: string }>;
    if ("remove" in entry) collection.delete(entry.remove);
    else collection.set(entry.record.id, entry.record);
  }

  private record(entry: JournalEntry): void {
    if (this.journal.append(entry)) this.compact();
  }

  /** Folds the journal into a new snapshot (the fake calls it on close). */
  compact(): void {
    const snapshot = Object.fromEntries(Object.entries(this.collections).map(([kind, records]) => [kind, [...records.values()]]));
    this.journal.compact(JSON.stringify(snapshot));
  }

  /** The servers by number. */
  servers(): FakeRobotServer[] {
    return [...this.collections.servers.values()].sort((a, b) => a.serverNumber - b.serverNumber);
  }

  server(serverNumber: number): FakeRobotServer | undefined {
    return this.collections.servers.get(String(serverNumber));
  }

  /** Adds or replaces a server, journalled before the request is answered; trims its history. */
  putServer(server: FakeRobotServer): FakeRobotServer {
    server.resets = server.resets.slice(-HISTORY);
    server.boots = server.boots.slice(-HISTORY);
    this.collections.servers.set(server.id, server);
    this.record({ kind: "servers", record: server });
    return server;
  }

  /** The keys in upload order. */
  keys(): FakeRobotKey[] {
    return [...this.collections.keys.values()].sort((a, b) => a.createdAt - b.createdAt);
  }

  key(fingerprint: string): FakeRobotKey | undefined {
    return this.collections.keys.get(fingerprint);
  }

  putKey(key: FakeRobotKey): FakeRobotKey {
    this.collections.keys.set(key.id, key);
    this.record({ kind: "keys", record: key });
    return key;
  }

  removeKey(fingerprint: string): void {
    this.collections.keys.delete(fingerprint);
    this.record({ kind: "keys", remove: fingerprint });
  }
}
