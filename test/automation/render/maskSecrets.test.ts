import { strict as assert } from "node:assert";
import { parse } from "yaml";
import { maskPrivateHeredocs, maskSecretText } from "../../../automation/render/maskSecrets";
import { encodeK0sJoinToken } from "../../../components/bootstrap/k0sJoinToken";
import { renderKubeadmWorkerUserData } from "../../../components/bootstrap/kubeadmWorkerCloudConfig";
import { kubeletSchema } from "../../../components/fleet/fleetSpec";
import { renderSelfJoinScript } from "../../../components/bootstrap/selfJoinScript";
import { renderWorkerUserData } from "../../../components/bootstrap/workerUserData";
import { assertCloudInitSchemaValid, assertShellcheckClean } from "../../support/externalLinters";
import { FIXTURE_CA_CERTIFICATE } from "../../support/fleetConfigFixture";

const TOKEN = "abc123.0123456789abcdef";
const TOKEN_SECRET = "0123456789abcdef";
const kubelet = kubeletSchema.parse({});
const member = {
  hostname: "example-pool-0",
  providerID: "nodefleet:///example/pool-0",
  labels: { "node.kubernetes.io/pool": "pool" },
  taints: [{ key: "workload", value: "batch", effect: "NoSchedule" as const }],
};
const joinToken = encodeK0sJoinToken({ apiServer: "https://203.0.113.10:6443", caCertificate: FIXTURE_CA_CERTIFICATE, token: TOKEN });

function assertNoSecret(text: string): void {
  assert.ok(!text.includes(TOKEN_SECRET), "the token secret is masked");
  assert.ok(!text.includes(joinToken.slice(0, 40)), "the join token is masked");
  assert.doesNotMatch(text, /H4sI/, "no gzip+base64 blob is left");
}

describe("render secret masking", () => {
  it("masks the join token file of a k0s cloud-config, which stays valid for cloud-init", () => {
    const userData = renderWorkerUserData(
      { kind: "k0s", k0sVersion: "v1.33.4+k0s.0", apiServer: "https://203.0.113.10:6443", caCertificate: FIXTURE_CA_CERTIFICATE, kubelet },
      member,
      TOKEN,
    );
    assert.ok(userData.includes("H4sI"), "the unmasked user data carries the join token");
    const masked = maskSecretText(userData, []);
    assertNoSecret(masked);
    assert.match(masked, /\[secret\]/);
    assert.match(masked, /k0s_version='v1\.33\.4\+k0s\.0'/, "the rest stays readable");
    assertCloudInitSchemaValid(masked);
  });

  it("masks the bootstrap kubeconfig heredoc inside a kubeadm cloud-config, keeping the CA", () => {
    const userData = renderKubeadmWorkerUserData(
      {
        kind: "kubeadm",
        kubernetesVersion: "v1.33.4",
        apiServer: "https://203.0.113.10:6443",
        caCertificate: FIXTURE_CA_CERTIFICATE,
        kubelet,
        ...member,
      },
      TOKEN,
    );
    assert.ok(userData.includes(TOKEN), "the unmasked user data carries the token");
    const masked = maskSecretText(userData, []);
    assertNoSecret(masked);
    assert.ok(masked.includes("MIIBdzCCAR2gAwIBAgIBADAKBggqhkjOPQQDAjAjMSEwHwYDVQQDDBhrM3Mtc2Vy"), "the CA (0644) is shown");
    assert.doesNotMatch(masked, /tls-bootstrap-token-user\n/, "the whole bootstrap kubeconfig body is masked, not only the token");
    assertCloudInitSchemaValid(masked);
    const script = (parse(masked) as { write_files: Array<{ content: string }> }).write_files[0].content;
    assertShellcheckClean(script);
  });

  it("masks the k0s join token a self-join script writes, and the script stays clean for shellcheck", () => {
    const script = renderSelfJoinScript({ kind: "k0s", k0sVersion: "v1.33.4+k0s.0", joinToken, kubelet, ...member });
    assert.ok(script.includes(joinToken), "the unmasked script carries the join token");
    const masked = maskSecretText(script, []);
    assertNoSecret(masked);
    assertShellcheckClean(masked);
  });

  it("masks only heredocs of private files (netplan's 0600 files hold no secret), and the whole body of each", () => {
    const script = [
      "write_file '/etc/ca.crt' 0644 <<'NODEFLEET_EOF'",
      "public",
      "NODEFLEET_EOF",
      "write_file '/etc/token' 0600 <<'NODEFLEET_EOF'",
      "  line one",
      "line two",
      "NODEFLEET_EOF",
      "write_file /etc/key 400 <<EOF",
      "key",
      "EOF",
      "write_file '/etc/netplan/51-vlan.yaml' 0600 <<'NODEFLEET_NETPLAN'",
      "network: {}",
      "NODEFLEET_NETPLAN",
      "echo done",
    ].join("\n");
    assert.equal(
      maskPrivateHeredocs(script),
      [
        "write_file '/etc/ca.crt' 0644 <<'NODEFLEET_EOF'",
        "public",
        "NODEFLEET_EOF",
        "write_file '/etc/token' 0600 <<'NODEFLEET_EOF'",
        "  [secret]",
        "NODEFLEET_EOF",
        "write_file /etc/key 400 <<EOF",
        "[secret]",
        "EOF",
        "write_file '/etc/netplan/51-vlan.yaml' 0600 <<'NODEFLEET_NETPLAN'",
        "network: {}",
        "NODEFLEET_NETPLAN",
        "echo done",
      ].join("\n"),
    );
  });

  it("masks values known to be secret wherever they appear, longest first", () => {
    assert.equal(
      maskSecretText("a kubeconfig-secret-long and kubeconfig-secret", ["kubeconfig-secret", "kubeconfig-secret-long"]),
      "a [secret] and [secret]",
    );
    assert.equal(maskSecretText("short abc stays", ["abc"]), "short abc stays", "values under 8 characters would mask too much");
  });
});
