import { strict as assert } from "node:assert";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { renderBootstrapKubeconfig } from "../../components/bootstrap/kubeadmBootstrapKubeconfig";
import { KUBELET_PATHS, renderKubeletConfig } from "../../components/bootstrap/kubeletConfig";
import { renderNodeIpDiscovery } from "../../components/bootstrap/nodeIp";
import { renderSelfJoinScript, type K0sSelfJoinInput, type KubeadmSelfJoinInput } from "../../components/bootstrap/selfJoinScript";
import { assertShellcheckClean } from "../support/externalLinters";
import { FakeNode } from "../support/nodeShims";
import { k0sSelfJoinInput, TEST_KUBELET } from "../support/selfJoinInput";

const CA = "-----BEGIN CERTIFICATE-----\nMIIBexampleCA\n-----END CERTIFICATE-----\n";
const KUBELET = TEST_KUBELET;
const PROVIDER_ID = "nodefleet:///example/hel1-0";
/** `ip -o -4 addr show scope global` on a Hetzner Cloud server: public address first, private network second. */
const HCLOUD_ADDRESSES = [
  "2: eth0    inet 203.0.113.5/32 metric 100 scope global dynamic eth0\\       valid_lft 86000sec preferred_lft 86000sec",
  "3: enp7s0    inet 10.0.1.5/32 metric 1024 scope global dynamic enp7s0\\       valid_lft 86000sec preferred_lft 86000sec",
].join("\n");

function k0sJoin(overrides: Partial<K0sSelfJoinInput> = {}): string {
  return renderSelfJoinScript(
    k0sSelfJoinInput({
      kubelet: KUBELET,
      hostname: "example-hel1-0",
      providerID: PROVIDER_ID,
      nodeIp: { subnet: "10.0.1.0/24" },
      ...overrides,
    }),
  );
}

function kubeadmJoin(overrides: Partial<KubeadmSelfJoinInput> = {}): string {
  return renderSelfJoinScript({
    kind: "kubeadm",
    kubernetesVersion: "v1.33.4",
    caCertificate: CA,
    bootstrapKubeconfig: renderBootstrapKubeconfig({
      apiServer: "https://203.0.113.10:6443",
      caCertificate: CA,
      token: "abcdef.0123456789abcdef",
    }),
    kubeletConfig: renderKubeletConfig({ kubelet: KUBELET, providerID: PROVIDER_ID }),
    hostname: "example-kura-0",
    providerID: PROVIDER_ID,
    labels: {},
    taints: [],
    nodeIp: { address: "172.16.0.5" },
    ...overrides,
  });
}

describe("kubelet --node-ip", () => {
  it("renders shellcheck-clean scripts for both sources and both cluster kinds", () => {
    assertShellcheckClean(k0sJoin());
    assertShellcheckClean(kubeadmJoin());
    assertShellcheckClean(kubeadmJoin({ nodeIp: { subnet: "10.0.0.0/16" } }));
  });

  it("refuses what is not an IPv4 address or CIDR, naming the field", () => {
    assert.throws(() => renderNodeIpDiscovery({ address: "10.0.1" }), /nodeIp\.address "10\.0\.1" must be an IPv4 address/);
    assert.throws(() => renderNodeIpDiscovery({ subnet: "10.0.1.5/24" }), /nodeIp\.subnet .* host bits cleared/);
    assert.throws(() => k0sJoin({ nodeIp: { address: "$(id)" } }), /nodeIp\.address/);
  });

  it("k0s on Hetzner Cloud: the kubelet gets the address in the cluster subnet, not the public one", () => {
    const node = new FakeNode();
    try {
      writeFileSync(join(node.state, "addresses"), HCLOUD_ADDRESSES);
      const run = node.run(k0sJoin());
      assert.equal(run.status, 0, run.stderr);
      const install = run.calls.find((c) => c.startsWith("k0s install worker"));
      assert.ok(install, run.calls.join("\n"));
      assert.match(install, /--kubelet-extra-args --provider-id=nodefleet:\/\/\/example\/hel1-0 .*--node-ip=10\.0\.1\.5$/);
      assert.doesNotMatch(install, /203\.0\.113\.5/);
    } finally {
      node.dispose();
    }
  });

  it("waits for the private interface, and fails saying why when no address in the subnet appears", () => {
    const node = new FakeNode();
    try {
      writeFileSync(join(node.state, "addresses"), HCLOUD_ADDRESSES.split("\n")[0]);
      const run = node.run(k0sJoin(), { NODEFLEET_NODE_IP_WAIT_SECONDS: "10" });
      assert.notEqual(run.status, 0);
      assert.match(run.stderr, /no address in the private subnet 10\.0\.1\.0\/24 after 10s/);
      assert.equal(run.calls.filter((c) => c === "sleep 5").length, 2);
      assert.equal(run.calls.filter((c) => c.startsWith("k0s install")).length, 0, "k0s must not be installed without its node IP");
    } finally {
      node.dispose();
    }
  });

  it("kubeadm (Elastic Metal): the IPAM address is the kubelet's --node-ip in its systemd drop-in", () => {
    const node = new FakeNode();
    try {
      const run = node.run(kubeadmJoin());
      assert.equal(run.status, 0, run.stderr);
      const dropIn = node.read(KUBELET_PATHS.dropIn);
      assert.match(dropIn, /^ExecStart=\/usr\/bin\/kubelet .* --node-ip=172\.16\.0\.5$/m);
      const again = node.run(kubeadmJoin());
      assert.equal(again.status, 0, again.stderr);
      assert.equal(again.calls.filter((c) => c.startsWith("systemctl restart kubelet")).length, 0, "an unchanged drop-in restarts nothing");
      const without = new FakeNode();
      try {
        assert.equal(without.run(kubeadmJoin({ nodeIp: undefined })).status, 0);
        assert.doesNotMatch(without.read(KUBELET_PATHS.dropIn), /--node-ip/);
      } finally {
        without.dispose();
      }
    } finally {
      node.dispose();
    }
  });
});
