/**
 * IPv4 ranges as the fake Hetzner API needs them: parse a CIDR, test containment, and pick the
 * lowest free host address of a subnet (Hetzner hands out private IPs from the bottom of a subnet,
 * the network's first address being the gateway).
 */
export interface Ipv4Range {
  /** The network address as an unsigned 32-bit integer. */
  readonly base: number;
  readonly prefix: number;
}

export function ipv4ToInt(text: string): number | undefined {
  const parts = text.split(".");
  if (parts.length !== 4 || parts.some((p) => !/^\d{1,3}$/.test(p) || Number(p) > 255)) return undefined;
  return parts.reduce((n, p) => n * 256 + Number(p), 0);
}

export function intToIpv4(n: number): string {
  return [24, 16, 8, 0].map((shift) => Math.floor(n / 2 ** shift) % 256).join(".");
}

/** `a.b.c.d/p` with the host bits zero, or undefined. */
export function parseIpv4Range(cidr: string): Ipv4Range | undefined {
  const match = /^([\d.]+)\/(\d{1,2})$/.exec(cidr);
  if (!match) return undefined;
  const base = ipv4ToInt(match[1]!);
  const prefix = Number(match[2]);
  if (base === undefined || prefix > 32 || base % rangeSize(prefix) !== 0) return undefined;
  return { base, prefix };
}

function rangeSize(prefix: number): number {
  return 2 ** (32 - prefix);
}

export function rangeContains(outer: Ipv4Range, inner: Ipv4Range): boolean {
  return inner.prefix >= outer.prefix && inner.base >= outer.base && inner.base + rangeSize(inner.prefix) <= outer.base + rangeSize(outer.prefix);
}

export function rangeContainsAddress(range: Ipv4Range, address: string): boolean {
  const n = ipv4ToInt(address);
  return n !== undefined && n >= range.base && n < range.base + rangeSize(range.prefix);
}

export function rangesOverlap(a: Ipv4Range, b: Ipv4Range): boolean {
  return a.base < b.base + rangeSize(b.prefix) && b.base < a.base + rangeSize(a.prefix);
}

/** The range's first host address (Hetzner's gateway for a network). */
export function firstHost(range: Ipv4Range): string {
  return intToIpv4(range.base + 1);
}

/** The lowest host address of `range` not in `taken` (network and broadcast excluded), or undefined. */
export function lowestFreeHost(range: Ipv4Range, taken: ReadonlySet<string>): string | undefined {
  const last = range.base + rangeSize(range.prefix) - 1;
  for (let n = range.base + 1; n < last; n++) {
    const address = intToIpv4(n);
    if (!taken.has(address)) return address;
  }
  return undefined;
}
