/**
 * The netplan file for an Elastic Metal private network. Scaleway delivers the private network as a
 * tagged VLAN on the primary NIC (not a DHCP'd second interface), so the host needs a VLAN
 * sub-interface `<nic>.<vlan>` carrying the IPAM address. The NIC name is found on the host at run
 * time (it is `eno1` on most offers, not all), so the script passes a shell expression for it.
 */
import { stringify } from "yaml";

export const NETPLAN_VLAN_PATH = "/etc/netplan/51-nodefleet-private-network.yaml";

export interface NetplanVlanInput {
  /** The parent interface: a name such as `eno1`, or a shell expression such as `${primary_nic}`. */
  readonly link: string;
  /** VLAN id 1..4094, or a shell expression such as `${vlan_id}`. */
  readonly vlanId: number | string;
  /** The node's private address with the network's prefix, e.g. 172.16.0.5/22. */
  readonly addressCidr: string;
}

const SHELL_EXPRESSION = /^\$\{[a-z_][a-z0-9_]*\}$/;
const INTERFACE_NAME = /^[A-Za-z0-9_.-]{1,15}$/;

/** Checks an address like 172.16.0.5/22 (host bits may be set, unlike a network CIDR). */
export function isIpv4WithPrefix(value: string): boolean {
  const match = /^(\d{1,3}(?:\.\d{1,3}){3})\/(\d{1,2})$/.exec(value);
  if (!match) return false;
  const prefix = Number(match[2]);
  return prefix <= 32 && match[1].split(".").every((octet) => Number(octet) <= 255);
}

/** Throws unless the id is a usable 802.1Q VLAN id (1..4094). */
export function assertVlanId(vlanId: number): void {
  if (!Number.isInteger(vlanId) || vlanId < 1 || vlanId > 4094) throw new Error(`VLAN id ${vlanId} must be an integer from 1 to 4094`);
}

export function renderNetplanVlan(input: NetplanVlanInput): string {
  if (!INTERFACE_NAME.test(input.link) && !SHELL_EXPRESSION.test(input.link)) {
    throw new Error(`netplan link ${JSON.stringify(input.link)} is neither an interface name nor a shell variable`);
  }
  if (typeof input.vlanId === "number") {
    assertVlanId(input.vlanId);
  } else if (!SHELL_EXPRESSION.test(input.vlanId)) {
    throw new Error(`VLAN id ${JSON.stringify(input.vlanId)} is neither a number nor a shell variable`);
  }
  if (!isIpv4WithPrefix(input.addressCidr)) {
    throw new Error(`private address ${JSON.stringify(input.addressCidr)} must be an IPv4 address with a prefix, such as 172.16.0.5/22`);
  }
  const name = `${input.link}.${input.vlanId}`;
  return stringify({
    network: {
      version: 2,
      vlans: {
        [name]: { id: input.vlanId, link: input.link, addresses: [input.addressCidr] },
      },
    },
  });
}
