/**
 * The fake Scaleway API's state: Elastic Metal servers, their private-network attachments, VPCs,
 * private networks and IPAM IPs, each a collection of records by UUID, kept in the data
 * directory as the fake Hetzner API keeps its own (a snapshot and a journal of changes,
 * fakeHcloudJournal.ts), so a restarted local cloud keeps its machines. Time-driven statuses
 * (delivery, install, attachment, VLAN) are derived on read from the instants recorded here.
 */
import { FakeHcloudJournal } from "../fakeHcloud/fakeHcloudJournal";

/** An Elastic Metal server as the fake keeps it (rendered in the API's shape by fakeScalewayServers.ts). */
export interface FakeEmServer {
  id: string;
  name: string;
  description: string;
  tags: string[];
  zone: string;
  offerId: string;
  createdAt: string;
  updatedAt: string;
  /** Epoch ms at which the order is delivered (`delivering` until then). */
  deliveredAt: number;
  /** Epoch ms until which a reboot runs (`starting`). */
  rebootingUntil?: number;
  install: {
    osId: string;
    hostname: string;
    sshKeyIds: string[];
    user: string;
    /** Epoch ms the install starts (delivery) and ends. */
    startsAt: number;
    endsAt: number;
  } | null;
  /** Enabled options, each with the instant it finishes enabling. */
  options: Array<{ id: string; enabledAt: number }>;
  protected: boolean;
  /** The cloud-init user data, base64 as the API carries it; null when none. */
  userData: string | null;
  ipv4: string;
  ipv6: string;
}

/** A server's attachment to a private network (baremetal private-network API). */
export interface FakeServerPrivateNetwork {
  id: string;
  serverId: string;
  privateNetworkId: string;
  zone: string;
  ipamIpIds: string[];
  /** IPs the attachment booked itself (released with it); the others were booked by the user. */
  bookedIpIds: string[];
  vlan: number;
  macAddress: string;
  createdAt: string;
  /** Epoch ms it becomes `attached`, and the VLAN is reported. */
  attachedAt: number;
  vlanAt: number;
}

export interface FakeVpc {
  id: string;
  name: string;
  region: string;
  tags: string[];
  isDefault: boolean;
  createdAt: string;
}

export interface FakePrivateNetwork {
  id: string;
  name: string;
  region: string;
  tags: string[];
  vpcId: string;
  subnets: Array<{ id: string; subnet: string; createdAt: string }>;
  createdAt: string;
  updatedAt: string;
  defaultRoutePropagationEnabled: boolean;
}

export interface FakeIpamIp {
  id: string;
  region: string;
  /** The address with its subnet's prefix length, e.g. `172.16.64.7/22`. */
  address: string;
  subnetId: string;
  privateNetworkId: string;
  tags: string[];
  resource: { type: string; id: string; macAddress: string; name: string } | null;
  createdAt: string;
  updatedAt: string;
}

interface Kinds {
  servers: FakeEmServer;
  serverPrivateNetworks: FakeServerPrivateNetwork;
  vpcs: FakeVpc;
  privateNetworks: FakePrivateNetwork;
  ips: FakeIpamIp;
}
type Kind = keyof Kinds;

type JournalEntry = { kind: Kind; record: { id: string } } | { kind: Kind; remove: string };

export class FakeScalewayState {
  private readonly collections: { [K in Kind]: Map<string, Kinds[K]> } = {
    servers: new Map(),
    serverPrivateNetworks: new Map(),
    vpcs: new Map(),
    privateNetworks: new Map(),
    ips: new Map(),
  };
  private readonly journal: FakeHcloudJournal;

  constructor(file: string) {
    this.journal = new FakeHcloudJournal(file, "the fake Scaleway API");
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

  /** The records of a kind, in creation order. */
  all<K extends Kind>(kind: K): Array<Kinds[K]> {
    return [...this.collections[kind].values()];
  }

  get<K extends Kind>(kind: K, id: string): Kinds[K] | undefined {
    return this.collections[kind].get(id);
  }

  /** Adds or replaces (by id) a record, journalled before the request is answered. */
  put<K extends Kind>(kind: K, record: Kinds[K]): Kinds[K] {
    this.collections[kind].set(record.id, record);
    this.record({ kind, record });
    return record;
  }

  remove(kind: Kind, id: string): void {
    this.collections[kind].delete(id);
    this.record({ kind, remove: id });
  }
}
