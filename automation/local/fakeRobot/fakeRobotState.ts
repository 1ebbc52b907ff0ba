/**
 * The fake Robot webservice's state: the account's dedicated servers (with what the machines of a
 * later part will read: the rescue activation, the resets asked for and the boot they cause) and its
 * SSH keys, kept in the data directory as the fake Hetzner API keeps its own (a snapshot and a
 * journal of changes, journaledCollections.ts), so a restarted local cloud keeps them.
 */
import { JournaledCollections } from "../journaledCollections";

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
  /**
   * False when the reset did not take (the machines' knob, FakeRobotMachineHooks.takes): the box came
   * back into the OS it ran, and a pending rescue activation stays pending. Absent: it took.
   */
  took?: boolean;
}

export interface FakeRobotServer {
  /** The server number as a string (the journal's record key). */
  id: string;
  serverNumber: number;
  name: string;
  product: string;
  dc: string;
  /** Main IPv4 address (a loopback address: the machines of part 2 listen there); null for a server ordered without IPv4. */
  ip: string | null;
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
const HISTORY = 20;

export class FakeRobotState {
  private readonly records: JournaledCollections<Kinds>;
  /** Rescue root passwords while active, by server number (never written to disk). */
  readonly rescuePasswords = new Map<number, string>();

  constructor(file: string) {
    this.records = new JournaledCollections<Kinds>(file, "the fake Robot webservice", ["servers", "keys"]);
  }

  /** Folds the journal into a new snapshot (the fake calls it on close). */
  compact(): void {
    this.records.compact();
  }

  /** The servers by number. */
  servers(): FakeRobotServer[] {
    return this.records.all("servers").sort((a, b) => a.serverNumber - b.serverNumber);
  }

  server(serverNumber: number): FakeRobotServer | undefined {
    return this.records.get("servers", String(serverNumber));
  }

  /** Adds or replaces a server, journalled before the request is answered; trims its history. */
  putServer(server: FakeRobotServer): FakeRobotServer {
    server.resets = server.resets.slice(-HISTORY);
    server.boots = server.boots.slice(-HISTORY);
    return this.records.put("servers", server);
  }

  /** The keys in upload order. */
  keys(): FakeRobotKey[] {
    return this.records.all("keys").sort((a, b) => a.createdAt - b.createdAt);
  }

  key(fingerprint: string): FakeRobotKey | undefined {
    return this.records.get("keys", fingerprint);
  }

  putKey(key: FakeRobotKey): FakeRobotKey {
    return this.records.put("keys", key);
  }

  removeKey(fingerprint: string): void {
    this.records.remove("keys", fingerprint);
  }
}
