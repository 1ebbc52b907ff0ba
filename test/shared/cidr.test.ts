import { strict as assert } from "node:assert";
import fc from "fast-check";
import {
  cidrContains,
  cidrContainsAddress,
  cidrsOverlap,
  hostAddress,
  ipv6HostBitsBlock,
  isIpv6Cidr,
  lowestFreeHost,
  numberToIpv4,
  parseIpv4Cidr,
} from "../../components/shared/cidr";

describe("IPv4 CIDR", () => {
  it("parses valid CIDRs and rejects invalid ones", () => {
    assert.deepEqual(parseIpv4Cidr("10.0.0.0/16"), { network: 0x0a000000, prefix: 16 });
    for (const bad of ["10.0.0.0", "10.0.0.0/33", "256.0.0.0/8", "10.0.0.1/24", "a.b.c.d/8", ""]) {
      assert.equal(parseIpv4Cidr(bad), undefined, bad);
    }
  });

  it("recognises IPv6 CIDRs (firewall sources) and nothing else", () => {
    for (const good of ["::/0", "2001:db8::/32", "fe80::1/128", "::ffff:192.0.2.1/96"]) assert.ok(isIpv6Cidr(good), good);
    for (const bad of ["2001:db8::", "2001:db8::/129", "10.0.0.0/8", "gggg::/16", "::/", ""]) assert.ok(!isIpv6Cidr(bad), bad);
  });

  it("finds IPv6 CIDRs with host bits set and the block they would mean", () => {
    const cases: Array<[string, string | undefined]> = [
      ["2001:db8::1/64", "2001:db8::/64"],
      ["2001:db8:1:2:3:4:5:6/48", "2001:db8:1::/48"],
      ["::ffff:192.0.2.1/96", "::ffff:0:0/96"],
      ["fe80::1/127", "fe80::/127"],
      ["2001:db8::/32", undefined],
      ["::/0", undefined],
      ["fe80::1/128", undefined],
      ["fd00::ff00/120", undefined],
      ["10.0.0.1/8", undefined],
    ];
    for (const [text, block] of cases) assert.equal(ipv6HostBitsBlock(text), block, text);
  });

  it("containment is consistent with prefix arithmetic", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 0xffffffff }),
        fc.integer({ min: 0, max: 32 }),
        fc.integer({ min: 0, max: 32 }),
        (addr, a, b) => {
          const [outerPrefix, innerPrefix] = a <= b ? [a, b] : [b, a];
          const mask = (p: number) => (p === 0 ? 0 : (0xffffffff << (32 - p)) >>> 0);
          const outer = parseIpv4Cidr(`${numberToIpv4((addr & mask(outerPrefix)) >>> 0)}/${outerPrefix}`)!;
          const inner = parseIpv4Cidr(`${numberToIpv4((addr & mask(innerPrefix)) >>> 0)}/${innerPrefix}`)!;
          return cidrContains(outer, inner) && cidrContains(inner, outer) === (outerPrefix === innerPrefix);
        },
      ),
    );
  });

  it("host addresses stay inside the range", () => {
    const subnet = parseIpv4Cidr("10.0.1.0/24")!;
    assert.equal(hostAddress(subnet, 1), "10.0.1.1");
    assert.equal(hostAddress(subnet, 254), "10.0.1.254");
    assert.throws(() => hostAddress(subnet, 255), /outside/);
  });

  const mask = (p: number) => (p === 0 ? 0 : (0xffffffff << (32 - p)) >>> 0);
  const cidrOf = (addr: number, prefix: number) => parseIpv4Cidr(`${numberToIpv4((addr & mask(prefix)) >>> 0)}/${prefix}`)!;

  it("an address lies in a CIDR exactly when its /32 does, and two CIDRs overlap exactly when they share an address", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 0xffffffff }),
        fc.integer({ min: 0, max: 0xffffffff }),
        fc.integer({ min: 0, max: 32 }),
        fc.integer({ min: 0, max: 32 }),
        (x, y, p, q) => {
          const a = cidrOf(x, p);
          const b = cidrOf(y, q);
          const inside = cidrContainsAddress(a, numberToIpv4(y));
          // The smaller block's network address is shared iff they overlap.
          const [small, large] = a.prefix >= b.prefix ? [a, b] : [b, a];
          return (
            inside === ((y & mask(p)) >>> 0 === a.network) && cidrsOverlap(a, b) === cidrContainsAddress(large, numberToIpv4(small.network))
          );
        },
      ),
    );
    assert.equal(cidrContainsAddress(parseIpv4Cidr("10.0.0.0/8")!, "not an address"), false);
  });

  it("the lowest free host is the smallest usable address not taken, and none once all are taken", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 0xffffffff }),
        fc.integer({ min: 24, max: 30 }),
        fc.array(fc.integer({ min: 1, max: 254 }), { maxLength: 300 }),
        (addr, prefix, picks) => {
          const cidr = cidrOf(addr, prefix);
          const hosts = 2 ** (32 - prefix) - 2;
          const taken = new Set(picks.filter((n) => n <= hosts).map((n) => hostAddress(cidr, n)));
          const free = lowestFreeHost(cidr, taken);
          const expected = Array.from({ length: hosts }, (_, i) => hostAddress(cidr, i + 1)).find((h) => !taken.has(h));
          return free === expected;
        },
      ),
    );
    const tiny = parseIpv4Cidr("10.0.0.0/30")!;
    assert.equal(lowestFreeHost(tiny, new Set(["10.0.0.1", "10.0.0.2"])), undefined);
  });
});
