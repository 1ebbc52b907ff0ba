import { strict as assert } from "node:assert";
import * as pulumi from "@pulumi/pulumi";
import { stringify } from "yaml";
import { runUnderMocks } from "../../automation/mocks/runUnderMocks";
import { resolveSecrets } from "../../automation/mocks/secretValues";
import { KubernetesNodeRemoval, nodeRemovalProvider } from "../../components/kubernetes/kubernetesNodeRemoval";
import { withSerializedProvider } from "../support/serializedProvider";

const EXEC_KUBECONFIG = stringify({
  apiVersion: "v1",
  kind: "Config",
  clusters: [{ name: "main", cluster: { server: "https://203.0.113.10:6443" } }],
  contexts: [{ name: "main", context: { cluster: "main", user: "sso" } }],
  "current-context": "main",
  users: [{ name: "sso", user: { exec: { apiVersion: "client.authentication.k8s.io/v1", command: "aws", args: ["eks", "get-token"] } } }],
});

describe("Node removal with an unusable kubeconfig (exec plugin)", function () {
  this.timeout(60_000);

  it("warns when declared, naming the node, and removing the member is not blocked", async () => {
    const warnings: string[] = [];
    const log = pulumi.log as { warn: (message: string) => Promise<void> };
    const original = log.warn;
    log.warn = async (message: string) => {
      warnings.push(message);
    };
    let credentials = "unset";
    try {
      const { resources } = await runUnderMocks({
        stack: "test",
        program: () => ({
          r: new KubernetesNodeRemoval("n-node-removal", { nodeName: "example-kura-0", kubeconfig: EXEC_KUBECONFIG }).urn,
        }),
      });
      credentials = String(resolveSecrets(resources.find((r) => r.name === "n-node-removal")?.inputs.credentials, true));
    } finally {
      log.warn = original;
    }
    assert.equal(credentials, "");
    assert.ok(
      warnings.some((w) =>
        /node example-kura-0: its Node will not be deleted on removal \(delete it with kubectl\): .*neither a token nor a client certificate/.test(
          w,
        ),
      ),
      warnings.join("\n"),
    );
    await withSerializedProvider(nodeRemovalProvider, async (provider) => {
      await provider.delete!("example-kura-0", { nodeName: "example-kura-0", credentials: "" });
    });
  });
});
