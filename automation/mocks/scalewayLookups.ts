/**
 * Scaleway under Pulumi's mock runtime: answers to the Elastic Metal look-ups (offers, OSes, the
 * "Private Network" option, private networks by name) and deterministic outputs for the resources
 * an Elastic Metal pool declares (server IPs and private-network VLANs, IPAM addresses inside the
 * private network's subnet). Ids are stable UUIDs derived from the look-up arguments, so renders
 * and tests are reproducible. `nodefleet render` and runUnderMocks use these by default; the
 * simulated engine answers from its own persistent cloud.
 */
import type * as pulumi from "@pulumi/pulumi";
import { hostAddress, parseIpv4Cidr } from "../../components/shared/cidr";
import { sha256Hex } from "../../components/shared/canonicalJson";
import { documentationIpv4, hashNumber, mockEd25519HostKey } from "./seededValues";
import { resolveSecrets } from "./secretValues";

export function mockUuid(seed: string): string {
  const h = sha256Hex(seed);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** A few real offer shapes (Scaleway's catalogue), enough for renders and tests. */
const OFFERS: Readonly<
  Record<string, { cores: number; threads: number; memoryGiB: number; disks: Array<{ capacity: number; type: string }> }>
> = {
  "EM-B220E-NVME": { cores: 6, threads: 12, memoryGiB: 64, disks: [{ capacity: 2_000_000_000_000, type: "NVMe" }] },
  "EM-I220E-NVME": { cores: 8, threads: 16, memoryGiB: 64, disks: [{ capacity: 1_000_000_000_000, type: "NVMe" }] },
  "EM-A115X-SSD": { cores: 4, threads: 8, memoryGiB: 32, disks: [{ capacity: 1_000_000_000_000, type: "SSD" }] },
  "EM-A610R-NVME": {
    cores: 6,
    threads: 12,
    memoryGiB: 32,
    disks: [
      { capacity: 1_024_209_543_168, type: "NVMe" },
      { capacity: 1_024_209_543_168, type: "NVMe" },
    ],
  },
  "EM-A116X-SSD": {
    cores: 4,
    threads: 4,
    memoryGiB: 32,
    disks: [
      { capacity: 1_024_209_543_168, type: "SSD" },
      { capacity: 1_024_209_543_168, type: "SSD" },
    ],
  },
};

export interface MockPrivateNetwork {
  readonly name: string;
  readonly region: string;
  readonly subnet: string;
  readonly tags?: readonly string[];
}

// Subnets of private networks seen in this process (created or looked up), by id: IPAM addresses
// are drawn from them. Deterministic: ids and subnets come from names and config.
const subnetsById = new Map<string, string>();

function rememberPrivateNetworkSubnet(id: string, subnet: string): void {
  subnetsById.set(id, subnet);
}

export function mockPrivateNetworkId(region: string, name: string): string {
  return `${region}/${mockUuid(`private-network/${region}/${name}`)}`;
}

/**
 * A failed look-up as the engine reports it: the SDK rejects an invoke with the gRPC error's
 * `details`, so a plain Error's message would arrive empty.
 */
function providerError(message: string): Error {
  return Object.assign(new Error(message), { details: message });
}

function str(value: unknown): string | undefined {
  return typeof value === "string" ? value : undefined;
}

/**
 * Answers a Scaleway look-up, or undefined for other tokens. `privateNetworks` are the networks that
 * already exist (none by default: a pool then creates its own); a look-up of any other name fails
 * as the provider does.
 */
export function scalewayLookup(
  args: pulumi.runtime.MockCallArgs,
  privateNetworks: readonly MockPrivateNetwork[] = [],
): Record<string, unknown> | undefined {
  const inputs = args.inputs as Record<string, unknown>;
  const zone = str(inputs.zone) ?? "fr-par-2";
  switch (args.token) {
    case "scaleway:elasticmetal/getOffer:getOffer": {
      const name = str(inputs.name) ?? "";
      const offer = OFFERS[name];
      if (!offer) throw providerError(`no offer found with the name ${name} in zone ${zone}`);
      const offerId = mockUuid(`offer/${zone}/${name}`);
      return {
        ...inputs,
        id: `${zone}/${offerId}`,
        offerId,
        name,
        zone,
        stock: "available",
        bandwidth: 1_000_000_000,
        commercialRange: name.split("-")[1]?.toLowerCase() ?? "",
        cpu: { name: "mock CPU", coreCount: offer.cores, threadCount: offer.threads, frequency: 3_000 },
        memories: [{ capacity: offer.memoryGiB * 1024 ** 3, type: "DDR5", frequency: 4_800, isEcc: true }],
        disks: offer.disks,
      };
    }
    case "scaleway:elasticmetal/getOs:getOs": {
      const osId = mockUuid(`os/${zone}/${str(inputs.name)}/${str(inputs.version)}`);
      return { ...inputs, id: `${zone}/${osId}`, osId, zone };
    }
    case "scaleway:elasticmetal/getOption:getOption": {
      const optionId = mockUuid(`option/${zone}/${str(inputs.name)}`);
      return { ...inputs, id: `${zone}/${optionId}`, optionId, zone, manageable: true };
    }
    case "scaleway:network/getPrivateNetwork:getPrivateNetwork": {
      const region = str(inputs.region) ?? "fr-par";
      const found = privateNetworks.find((pn) => pn.name === inputs.name && pn.region === region);
      // The provider's own words (datasource.FindExact), which the pool tells apart from failures.
      if (!found) throw providerError(`no element found with the name ${String(inputs.name)}`);
      const id = mockPrivateNetworkId(region, found.name);
      rememberPrivateNetworkSubnet(id, found.subnet);
      const cidr = parseIpv4Cidr(found.subnet);
      return {
        ...inputs,
        id,
        privateNetworkId: id.split("/")[1],
        name: found.name,
        region,
        tags: [...(found.tags ?? [])],
        ipv4Subnets: [{ subnet: found.subnet, prefixLength: cidr?.prefix ?? 0, address: found.subnet.split("/")[0] }],
        ipv6Subnets: [],
        vpcId: `${region}/${mockUuid(`vpc/${region}/default`)}`,
      };
    }
    default:
      return undefined;
  }
}

type Outputs = (args: pulumi.runtime.MockResourceArgs, id: string) => Record<string, unknown>;

/**
 * Computed outputs of the resources an Elastic Metal pool declares: Scaleway's, and the remote
 * command that reads a server's host key (its stdout is what gets pinned).
 */
export const ELASTIC_METAL_COMPUTED_OUTPUTS: Readonly<Record<string, Outputs>> = {
  "scaleway:network/privateNetwork:PrivateNetwork": (a, id) => {
    const subnet = str((a.inputs.ipv4Subnet as Record<string, unknown> | undefined)?.subnet) ?? "172.16.0.0/22";
    rememberPrivateNetworkSubnet(id, subnet);
    return { ipv4Subnet: { ...(a.inputs.ipv4Subnet as object), subnet } };
  },
  "scaleway:ipam/ip:Ip": (a) => {
    const source = ((a.inputs.sources as Array<Record<string, unknown>> | undefined) ?? [])[0] ?? {};
    const subnet = subnetsById.get(String(source.privateNetworkId)) ?? "172.16.0.0/22";
    const cidr = parseIpv4Cidr(subnet);
    if (!cidr) return {};
    // Skip the network address and Scaleway's reserved first hosts.
    const hosts = 2 ** (32 - cidr.prefix) - 8;
    const address = hostAddress(cidr, 4 + hashNumber(a.name, Math.max(hosts, 1)));
    return { address, addressCidr: `${address}/${cidr.prefix}` };
  },
  "scaleway:elasticmetal/server:Server": (a, id) => {
    const address = documentationIpv4(a.name);
    const privateNetworks = ((a.inputs.privateNetworks as Array<Record<string, unknown>> | undefined) ?? []).map((pn) => ({
      ...pn,
      vlan: 100 + hashNumber(`${id}/${String(pn.id)}`, 3800),
      status: "attached",
    }));
    return {
      ips: [{ id: mockUuid(`${id}/ip`), address, version: "IPv4", reverse: "" }],
      ipv4s: [{ id: mockUuid(`${id}/ip`), address, version: "IPv4", reverse: "" }],
      privateNetworks,
    };
  },
  "command:remote:Command": (a) => {
    const create = typeof a.inputs.create === "string" ? a.inputs.create : "";
    if (!create.includes("ssh_host_ed25519_key.pub")) return { stdout: "", stderr: "" };
    // Inputs arrive with secrets still wrapped (the connection holds the private key).
    const connection = resolveSecrets(a.inputs.connection, true) as Record<string, unknown> | undefined;
    const host = str(connection?.host) ?? a.name;
    return { stdout: `${mockEd25519HostKey(host)}\n`, stderr: "" };
  },
};
