/**
 * Deterministic, collision-free address allocation for the simulated cloud: each resource prefers
 * the slot its name hashes to and probes forward past addresses already taken, so the same fleet
 * gets the same addresses run after run.
 */
import { hostAddress, parseIpv4Cidr } from "../../components/shared/cidr";
import { hashNumber } from "../mocks/seededValues";

/** RFC 5737 documentation ranges: 203.0.113.0/24 first (docs/design.md §4.2), then the other two when it is full. */
const PUBLIC_RANGES = ["203.0.113", "198.51.100", "192.0.2"];
const HOSTS_PER_RANGE = 254;

export class AddressPool {
  private readonly used: Set<string>;

  constructor(used: Iterable<string> = []) {
    this.used = new Set(used);
  }

  markUsed(address: string | undefined): void {
    if (address) this.used.add(address);
  }

  /** A public IPv4 address. Beyond 762 servers addresses repeat (the documentation ranges are that small). */
  public(key: string): string {
    const total = PUBLIC_RANGES.length * HOSTS_PER_RANGE;
    const start = hashNumber(key, HOSTS_PER_RANGE);
    for (let i = 0; i < total; i++) {
      const slot = (start + i) % total;
      const address = `${PUBLIC_RANGES[Math.floor(slot / HOSTS_PER_RANGE)]}.${1 + (slot % HOSTS_PER_RANGE)}`;
      if (!this.used.has(address)) {
        this.used.add(address);
        return address;
      }
    }
    return `${PUBLIC_RANGES[0]}.${1 + start}`;
  }

  /** A private address inside `cidr`, skipping the network address and the gateway (first host). */
  private(cidrText: string, key: string): string {
    const cidr = parseIpv4Cidr(cidrText);
    if (!cidr) throw new Error(`simulated cloud: ${JSON.stringify(cidrText)} is not an IPv4 CIDR`);
    const hosts = 2 ** (32 - cidr.prefix) - 3; // minus network, gateway, broadcast
    if (hosts < 1) throw new Error(`simulated cloud: subnet ${cidrText} has no room for servers`);
    const start = hashNumber(key, hosts);
    for (let i = 0; i < hosts; i++) {
      const address = hostAddress(cidr, 2 + ((start + i) % hosts));
      if (!this.used.has(address)) {
        this.used.add(address);
        return address;
      }
    }
    throw new Error(`simulated cloud: subnet ${cidrText} is full`);
  }
}
