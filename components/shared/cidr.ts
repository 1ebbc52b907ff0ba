/**
 * IPv4 CIDR parsing and containment, enough for validating network layouts
 * (no dependency needed for four octets and a prefix), and IPv6 CIDR syntax for firewall sources.
 */
import { isIPv6 } from "node:net";

export interface Ipv4Cidr {
  /** Network address as an unsigned 32-bit integer (host bits cleared). */
  readonly network: number;
  readonly prefix: number;
}

const CIDR_PATTERN = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\/(\d{1,2})$/;

/** Parses `a.b.c.d/n`; returns undefined when it is not a valid IPv4 CIDR with host bits cleared. */
export function parseIpv4Cidr(text: string): Ipv4Cidr | undefined {
  const match = CIDR_PATTERN.exec(text);
  if (!match) return undefined;
  const octets = match.slice(1, 5).map(Number);
  const prefix = Number(match[5]);
  if (octets.some((o) => o > 255) || prefix > 32) return undefined;
  const address = ipv4ToNumber(octets);
  const network = (address & prefixMask(prefix)) >>> 0;
  if (network !== address) return undefined;
  return { network, prefix };
}

function ipv4ToNumber(octets: readonly number[]): number {
  return ((octets[0] << 24) | (octets[1] << 16) | (octets[2] << 8) | octets[3]) >>> 0;
}

export function numberToIpv4(value: number): string {
  return [24, 16, 8, 0].map((shift) => (value >>> shift) & 255).join(".");
}

function prefixMask(prefix: number): number {
  return prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
}

/** True when `inner` lies entirely inside `outer`. */
export function cidrContains(outer: Ipv4Cidr, inner: Ipv4Cidr): boolean {
  return inner.prefix >= outer.prefix && (inner.network & prefixMask(outer.prefix)) >>> 0 === outer.network;
}

/** The n-th usable host address of a CIDR (n = 1 is the first after the network address). */
export function hostAddress(cidr: Ipv4Cidr, n: number): string {
  const size = 2 ** (32 - cidr.prefix);
  if (n < 1 || n >= size - 1) throw new RangeError(`host ${n} is outside ${numberToIpv4(cidr.network)}/${cidr.prefix}`);
  return numberToIpv4(cidr.network + n);
}

/** True for `address/prefix` with an IPv6 address and a prefix of 0-128 (firewall sources may be IPv6). */
export function isIpv6Cidr(text: string): boolean {
  const match = /^([0-9A-Fa-f:.]+)\/(\d{1,3})$/.exec(text);
  return match !== null && isIPv6(match[1]) && Number(match[2]) <= 128;
}

/**
 * For an IPv6 CIDR whose address has bits set past its prefix (2001:db8::1/64), the block it would
 * mean (2001:db8::/64); undefined otherwise. Hetzner's provider refuses such a source rather than
 * guess whether the host or the block was meant.
 */
export function ipv6HostBitsBlock(text: string): string | undefined {
  if (!isIpv6Cidr(text)) return undefined;
  const [address, prefixText] = text.split("/") as [string, string];
  const bits = ipv6ToBigInt(address);
  const hostBits = 128n - BigInt(prefixText);
  const network = (bits >> hostBits) << hostBits;
  return network === bits ? undefined : `${bigIntToIpv6(network)}/${prefixText}`;
}

/** A valid IPv6 address (possibly `::`-compressed, possibly ending in dotted IPv4) as 128 bits. */
function ipv6ToBigInt(address: string): bigint {
  const groups = (part: string): string[] =>
    part === ""
      ? []
      : part.split(":").flatMap((g) => {
          if (!g.includes(".")) return [g];
          const n = ipv4ToNumber(g.split(".").map(Number));
          return [(n >>> 16).toString(16), (n & 0xffff).toString(16)];
        });
  const [head, tail] = address.includes("::") ? address.split("::") : [address, undefined];
  const left = groups(head!);
  const right = tail === undefined ? [] : groups(tail);
  const all = [...left, ...Array<string>(8 - left.length - right.length).fill("0"), ...right];
  return all.reduce((acc, g) => (acc << 16n) | BigInt(parseInt(g, 16)), 0n);
}

function bigIntToIpv6(value: bigint): string {
  const groups = Array.from({ length: 8 }, (_, i) => Number((value >> BigInt(112 - 16 * i)) & 0xffffn).toString(16));
  // Compress the longest run of zero groups, as addresses are usually written.
  let best = { start: -1, length: 0 };
  for (let i = 0; i < 8;) {
    let j = i;
    while (j < 8 && groups[j] === "0") j++;
    if (j - i > best.length && j - i > 1) best = { start: i, length: j - i };
    i = j === i ? i + 1 : j;
  }
  if (best.start < 0) return groups.join(":");
  return `${groups.slice(0, best.start).join(":")}::${groups.slice(best.start + best.length).join(":")}`;
}

/** True when the dotted IPv4 `address` lies inside `cidr`. */
export function cidrContainsAddress(cidr: Ipv4Cidr, address: string): boolean {
  const host = parseIpv4Cidr(`${address}/32`);
  return host !== undefined && cidrContains(cidr, host);
}

/** CIDR blocks either nest or are disjoint, so two overlap exactly when one contains the other. */
export function cidrsOverlap(a: Ipv4Cidr, b: Ipv4Cidr): boolean {
  return cidrContains(a, b) || cidrContains(b, a);
}

/** The lowest usable host address of `cidr` not in `taken`, or undefined when all are taken. */
export function lowestFreeHost(cidr: Ipv4Cidr, taken: ReadonlySet<string>): string | undefined {
  const hosts = 2 ** (32 - cidr.prefix) - 2;
  for (let n = 1; n <= hosts; n++) {
    const address = hostAddress(cidr, n);
    if (!taken.has(address)) return address;
  }
  return undefined;
}
