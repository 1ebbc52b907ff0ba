import { strict as assert } from "node:assert";
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import { stringify } from "yaml";
import { runUnderMocks } from "../../automation/mocks/runUnderMocks";
import { isWrappedSecret, resolveSecrets } from "../../automation/mocks/secretValues";
import { kubeconfigCredentials } from "../../components/kubernetes/kubernetesApiClient";
import { deleteKubernetesNode, nodeRemovalProvider } from "../../components/kubernetes/kubernetesNodeRemoval";
import { runProgram } from "../../stacks/fleetProgram";
import { hcloudStaticPoolConfig, rawFleetConfig } from "../support/fleetConfigFixture";
import { withSerializedProvider } from "../support/serializedProvider";

function kubeconfig(server: string, user: Record<string, unknown>, extraContext = false): string {
  return stringify({
    apiVersion: "v1",
    kind: "Config",
    clusters: [
      { name: "other", cluster: { server: "https://198.51.100.1:6443" } },
      { name: "main", cluster: { server, "certificate-authority-data": Buffer.from("CA PEM").toString("base64") } },
    ],
    contexts: [
      ...(extraContext ? [{ name: "first", context: { cluster: "other", user: "admin" } }] : []),
      { name: "main", context: { cluster: "main", user: "admin" } },
    ],
    "current-context": "main",
    users: [{ name: "admin", user }],
  });
}

interface Seen {
  method?: string;
  url?: string;
  authorization?: string;
}

/** A stand-in API server on 127.0.0.1 answering every request with the given status. */
async function apiServer(status: number, body = "{}"): Promise<{ url: string; seen: Seen[]; close: () => Promise<void> }> {
  const seen: Seen[] = [];
  const server = http.createServer((req, res) => {
    seen.push({ method: req.method, url: req.url, authorization: req.headers.authorization });
    res.writeHead(status, { "content-type": "application/json" }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, seen, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

describe("Kubernetes node removal", function () {
  this.timeout(60_000);

  describe("kubeconfigCredentials", () => {
    it("reads the current context's server, CA and token", () => {
      const creds = kubeconfigCredentials(kubeconfig("https://203.0.113.10:6443", { token: "abc" }, true));
      assert.deepEqual(creds, { server: "https://203.0.113.10:6443", caPem: "CA PEM", token: "abc" });
    });

    it("reads client certificates", () => {
      const creds = kubeconfigCredentials(
        kubeconfig("https://203.0.113.10:6443", {
          "client-certificate-data": Buffer.from("CERT").toString("base64"),
          "client-key-data": Buffer.from("KEY").toString("base64"),
        }),
      );
      assert.equal(creds.clientCertPem, "CERT");
      assert.equal(creds.clientKeyPem, "KEY");
      assert.equal(creds.token, undefined);
    });

    it("refuses invalid YAML without quoting any of it (yaml's own errors quote the line)", () => {
      const broken = "users:\n- name: admin\n  user: {token: SUPERSECRET: x}\n";
      assert.throws(
        () => kubeconfigCredentials(broken),
        (e: Error) => /not valid YAML \(\w+ at line 3; content not shown\)/.test(e.message) && !e.message.includes("SUPERSECRET"),
      );
    });

    it("refuses exec plugins without showing any credential", () => {
      assert.throws(
        () => kubeconfigCredentials(kubeconfig("https://203.0.113.10:6443", { exec: { command: "aws", args: ["secret-arg"] } })),
        (e: Error) => /neither a token nor a client certificate/.test(e.message) && !e.message.includes("secret-arg"),
      );
    });
  });

  describe("deleteKubernetesNode", () => {
    it("sends DELETE /api/v1/nodes/<name> with the bearer token", async () => {
      const api = await apiServer(200);
      try {
        await deleteKubernetesNode(JSON.stringify({ server: `${api.url}/`, token: "t0ken" }), "example-hel1-general-0");
        assert.deepEqual(api.seen, [{ method: "DELETE", url: "/api/v1/nodes/example-hel1-general-0", authorization: "Bearer t0ken" }]);
      } finally {
        await api.close();
      }
    });

    it("treats a Node that is already gone as deleted", async () => {
      const api = await apiServer(404, '{"kind":"Status","message":"nodes \\"x\\" not found"}');
      try {
        await deleteKubernetesNode(JSON.stringify({ server: api.url, token: "t0ken" }), "x");
        assert.equal(api.seen.length, 1);
      } finally {
        await api.close();
      }
    });

    it("fails with the API's reason, never the token", async () => {
      const api = await apiServer(403, '{"kind":"Status","message":"nodes is forbidden"}');
      try {
        await assert.rejects(
          deleteKubernetesNode(JSON.stringify({ server: api.url, token: "t0ken" }), "x"),
          (e: Error) => /deleting Kubernetes Node x failed: HTTP 403: nodes is forbidden/.test(e.message) && !e.message.includes("t0ken"),
        );
      } finally {
        await api.close();
      }
    });

    it("fails clearly when no usable kubeconfig was configured", async () => {
      await assert.rejects(deleteKubernetesNode("", "x"), /no usable kubeconfig/);
    });
  });

  it("works from its serialized provider, as the engine runs it on delete", async () => {
    const api = await apiServer(200);
    try {
      await withSerializedProvider(nodeRemovalProvider, async (provider) => {
        const props = { nodeName: "example-hel1-general-1", credentials: JSON.stringify({ server: api.url, token: "t" }) };
        const diff = await provider.diff!("example-hel1-general-1", props, { ...props, credentials: "{}" });
        assert.deepEqual(diff.replaces, [], "new credentials never replace (which would delete the Node)");
        await provider.delete!("example-hel1-general-1", props);
      });
      assert.equal(api.seen[0]?.url, "/api/v1/nodes/example-hel1-general-1");
    } finally {
      await api.close();
    }
  });

  it("is declared once per hcloud server generation, named and targeted by the server name, the credentials secret in the pool's provider, when a kubeconfig is configured", async () => {
    const config = rawFleetConfig({
      cluster: { kubeconfig: kubeconfig("https://203.0.113.10:6443", { token: "very-secret" }) },
      pools: [hcloudStaticPoolConfig({ replicas: 2 })],
    });
    const run = await runUnderMocks({ stack: "test", config, secretKeys: ["nodefleet:cluster"], program: () => runProgram() });
    const removals = run.resources.filter((r) => r.type === "nodefleet:kubernetes:NodeRemoval");
    const servers = run.resources.filter((r) => r.type === "hcloud:index/server:Server");
    assert.equal(servers.length, 2);
    servers.forEach((server, i) => assert.match(server.name, new RegExp(`^example-hel1-general-${i}-[a-z0-9]{6}$`)));
    assert.deepEqual(
      removals.map((r) => [r.name, r.inputs.nodeName]),
      servers.map((s) => [`${s.name}-node-removal`, s.name]),
    );
    // The credentials sit once, in the pool's provider, as a secret; never in a member's removal.
    for (const r of removals) assert.deepEqual(Object.keys(r.inputs), ["nodeName"]);
    const providers = run.resources.filter((r) => r.type === "pulumi:providers:nodefleet");
    assert.equal(providers.length, 1, "one provider for the pool");
    assert.ok(isWrappedSecret(providers[0]!.inputs.credentials));
    assert.equal(JSON.parse(String(resolveSecrets(providers[0]!.inputs.credentials, true))).token, "very-secret");

    const rendered = await runUnderMocks({
      stack: "test",
      config: rawFleetConfig(),
      program: () => runProgram({ allowMissingKubeconfig: true }),
    });
    assert.equal(
      rendered.resources.filter((r) => r.type.startsWith("pulumi-nodejs:dynamic") || /:Node(Removal|Drain)$/.test(r.type)).length,
      0,
      "nothing to delete with in render",
    );
  });
});
