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
