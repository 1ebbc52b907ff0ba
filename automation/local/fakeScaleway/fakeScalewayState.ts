/**
 * The fake Scaleway API's state: Elastic Metal servers, their private-network attachments, VPCs,
 * private networks, IPAM IPs and IAM SSH keys, each a collection of records by UUID, kept in the data
 * directory as the fake Hetzner API keeps its own (a snapshot and a journal of changes,
 * fakeHcloudJournal.ts), so a restarted local cloud keeps its machines. Time-driven statuses
 * (delivery, install, attachment, VLAN) are derived on read from the instants recorded here.
 */
import { JournaledCollections } from "../journaledCollections";

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

/** An IAM SSH key (iam/v1alpha1): what an install's `ssh_key_ids` name; its machine lets the key in. */
export interface FakeSshKey {
  id: string;
  name: string;
  /** The key in OpenSSH format (`type base64`, comment kept as given). */
  publicKey: string;
  /** Scaleway's form: `<bits> MD5:<hex pairs> (<type>)`. */
  fingerprint: string;
  disabled: boolean;
  createdAt: string;
  updatedAt: string;
}

interface Kinds {
  servers: FakeEmServer;
  serverPrivateNetworks: FakeServerPrivateNetwork;
  vpcs: FakeVpc;
  privateNetworks: FakePrivateNetwork;
  ips: FakeIpamIp;
  sshKeys: FakeSshKey;
}
/** The fake's collections, by kind (journaledCollections.ts). */
export class FakeScalewayState extends JournaledCollections<Kinds> {
  constructor(file: string) {
    super(file, "the fake Scaleway API", ["servers", "serverPrivateNetworks", "vpcs", "privateNetworks", "ips", "sshKeys"]);
  }
}
