/**
 * The netplan file for an Elastic Metal private network: Scaleway delivers it as a tagged VLAN on
 * the primary NIC, so the host needs a VLAN sub-interface carrying the IPAM address. `link:` names
 * the parent by the netplan id the self-join finds in the host's merged definitions
 * (NETPLAN_PARENT_ID_PROGRAM), and the interface is `vlan<id>`, since `<nic>.<vlan>` can exceed the
 * kernel's interface-name limit. Why both: components/bootstrap/README.md (The VLAN netplan file).
 */
import { stringify } from "yaml";

export const NETPLAN_VLAN_PATH = "/etc/netplan/51-nodefleet-private-network.yaml";

/** The kernel's limit on interface names (IFNAMSIZ 16, with the terminating NUL). */
export const MAX_INTERFACE_NAME_LENGTH = 15;

export interface NetplanVlanInput {
  /** The parent's netplan id (not necessarily its kernel name), or a shell expression such as `${netplan_parent}`. */
  readonly parentId: string;
  /** VLAN id 1..4094, or a shell expression such as `${vlan_id}`. */
  readonly vlanId: number | string;
  /** The node's private address with the network's prefix, e.g. 172.16.0.5/22. */
  readonly addressCidr: string;
}

const SHELL_EXPRESSION = /^\$\{[a-z_][a-z0-9_]*\}$/;
/** netplan ids nodefleet accepts: plain YAML scalars that need no quoting. */
export const NETPLAN_ID = /^[A-Za-z0-9][A-Za-z0-9_.@-]{0,62}$/;

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

/** The VLAN sub-interface's name: `vlan<id>`, short enough for any VLAN id. */
export function vlanInterfaceName(vlanId: number | string): string {
  return `vlan${vlanId}`;
}

export function renderNetplanVlan(input: NetplanVlanInput): string {
  if (!NETPLAN_ID.test(input.parentId) && !SHELL_EXPRESSION.test(input.parentId)) {
    throw new Error(`netplan parent ${JSON.stringify(input.parentId)} is neither a netplan id nor a shell variable`);
  }
  if (typeof input.vlanId === "number") {
    assertVlanId(input.vlanId);
  } else if (!SHELL_EXPRESSION.test(input.vlanId)) {
    throw new Error(`VLAN id ${JSON.stringify(input.vlanId)} is neither a number nor a shell variable`);
  }
  if (!isIpv4WithPrefix(input.addressCidr)) {
    throw new Error(`private address ${JSON.stringify(input.addressCidr)} must be an IPv4 address with a prefix, such as 172.16.0.5/22`);
  }
  const name = vlanInterfaceName(input.vlanId);
  if (typeof input.vlanId === "number" && name.length > MAX_INTERFACE_NAME_LENGTH) {
    throw new Error(`VLAN interface name ${name} is longer than the ${MAX_INTERFACE_NAME_LENGTH} characters Linux allows`);
  }
  return stringify({
    network: {
      version: 2,
      vlans: {
        [name]: { id: input.vlanId, link: input.parentId, addresses: [input.addressCidr] },
      },
    },
  });
}

/**
 * Python 3 (netplan's CLI is Python and depends on python3-yaml, so both are on every netplan host):
 * reads `netplan get ethernets` on stdin and prints the id of the one definition that covers the
 * interface `argv[1]`, reading its MAC address and driver under the root `argv[2]`. A definition
 * with `set-name` covers the interface of that name; one without `match` covers the interface named
 * like its id; otherwise every `match` key (name and driver globs, macaddress) must fit. No or
 * several candidates: nothing on stdout, the reason on stderr.
 */
export const NETPLAN_PARENT_ID_PROGRAM = `import fnmatch, os, sys, yaml
nic, root = sys.argv[1], sys.argv[2]
defs = yaml.safe_load(sys.stdin.read() or "{}") or {}
base = root + "/sys/class/net/" + nic
try:
    with open(base + "/address") as f:
        mac = f.read().strip().lower()
except OSError:
    mac = None
try:
    driver = os.path.basename(os.readlink(base + "/device/driver"))
except OSError:
    driver = None
def globs(value):
    return [str(v) for v in (value if isinstance(value, list) else [value])]
def covers(netdef_id, d):
    if "set-name" in d:
        return str(d["set-name"]) == nic
    m = d.get("match")
    if not isinstance(m, dict):
        return netdef_id == nic
    if "name" in m and not fnmatch.fnmatchcase(nic, str(m["name"])):
        return False
    if "macaddress" in m and str(m["macaddress"]).lower() != mac:
        return False
    if "driver" in m and (driver is None or not any(fnmatch.fnmatchcase(driver, g) for g in globs(m["driver"]))):
        return False
    return True
found = [str(k) for k, d in (defs.items() if isinstance(defs, dict) else []) if covers(str(k), d if isinstance(d, dict) else {})]
if len(found) == 1:
    print(found[0])
else:
    sys.stderr.write("netplan ethernets covering %s: %s\\n" % (nic, ", ".join(found) or "none"))
`;
