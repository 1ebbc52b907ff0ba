/** The node agent reads user data as cloud-init and the join script would, and says what a real join would trip on. */
import assert from "node:assert/strict";
import { encodeK0sJoinToken } from "../../../components/bootstrap/k0sJoinToken";
import { renderK0sWorkerCloudConfig } from "../../../components/bootstrap/k0sWorkerCloudConfig";
import { kubeletSchema } from "../../../components/fleet/fleetSpec";
import { UserDataError, readK0sWorkerUserData } from "../../../automation/local/workerUserDataReader";

const CA = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
const joinToken = encodeK0sJoinToken({ apiServer: "https://127.0.0.1:6443", caCertificate: CA, token: "abcdef.0123456789abcdef" });

function userData(overrides: Partial<Parameters<typeof renderK0sWorkerCloudConfig>[0]> = {}): string {
  return renderK0sWorkerCloudConfig({
    k0sVersion: "v1.33.4+k0s.0",
    joinToken,
    hostname: "c1-k0123456789ab",
    providerID: "cnap:///c1/k0123456789ab",
    labels: { "node.kubernetes.io/pool": "burst", "example.com/team": "a" },
    taints: [
      { key: "workload", value: "batch", effect: "NoSchedule" },
      { key: "karpenter.sh/unregistered", effect: "NoExecute" },
    ],
    kubelet: kubeletSchema.parse({}),
    ...overrides,
  });
}

describe("node agent: reading a worker's user data", function () {
  it("finds the join token's server, CA and token, and the kubelet's identity, labels and taints", function () {
    const intent = readK0sWorkerUserData(userData());
    assert.deepEqual(intent, {
      hostname: "c1-k0123456789ab",
      server: "https://127.0.0.1:6443",
      caPem: CA,
      bootstrapToken: "abcdef.0123456789abcdef",
      providerID: "cnap:///c1/k0123456789ab",
      kubeletVersion: "v1.33.4+k0s",
      labels: { "node.kubernetes.io/pool": "burst", "example.com/team": "a" },
      taints: [
        { key: "workload", value: "batch", effect: "NoSchedule" },
        { key: "karpenter.sh/unregistered", effect: "NoExecute" },
      ],
    });
  });

  it("reports the kubelet version of the k0s release the script installs", function () {
    assert.equal(readK0sWorkerUserData(userData({ k0sVersion: "v1.34.1+k0s.2" })).kubeletVersion, "v1.34.1+k0s");
  });

  it("finds the private subnet the join script waits for its --node-ip in, and how long it waits", function () {
    assert.deepEqual(readK0sWorkerUserData(userData({ nodeIp: { subnet: "10.0.1.0/24" } })).nodeIpWait, {
      subnet: "10.0.1.0/24",
      waitSeconds: 300,
    });
    assert.equal(readK0sWorkerUserData(userData()).nodeIpWait, undefined, "no discovery, no wait");
  });

  it("refuses user data a real join would trip on, saying why", function () {
    const good = userData();
    const cases: Array<[string, string, RegExp]> = [
      ["not cloud-config", good.replace("#cloud-config", "#!/bin/sh"), /not a #cloud-config/],
      ["no token file", good.replace("path: /etc/k0s/join-token", "path: /etc/k0s/elsewhere"), /writes no \/etc\/k0s\/join-token/],
      ["a token that is not base64 gzip", good.replace(joinToken, "bm90LWd6aXA="), /does not decode/],
      ["a malformed taint", good.replace("workload=batch:NoSchedule", "workload=batch:Sometimes"), /malformed --taints entry/],
      ["no k0s version", good.replace(/^\s*k0s_version=.*$/m, ""), /names no k0s version/],
      ["no provider id", good.replace("--provider-id=cnap:///c1/k0123456789ab ", ""), /no --provider-id/],
    ];
    for (const [what, text, message] of cases) {
      assert.throws(
        () => readK0sWorkerUserData(text),
        (error: unknown) => error instanceof UserDataError && message.test(error.message),
        what,
      );
    }
  });
});
