import { strict as assert } from "node:assert";
import fc from "fast-check";
import { cidrContains, hostAddress, isIpv6Cidr, numberToIpv4, parseIpv4Cidr } from "../../components/shared/cidr";

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

  it("containment is consistent with prefix arithmetic", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 0xffffffff }), fc.integer({ min: 0, max: 32 }), fc.integer({ min: 0, max: 32 }), (addr, a, b) => {
        const [outerPrefix, innerPrefix] = a <= b ? [a, b] : [b, a];
        const mask = (p: number) => (p === 0 ? 0 : (0xffffffff << (32 - p)) >>> 0);
        const outer = parseIpv4Cidr(`${numberToIpv4((addr & mask(outerPrefix)) >>> 0)}/${outerPrefix}`)!;
        const inner = parseIpv4Cidr(`${numberToIpv4((addr & mask(innerPrefix)) >>> 0)}/${innerPrefix}`)!;
        return cidrContains(outer, inner) && cidrContains(inner, outer) === (outerPrefix === innerPrefix);
      }),
    );
  });

  it("host addresses stay inside the range", () => {
    const subnet = parseIpv4Cidr("10.0.1.0/24")!;
    assert.equal(hostAddress(subnet, 1), "10.0.1.1");
    assert.equal(hostAddress(subnet, 254), "10.0.1.254");
    assert.throws(() => hostAddress(subnet, 255), /outside/);
  });
});
