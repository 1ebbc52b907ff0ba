import { strict as assert } from "node:assert";
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse } from "yaml";
import { MAX_INTERFACE_NAME_LENGTH, NETPLAN_VLAN_PATH, renderNetplanVlan, vlanInterfaceName } from "../../components/bootstrap/netplanVlan";
import { renderSelfJoinScript } from "../../components/bootstrap/selfJoinScript";
import { netplanBinary, netplanGenerate } from "../support/externalLinters";
import { FakeNode } from "../support/nodeShims";
import { k0sSelfJoinInput } from "../support/selfJoinInput";

const MAC = "9c:b6:54:bb:6c:64";

/** The host netplan layouts an Elastic Metal Ubuntu server comes with, and the primary NIC's kernel name. */
const LAYOUTS: ReadonlyArray<{ name: string; nic: string; file: string; yaml: string; netplanId: string }> = [
  {
    name: "installer: static public address under the kernel name",
    nic: "eno1",
    file: "01-netcfg.yaml",
    netplanId: "eno1",
    yaml: `network:
  version: 2
  renderer: networkd
  ethernets:
    eno1:
      addresses: [51.159.0.10/24]
      routes: [{to: default, via: 51.159.0.1}]
      nameservers: {addresses: [51.159.47.28, 51.159.47.26]}
`,
  },
  {
    name: "cloud-init: matched by MAC address, set-name to the kernel name",
    nic: "eno1",
    file: "50-cloud-init.yaml",
    netplanId: "eno1",
    yaml: `network:
  version: 2
  ethernets:
    eno1:
      match: {macaddress: "${MAC}"}
      set-name: eno1
      dhcp4: true
`,
  },
  {
    name: "an id that is not the kernel name, renamed by set-name",
    nic: "eno1",
    file: "50-cloud-init.yaml",
    netplanId: "public",
    yaml: `network:
  version: 2
  ethernets:
    public:
      match: {macaddress: "${MAC}"}
      set-name: eno1
      dhcp4: true
`,
  },
  {
    name: "an id matched by MAC only, on a NIC whose <nic>.<vlan> name would be over 15 characters",
    nic: "enp129s0f0np0",
    file: "50-cloud-init.yaml",
    netplanId: "primary",
    yaml: `network:
  version: 2
  ethernets:
    primary:
      match: {macaddress: "${MAC}"}
      dhcp4: true
    unused:
      match: {macaddress: "9c:b6:54:bb:6c:65"}
      dhcp4: false
`,
  },
];

/** A fake node whose `ip` reports `nic` as the default route's device and whose `netplan` is the real one. */
function nodeWithRealNetplan(nic: string): FakeNode {
  const netplan = netplanBinary();
  return new FakeNode({
    ip: `case "$*" in
  "-o -4 route show default") echo "default via 51.159.0.1 dev ${nic} proto static" ;;
  "link show "*) [ -e "$SHIM_STATE/link-$3" ] ;;
  *) exit 0 ;;
esac`,
    // get: netplan's own merged view; apply: generate for real in the fake root, then "create" the netdevs.
    netplan: `case "$1" in
  get) exec ${netplan} "$@" ;;
  apply)
    ${netplan} generate --root-dir "$NODEFLEET_ROOT" || exit 1
    for f in "$NODEFLEET_ROOT"/run/systemd/network/*.netdev; do
      [ -e "$f" ] && touch "$SHIM_STATE/link-$(sed -n 's/^Name=//p' "$f")"
    done
    ;;
  *) exec ${netplan} "$@" ;;
esac`,
  });
}

function k0sJoin(vlanId: number): string {
  return renderSelfJoinScript(k0sSelfJoinInput({ privateNetwork: { vlanId, addressCidr: "172.16.0.5/22" } }));
}

function networkdFile(node: FakeNode, name: string): string {
  return readFileSync(node.path(`/run/systemd/network/${name}`), "utf8");
}

describe("netplan VLAN file", () => {
  it("declares vlan<id> on the parent's netplan id with the IPAM address", () => {
    const doc = parse(renderNetplanVlan({ parentId: "primary", vlanId: 1234, addressCidr: "172.16.0.5/22" }));
    assert.deepEqual(doc, { network: { version: 2, vlans: { vlan1234: { id: 1234, link: "primary", addresses: ["172.16.0.5/22"] } } } });
  });

  it("keeps every VLAN interface name within Linux's 15 characters", () => {
    assert.ok(vlanInterfaceName(4094).length <= MAX_INTERFACE_NAME_LENGTH);
  });

  it("accepts shell variables for values found on the host, and nothing else", () => {
    const text = renderNetplanVlan({ parentId: "${netplan_parent}", vlanId: "${vlan_id}", addressCidr: "10.0.0.9/24" });
    assert.match(text, /^ {4}vlan\$\{vlan_id\}:$/m);
    assert.match(text, /^ {6}link: \$\{netplan_parent\}$/m);
    assert.throws(() => renderNetplanVlan({ parentId: "eno1; rm -rf /", vlanId: 1, addressCidr: "10.0.0.9/24" }), /neither a netplan id/);
    assert.throws(() => renderNetplanVlan({ parentId: "eno1", vlanId: "$(id)", addressCidr: "10.0.0.9/24" }), /neither a number/);
    assert.throws(() => renderNetplanVlan({ parentId: "eno1", vlanId: 0, addressCidr: "10.0.0.9/24" }), /1 to 4094/);
    assert.throws(() => renderNetplanVlan({ parentId: "eno1", vlanId: 5, addressCidr: "10.0.0.9" }), /with a prefix/);
  });

  describe("real `netplan generate` on the layouts Elastic Metal hosts have", () => {
    for (const layout of LAYOUTS) {
      it(`${layout.name}: the self-join finds netplan id ${layout.netplanId} and netplan attaches the VLAN to it`, () => {
        const node = nodeWithRealNetplan(layout.nic);
        try {
          node.write(`/etc/netplan/${layout.file}`, layout.yaml);
          node.write(`/sys/class/net/${layout.nic}/address`, `${MAC}\n`);
          const run = node.run(k0sJoin(1234));
          assert.equal(run.status, 0, `self-join failed:\n${run.stderr}`);
          assert.equal(parse(node.read(NETPLAN_VLAN_PATH)).network.vlans.vlan1234.link, layout.netplanId);
          const netdev = networkdFile(node, "10-netplan-vlan1234.netdev");
          assert.match(netdev, /^Name=vlan1234$/m);
          assert.match(netdev, /^Id=1234$/m);
          assert.match(networkdFile(node, "10-netplan-vlan1234.network"), /^Address=172\.16\.0\.5\/22$/m);
          assert.match(networkdFile(node, `10-netplan-${layout.netplanId}.network`), /^VLAN=vlan1234$/m);
          const generated = readdirSync(node.path("/run/systemd/network"));
          assert.equal(generated.filter((f) => f.endsWith(".netdev")).length, 1, generated.join(", "));
        } finally {
          node.dispose();
        }
      });
    }

    it("naming the kernel interface in link: (the old rendering) is what netplan rejects when the id differs", () => {
      const layout = LAYOUTS[3];
      const root = mkdtempSync(join(tmpdir(), "nodefleet-netplan-"));
      try {
        mkdirSync(join(root, "etc/netplan"), { recursive: true });
        writeFileSync(join(root, "etc/netplan", layout.file), layout.yaml, { mode: 0o600 });
        const vlan = renderNetplanVlan({ parentId: layout.nic, vlanId: 1234, addressCidr: "172.16.0.5/22" });
        writeFileSync(join(root, NETPLAN_VLAN_PATH), vlan, { mode: 0o600 });
        const rejected = netplanGenerate(root);
        assert.notEqual(rejected.status, 0);
        assert.match(rejected.output, /interface 'enp129s0f0np0' is not defined/);
        writeFileSync(
          join(root, NETPLAN_VLAN_PATH),
          renderNetplanVlan({ parentId: layout.netplanId, vlanId: 1234, addressCidr: "172.16.0.5/22" }),
          { mode: 0o600 },
        );
        const accepted = netplanGenerate(root);
        assert.equal(accepted.status, 0, accepted.output);
      } finally {
        rmSync(root, { recursive: true, force: true });
      }
    });

    it("fails, saying why, when netplan does not define the primary NIC", () => {
      const node = nodeWithRealNetplan("eno2");
      try {
        node.write("/etc/netplan/01-netcfg.yaml", LAYOUTS[0].yaml);
        const run = node.run(k0sJoin(1234));
        assert.notEqual(run.status, 0);
        assert.match(run.stderr, /netplan defines no single ethernet for the primary NIC eno2/);
        assert.equal(node.exists(NETPLAN_VLAN_PATH), false);
      } finally {
        node.dispose();
      }
    });
  });
});
