import { strict as assert } from "node:assert";
import { statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "yaml";
import { renderBootstrapKubeconfig } from "../../components/bootstrap/kubeadmBootstrapKubeconfig";
import { renderSelfJoinCloudConfig } from "../../components/bootstrap/kubeadmWorkerCloudConfig";
import { KUBELET_PATHS, renderKubeletConfig } from "../../components/bootstrap/kubeletConfig";
import { renderKubeletConfigRepush } from "../../components/bootstrap/kubeletConfigRepush";
import { NETPLAN_VLAN_PATH } from "../../components/bootstrap/netplanVlan";
import {
  K0S_KUBELET_CONF as K0S_KUBELET_KUBECONFIG,
  K0S_TOKEN_FILE as K0S_TOKEN_PATH,
} from "../../components/bootstrap/k0sWorkerCloudConfig";
import {
  SELF_JOIN_SCRIPT_PATH,
  VLAN_ID_PATH,
  renderSelfJoinScript,
  renderVlanIdDelivery,
  type KubeadmSelfJoinInput,
  type K0sSelfJoinInput,
} from "../../components/bootstrap/selfJoinScript";
import { assertCloudInitSchemaValid, assertShellcheckClean } from "../support/externalLinters";
import { FakeNode } from "../support/nodeShims";
import { k0sSelfJoinInput, TEST_KUBELET } from "../support/selfJoinInput";

const CA = "-----BEGIN CERTIFICATE-----\nMIIBexampleCA\n-----END CERTIFICATE-----\n";
const TOKEN = "abcdef.0123456789abcdef";
const KUBELET = TEST_KUBELET;
const PROVIDER_ID = "nodefleet:///example/kura-0";

function kubeadmInput(overrides: Partial<KubeadmSelfJoinInput> = {}): KubeadmSelfJoinInput {
  return {
    kind: "kubeadm",
    kubernetesVersion: "v1.33.4",
    caCertificate: CA,
    bootstrapKubeconfig: renderBootstrapKubeconfig({ apiServer: "https://203.0.113.10:6443", caCertificate: CA, token: TOKEN }),
    kubeletConfig: renderKubeletConfig({ kubelet: KUBELET, providerID: PROVIDER_ID }),
    hostname: "example-kura-0",
    providerID: PROVIDER_ID,
    labels: { "nodefleet.io/pool": "kura", "nodefleet.io/private-ipv4": "172.16.0.5" },
    taints: [{ key: "tuist.dev/runner-cache", value: "true", effect: "NoSchedule" }],
    privateNetwork: { vlanId: 1234, addressCidr: "172.16.0.5/22" },
    ...overrides,
  };
}

function k0sInput(overrides: Partial<K0sSelfJoinInput> = {}): K0sSelfJoinInput {
  return k0sSelfJoinInput({
    kubelet: KUBELET,
    providerID: PROVIDER_ID,
    labels: { "nodefleet.io/pool": "kura" },
    taints: [{ key: "tuist.dev/runner-cache", value: "true", effect: "NoSchedule" }],
    privateNetwork: { vlanId: "wait", addressCidr: "172.16.0.5/22" },
    ...overrides,
  });
}

function mode(node: FakeNode, path: string): number {
  return statSync(node.path(path)).mode & 0o777;
}

function indexOfCall(calls: string[], prefix: string): number {
  return calls.findIndex((c) => c.startsWith(prefix));
}

describe("self-join script", () => {
  describe("static checks", () => {
    it("is shellcheck clean for kubeadm and k0s clusters, with and without a private network", () => {
      assertShellcheckClean(renderSelfJoinScript(kubeadmInput()));
      assertShellcheckClean(renderSelfJoinScript(kubeadmInput({ privateNetwork: undefined, taints: [], labels: {} })));
      assertShellcheckClean(renderSelfJoinScript(k0sInput()));
      assertShellcheckClean(renderSelfJoinScript(k0sInput({ privateNetwork: { vlanId: 7, addressCidr: "10.1.0.9/24" } })));
      assertShellcheckClean(
        renderKubeletConfigRepush({ hostname: "example-kura-0", caCertificate: CA, kubeletConfig: kubeadmInput().kubeletConfig }),
      );
    });

    it("never traces and runs in strict mode", () => {
      const script = renderSelfJoinScript(kubeadmInput());
      assert.match(script, /^set -euo pipefail$/m);
      assert.doesNotMatch(script, /set -[a-z]*x|set -o xtrace|bash -x/);
    });

    it("wrapped as cloud-config passes cloud-init's schema check and keeps the script root-only", () => {
      const userData = renderSelfJoinCloudConfig(renderSelfJoinScript(kubeadmInput()));
      assertCloudInitSchemaValid(userData);
      const parsed = parse(userData.replace(/^#cloud-config\n/, ""));
      assert.equal(parsed.write_files[0].path, SELF_JOIN_SCRIPT_PATH);
      assert.equal(parsed.write_files[0].permissions, "0700");
      assert.deepEqual(parsed.runcmd, [["bash", SELF_JOIN_SCRIPT_PATH]]);
    });

    it("registers only the labels the kubelet accepts, and no empty --node-labels flag", () => {
      const restricted = renderSelfJoinScript(
        kubeadmInput({ labels: { "nodefleet.io/pool": "kura", "node-role.kubernetes.io/cache": "" } }),
      );
      assert.match(restricted, /--node-labels=nodefleet\.io\/pool=kura /);
      assert.doesNotMatch(restricted, /node-role\.kubernetes\.io/);
      const onlyRestricted = renderSelfJoinScript(kubeadmInput({ labels: { "node-role.kubernetes.io/cache": "" }, taints: [] }));
      assert.doesNotMatch(onlyRestricted, /--node-labels|--register-with-taints/);
    });

    it("refuses values that systemd or the shell would misread", () => {
      assert.throws(() => renderSelfJoinScript(kubeadmInput({ hostname: "Bad_Host" })), /DNS label/);
      assert.throws(() => renderSelfJoinScript(kubeadmInput({ kubernetesVersion: "1.33" })), /v1\.33\.4/);
      assert.throws(() => renderSelfJoinScript(kubeadmInput({ privateNetwork: { vlanId: 5000, addressCidr: "172.16.0.5/22" } })), /4094/);
    });
  });

  describe("kubeadm cluster, executed in a fake root with recording shims", function () {
    let node: FakeNode;
    before(function () {
      node = new FakeNode();
    });
    after(() => node.dispose());

    it("first run: VLAN up before the kubelet, kubelet installed from the version's channel, joined, secrets removed", () => {
      // cloud-init would have dropped the script here; the join removes it with the token in it.
      node.write(SELF_JOIN_SCRIPT_PATH, "secret copy of the script");
      node.write("/etc/fstab", "UUID=1 / ext4 defaults 0 1\n/swap.img none swap sw 0 0\n");
      const run = node.run(renderSelfJoinScript(kubeadmInput()));
      assert.equal(run.status, 0, `script failed:\n${run.stderr}`);

      const netplan = parse(node.read(NETPLAN_VLAN_PATH));
      assert.deepEqual(netplan.network.vlans, { vlan1234: { id: 1234, link: "eno1", addresses: ["172.16.0.5/22"] } });
      assert.equal(mode(node, NETPLAN_VLAN_PATH), 0o600);
      const netplanApply = indexOfCall(run.calls, "netplan apply");
      const kubeletStart = indexOfCall(run.calls, "systemctl restart kubelet");
      assert.ok(netplanApply >= 0 && kubeletStart > netplanApply, `netplan apply must precede the kubelet start:\n${run.calls.join("\n")}`);

      // apt waits for the dpkg lock (first-boot unattended upgrades hold it) instead of failing.
      assert.ok(run.calls.includes("apt-get -o DPkg::Lock::Timeout=1800 install -y -q containerd kubelet=1.33.4-*"), run.calls.join("\n"));
      assert.ok(run.calls.includes("apt-get -o DPkg::Lock::Timeout=1800 update -q"), run.calls.join("\n"));
      // Created under the script's umask 077, yet readable for apt's unprivileged _apt user.
      assert.equal(mode(node, "/etc/apt/keyrings"), 0o755);
      assert.match(
        node.read("/etc/apt/sources.list.d/nodefleet-kubernetes.list"),
        /https:\/\/pkgs\.k8s\.io\/core:\/stable:\/v1\.33\/deb\//,
      );
      assert.match(node.read("/etc/containerd/config.toml"), /SystemdCgroup = true/);
      assert.match(node.read("/etc/fstab"), /^# \/swap\.img none swap/m);

      const kubeletConfig = parse(node.read(KUBELET_PATHS.config));
      assert.equal(kubeletConfig.authentication.x509.clientCAFile, KUBELET_PATHS.clientCA);
      assert.equal(kubeletConfig.serverTLSBootstrap, undefined);
      assert.equal(kubeletConfig.providerID, PROVIDER_ID);
      assert.equal(node.read(KUBELET_PATHS.clientCA), CA);

      const dropIn = node.read(KUBELET_PATHS.dropIn);
      assert.match(dropIn, /--provider-id=nodefleet:\/\/\/example\/kura-0/);
      assert.match(dropIn, /--register-with-taints=tuist\.dev\/runner-cache=true:NoSchedule/);
      assert.match(dropIn, /--node-labels=nodefleet\.io\/pool=kura,nodefleet\.io\/private-ipv4=172\.16\.0\.5/);
      assert.match(dropIn, /--hostname-override=example-kura-0/);
      assert.equal(node.stateFile("hostname"), "example-kura-0");

      // What the kubelet read at TLS bootstrap: the token, the CA and the apiserver.
      const bootstrap = parse(node.stateFile("kubelet-read-bootstrap-kubeconfig") ?? "");
      assert.equal(bootstrap.users[0].user.token, TOKEN);
      assert.equal(bootstrap.clusters[0].cluster.server, "https://203.0.113.10:6443");
      assert.equal(Buffer.from(bootstrap.clusters[0].cluster["certificate-authority-data"], "base64").toString(), CA);

      assert.ok(node.exists(KUBELET_PATHS.kubeconfig));
      assert.equal(node.exists(KUBELET_PATHS.bootstrapKubeconfig), false, "bootstrap kubeconfig must be removed");
      assert.equal(node.exists(SELF_JOIN_SCRIPT_PATH), false, "the script copy must be removed");
    });

    it("second run converges: no reinstall, no restart, no network change, no secret written again", () => {
      const before = node.read(KUBELET_PATHS.config);
      const run = node.run(renderSelfJoinScript(kubeadmInput()));
      assert.equal(run.status, 0, `script failed:\n${run.stderr}`);
      assert.equal(run.calls.filter((c) => c.startsWith("apt-get") && c.includes(" install ")).length, 0);
      assert.equal(indexOfCall(run.calls, "systemctl restart"), -1, run.calls.join("\n"));
      assert.equal(indexOfCall(run.calls, "netplan apply"), -1);
      assert.equal(indexOfCall(run.calls, "hostnamectl"), -1);
      assert.equal(node.read(KUBELET_PATHS.config), before);
      assert.equal(node.exists(KUBELET_PATHS.bootstrapKubeconfig), false);
    });

    it("the re-push rewrites config and CA and restarts the kubelet only when they changed", () => {
      const changed = renderKubeletConfig({ kubelet: { ...KUBELET, maxPods: 200 }, providerID: PROVIDER_ID });
      const first = node.run(renderKubeletConfigRepush({ hostname: "example-kura-0", caCertificate: CA, kubeletConfig: changed }));
      assert.equal(first.status, 0, first.stderr);
      assert.equal(parse(node.read(KUBELET_PATHS.config)).maxPods, 200);
      assert.deepEqual(first.calls, ["systemctl is-active --quiet systemd-resolved", "systemctl cat kubelet", "systemctl restart kubelet"]);
      const again = node.run(renderKubeletConfigRepush({ hostname: "example-kura-0", caCertificate: CA, kubeletConfig: changed }));
      assert.equal(again.status, 0, again.stderr);
      assert.deepEqual(again.calls, ["systemctl is-active --quiet systemd-resolved", "systemctl cat kubelet"]);
    });

    it("resolvConf follows the host as kubeadm's rule does: /etc/resolv.conf without systemd-resolved, its upstream list with it", () => {
      // No systemd-resolved on this fake node so far: the stub is not in play, /etc/resolv.conf is right.
      assert.equal(parse(node.read(KUBELET_PATHS.config)).resolvConf, "/etc/resolv.conf");
      writeFileSync(join(node.state, "active-systemd-resolved"), "");
      const config = renderKubeletConfig({ kubelet: { ...KUBELET, maxPods: 200 }, providerID: PROVIDER_ID });
      const run = node.run(renderKubeletConfigRepush({ hostname: "example-kura-0", caCertificate: CA, kubeletConfig: config }));
      assert.equal(run.status, 0, run.stderr);
      const written = node.read(KUBELET_PATHS.config);
      assert.equal(parse(written).resolvConf, "/run/systemd/resolve/resolv.conf");
      // Only that line is adapted: the rest is the rendered text the re-push hash is computed from.
      assert.equal(written, config);
      assert.ok(run.calls.includes("systemctl restart kubelet"), run.calls.join("\n"));
    });
  });

  describe("k0s cluster (SSH path), executed in a fake root with recording shims", () => {
    let node: FakeNode;
    before(() => {
      node = new FakeNode();
    });
    after(() => node.dispose());

    it("waits for the VLAN id, verifies the release checksum, joins, removes the token; a second run converges", () => {
      // What the pinned-SSH delivery writes on the cloud-init path once the server reports its VLAN.
      const delivery = renderVlanIdDelivery(2042);
      assertShellcheckClean(delivery);
      const delivered = node.run(delivery);
      assert.equal(delivered.status, 0, delivered.stderr);
      assert.equal(node.read(VLAN_ID_PATH), "2042\n");
      const script = renderSelfJoinScript(k0sInput());
      const run = node.run(script);
      assert.equal(run.status, 0, `script failed:\n${run.stderr}`);
      const netplan = parse(node.read(NETPLAN_VLAN_PATH));
      assert.deepEqual(Object.keys(netplan.network.vlans), ["vlan2042"]);
      const install = run.calls.find((c) => c.startsWith("k0s install worker"));
      assert.ok(install, run.calls.join("\n"));
      assert.match(install, /--labels nodefleet\.io\/pool=kura /);
      assert.match(install, /--taints tuist\.dev\/runner-cache=true:NoSchedule /);
      assert.match(
        install,
        /--kubelet-extra-args --provider-id=nodefleet:\/\/\/example\/kura-0 --hostname-override=example-kura-0 --max-pods=110/,
      );
      assert.ok(indexOfCall(run.calls, "netplan apply") < indexOfCall(run.calls, "k0s start"));
      assert.ok(node.exists(K0S_KUBELET_KUBECONFIG));
      assert.equal(node.exists(K0S_TOKEN_PATH), false, "join token must be removed");

      const second = node.run(script);
      assert.equal(second.status, 0, second.stderr);
      assert.equal(indexOfCall(second.calls, "curl"), -1);
      assert.deepEqual(
        second.calls.filter((c) => c.startsWith("k0s")),
        ["k0s version"],
        "only the version check",
      );
      assert.equal(node.exists(K0S_TOKEN_PATH), false);
    });

    it("a re-run after a k0s version change upgrades the joined node in place, never writing the token again", () => {
      const upgrade = node.run(renderSelfJoinScript(k0sInput()), { FAKE_K0S_VERSION: "v1.32.8+k0s.0" });
      assert.equal(upgrade.status, 0, upgrade.stderr);
      assert.notEqual(indexOfCall(upgrade.calls, "curl"), -1, "the pinned release is downloaded");
      assert.equal(indexOfCall(upgrade.calls, "k0s install"), -1, "no reinstall");
      assert.notEqual(indexOfCall(upgrade.calls, "systemctl restart k0sworker"), -1);
      assert.equal(node.exists(K0S_TOKEN_PATH), false, "a joined node never gets the token again");
    });

    it("gives up, saying why, when the VLAN id never arrives", () => {
      const fresh = new FakeNode();
      try {
        const run = fresh.run(renderSelfJoinScript(k0sInput()), { NODEFLEET_VLAN_WAIT_SECONDS: "10" });
        assert.notEqual(run.status, 0);
        assert.match(run.stderr, /VLAN id did not arrive/);
        assert.equal(run.calls.filter((c) => c === "sleep 5").length, 2);
        assert.equal(fresh.exists(K0S_TOKEN_PATH), false, "nothing secret written before the network is up");
      } finally {
        fresh.dispose();
      }
    });

    it("fails closed on a checksum mismatch", () => {
      const fresh = new FakeNode();
      try {
        fresh.write(VLAN_ID_PATH, "2042\n");
        const run = fresh.run(renderSelfJoinScript(k0sInput({ k0sSha256: { amd64: "0".repeat(64) } })));
        assert.notEqual(run.status, 0);
        assert.match(run.stderr, /checksum mismatch/);
        assert.ok(fresh.exists(K0S_TOKEN_PATH), "the token stays for a retry");
        assert.equal(fresh.exists("/usr/local/bin/k0s"), false);
      } finally {
        fresh.dispose();
      }
    });
  });
});
