import { strict as assert } from "node:assert";
import * as k8s from "@pulumi/kubernetes";
import { BootstrapToken } from "../../components/kubernetes/bootstrapToken";
import { runUnderMocks, type RecordedResource } from "../../automation/mocks/runUnderMocks";
import { containsSecret, resolveSecrets } from "../../automation/mocks/secretValues";

const SECRET_TYPE = "kubernetes:core/v1:Secret";

function program() {
  const provider = new k8s.Provider("cluster", { kubeconfig: "unused-under-mocks" });
  const k0s = new BootstrapToken(
    "node-a-token",
    { clusterKind: "k0s", ttlMinutes: 60, nodeName: "example-a" },
    { providers: { kubernetes: provider } },
  );
  const kubeadm = new BootstrapToken(
    "node-b-token",
    { clusterKind: "kubeadm", ttlMinutes: 90, nodeName: "example-b", description: "for node b" },
    { providers: { kubernetes: provider } },
  );
  return {
    k0s: { tokenId: k0s.tokenId, token: k0s.token, expiration: k0s.expiration },
    kubeadm: { tokenId: kubeadm.tokenId, token: kubeadm.token, expiration: kubeadm.expiration },
  };
}

function run() {
  return runUnderMocks({ stack: "test", program });
}

function byName(resources: RecordedResource[], name: string): RecordedResource {
  const found = resources.find((r) => r.name === name);
  assert.ok(found, `resource ${name} was registered`);
  return found;
}

function stringData(resource: RecordedResource): Record<string, string> {
  return resolveSecrets(resource.inputs.stringData, true) as Record<string, string>;
}

describe("BootstrapToken", () => {
  let first: Awaited<ReturnType<typeof run>>;
  before(async () => {
    first = await run();
  });

  it("registers the component and its children", () => {
    const component = byName(first.resources, "node-a-token");
    assert.equal(component.type, "nodefleet:kubernetes:BootstrapToken");
    assert.equal(component.custom, false);
    assert.equal(byName(first.resources, "node-a-token-id").type, "random:index/randomString:RandomString");
    assert.equal(
      byName(first.resources, "node-a-token-password").type,
      "random:index/randomPassword:RandomPassword",
      "a secret never a resource id",
    );
    assert.equal(byName(first.resources, "node-a-token-expiry").type, "time:index/offset:Offset");
    assert.equal(byName(first.resources, "node-a-token-secret-object").type, SECRET_TYPE);
  });

  it("draws id and secret from [a-z0-9] only, 6 and 16 characters", () => {
    for (const [role, length] of [
      ["id", 6],
      ["password", 16],
    ] as const) {
      const inputs = byName(first.resources, `node-a-token-${role}`).inputs;
      assert.equal(inputs.length, length);
      assert.equal(inputs.lower, true);
      assert.equal(inputs.numeric, true);
      assert.equal(inputs.upper, false);
      assert.equal(inputs.special, false);
    }
    assert.match(first.outputs.k0s.tokenId, /^[a-z0-9]{6}$/);
    assert.match(first.outputs.k0s.token, /^[a-z0-9]{6}\.[a-z0-9]{16}$/);
    assert.ok(first.outputs.k0s.token.startsWith(`${first.outputs.k0s.tokenId}.`));
  });

  it("keeps the expiration in a time Offset of ttlMinutes", () => {
    assert.equal(byName(first.resources, "node-a-token-expiry").inputs.offsetMinutes, 60);
    assert.equal(byName(first.resources, "node-b-token-expiry").inputs.offsetMinutes, 90);
    assert.equal(first.outputs.k0s.expiration, "2026-01-01T01:00:00Z");
    assert.equal(first.outputs.kubeadm.expiration, "2026-01-01T01:30:00Z");
  });

  it("writes the k0s token Secret: authentication only", () => {
    const secret = byName(first.resources, "node-a-token-secret-object");
    const metadata = secret.inputs.metadata as { name: string; namespace: string };
    assert.equal(metadata.name, `bootstrap-token-${first.outputs.k0s.tokenId}`);
    assert.equal(metadata.namespace, "kube-system");
    assert.equal(secret.inputs.type, "bootstrap.kubernetes.io/token");
    const [id, tokenSecret] = first.outputs.k0s.token.split(".");
    assert.deepEqual(stringData(secret), {
      "token-id": id,
      "token-secret": tokenSecret,
      expiration: "2026-01-01T01:00:00Z",
      description: "Worker bootstrap token for example-a, created by nodefleet",
      "usage-bootstrap-authentication": "true",
    });
  });

  it("writes the kubeadm token Secret: signing and the kubeadm node-token group too", () => {
    const data = stringData(byName(first.resources, "node-b-token-secret-object"));
    assert.equal(data.description, "for node b");
    assert.equal(data["usage-bootstrap-authentication"], "true");
    assert.equal(data["usage-bootstrap-signing"], "true");
    assert.equal(data["auth-extra-groups"], "system:bootstrappers:kubeadm:default-node-token");
    assert.equal(data["token-id"], first.outputs.kubeadm.tokenId);
  });

  it("keeps the token secret wrapped in the Secret's inputs", () => {
    const secret = byName(first.resources, "node-a-token-secret-object");
    assert.ok(containsSecret(secret.inputs.stringData), "stringData holds a wrapped secret");
    const tokenSecret = first.outputs.k0s.token.split(".")[1];
    assert.ok(!JSON.stringify(resolveSecrets(secret.inputs, false)).includes(tokenSecret), "masked inputs do not show the secret");
  });

  it("sends the Secret through the kubernetes provider given to the component", () => {
    const secret = byName(first.resources, "node-a-token-secret-object");
    assert.ok(secret.provider?.includes("pulumi:providers:kubernetes::cluster"), `provider ${secret.provider}`);
  });

  it("gives different nodes different tokens", () => {
    assert.notEqual(first.outputs.k0s.tokenId, first.outputs.kubeadm.tokenId);
    assert.notEqual(first.outputs.k0s.token.split(".")[1], first.outputs.kubeadm.token.split(".")[1]);
  });

  it("yields the same token for the same names on another run", async () => {
    const second = await run();
    assert.deepEqual(second.outputs, first.outputs);
  });

  it("rejects a TTL that is not a positive whole number of minutes, before registering anything", () => {
    for (const ttlMinutes of [0, -5, 1.5]) {
      assert.throws(() => new BootstrapToken("bad", { clusterKind: "k0s", ttlMinutes, nodeName: "x" }), /ttlMinutes must be a positive/);
    }
  });
});
