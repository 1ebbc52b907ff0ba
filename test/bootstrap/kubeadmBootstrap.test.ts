import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { parse, stringify } from "yaml";
import { formatRender, renderStack, type RenderResult } from "../../automation/render/renderStack";
import { KUBEADM_NODE_TOKEN_GROUP, bootstrapTokenSecretData } from "../../components/kubernetes/bootstrapToken";
import {
  KUBEADM_BOOTSTRAP_CONTEXT,
  KUBEADM_BOOTSTRAP_USER,
  KUBEADM_CLUSTER_NAME,
  renderBootstrapKubeconfig,
} from "../../components/bootstrap/kubeadmBootstrapKubeconfig";
import { KUBELET_PATHS } from "../../components/bootstrap/kubeletConfig";
import { SELF_JOIN_SCRIPT_PATH } from "../../components/bootstrap/selfJoinScript";
import { assertCloudInitSchemaValid, assertShellcheckClean } from "../support/externalLinters";
import {
  FIXTURE_CA_CERTIFICATE,
  clusterConfig,
  elasticMetalPoolConfig,
  hcloudStaticPoolConfig,
  networkConfig,
} from "../support/fleetConfigFixture";

const API_SERVER = "https://203.0.113.10:6443";
const SECRET_TYPE = "kubernetes:core/v1:Secret";
const PLUGIN_TOKEN_TYPE = "nodefleet:kubernetes:NodeBootstrapToken";
const SSH_KEY_ID = "fr-par/11111111-2222-4333-a444-555555555555";

/** The bootstrap kubeconfig a self-join script writes, or undefined. */
function bootstrapKubeconfigIn(script: string): string | undefined {
  const escaped = KUBELET_PATHS.bootstrapKubeconfig.replace(/[/.]/g, "\\$&");
  const match = new RegExp(`write_file '${escaped}' 0600 <<'(\\w+)'\\n([\\s\\S]*?)\\n\\1\\n`).exec(script);
  return match?.[2];
}

/** The self-join script of a bootstrap text: the join stdin itself, or the script inside a cloud-config. */
function scriptOf(text: string): string {
  if (!text.startsWith("#cloud-config")) return text;
  const doc = parse(text) as { write_files: Array<{ path: string; content: string }> };
  const file = doc.write_files.find((f) => f.path === SELF_JOIN_SCRIPT_PATH);
  assert.ok(file, "the cloud-config carries the self-join script");
  return file.content;
}

describe("kubeadm clusters: bootstrap tokens and bootstrap kubeconfigs", function () {
  this.timeout(120_000);
  let root: string;
  let shown: RenderResult;
  let masked: RenderResult;

  before(async () => {
    // A stack of its own: a kubeadm cluster with a Hetzner Cloud pool and both Elastic Metal paths.
    root = fs.mkdtempSync(path.join(os.tmpdir(), "nodefleet-kubeadm-"));
    fs.mkdirSync(path.join(root, "stacks"));
    const config = {
      "nodefleet:cluster": clusterConfig({ kind: "kubeadm", kubernetesVersion: "v1.33.4", k0sVersion: undefined }),
      "nodefleet:network": networkConfig(),
      "nodefleet:pools": [
        hcloudStaticPoolConfig({ replicas: 1 }),
        elasticMetalPoolConfig({ name: "em-ssh", os: "ubuntu_jammy", sshKeyIds: [SSH_KEY_ID] }),
        elasticMetalPoolConfig({
          name: "em-cloud",
          os: "ubuntu_noble",
          // An offer tagged cloud-init (elasticMetalOffers.ts): the bootstrap follows the offer.
          offer: "EM-A610R-NVME",
          sshKeyIds: [SSH_KEY_ID],
          privateNetwork: { name: "cache-b", subnet: "172.20.0.0/22" },
        }),
      ],
    };
    fs.writeFileSync(path.join(root, "stacks", "Pulumi.kubeadm.yaml"), stringify({ config }));
    shown = await renderStack("kubeadm", { root, showSecrets: true });
    masked = await renderStack("kubeadm", { root, showSecrets: false });
  });

  after(() => fs.rmSync(root, { recursive: true, force: true }));

  function tokenSecrets(result: RenderResult): Array<{ name: string; data: Record<string, string>; type: string }> {
    return result.resources
      .filter((r) => r.type === SECRET_TYPE)
      .map((r) => ({
        name: String((r.inputs.metadata as Record<string, unknown>).name),
        data: r.inputs.stringData as Record<string, string>,
        type: String(r.inputs.type),
      }));
  }

  it("mints one kubeadm bootstrap token per node, its Secret with signing and the kubeadm node-token group", () => {
    // Every node's token is one resource of nodefleet's plugin (Hetzner Cloud and Elastic Metal
    // alike), which creates the Secret from bootstrapTokenSecretData (test/provider/providerPlugin.test.ts).
    const pluginTokens = shown.resources.filter((r) => r.type === PLUGIN_TOKEN_TYPE);
    assert.deepEqual(
      pluginTokens.map((r) => r.inputs.clusterKind),
      ["kubeadm", "kubeadm", "kubeadm"],
      "one per node",
    );
    assert.equal(new Set(pluginTokens.map((r) => r.inputs.nodeName)).size, 3, "never shared across nodes");
    assert.deepEqual(tokenSecrets(shown), [], "no Secret declared in the program: the plugin creates it");
    const data = bootstrapTokenSecretData("kubeadm", {
      tokenId: "abcdef",
      tokenSecret: "0123456789abcdef",
      expiration: "2026-12-04T22:00:00Z",
      description: "d",
    });
    assert.equal(data["usage-bootstrap-authentication"], "true");
    assert.equal(data["usage-bootstrap-signing"], "true");
    assert.equal(data["auth-extra-groups"], KUBEADM_NODE_TOKEN_GROUP);
  });

  it("puts each node's own token into a TLS-bootstrap kubeconfig for the cluster's apiserver and CA", () => {
    const joins = shown.bootstraps.filter((b) => b.field !== "stdin" || b.resource.endsWith("-join"));
    // The cloud-init Elastic Metal node also has its SSH join (same node, same token), run after cloud-init.
    assert.equal(joins.length, 4, joins.map((b) => b.resource).join(", "));
    const seen = new Set<string>();
    for (const b of joins) {
      const text = bootstrapKubeconfigIn(scriptOf(b.text));
      assert.ok(text, `${b.resource}: the script writes the bootstrap kubeconfig`);
      const kubeconfig = parse(text);
      assert.deepEqual(
        kubeconfig.clusters.map((c: { name: string }) => c.name),
        [KUBEADM_CLUSTER_NAME],
      );
      assert.equal(kubeconfig.clusters[0].cluster.server, API_SERVER);
      assert.equal(Buffer.from(kubeconfig.clusters[0].cluster["certificate-authority-data"], "base64").toString(), FIXTURE_CA_CERTIFICATE);
      assert.equal(kubeconfig["current-context"], KUBEADM_BOOTSTRAP_CONTEXT);
      assert.deepEqual(kubeconfig.contexts[0].context, { cluster: KUBEADM_CLUSTER_NAME, user: KUBEADM_BOOTSTRAP_USER });
      const token = kubeconfig.users[0].user.token as string;
      assert.match(token, /^[a-z0-9]{6}\.[a-z0-9]{16}$/, `${b.resource}: a bootstrap token (the plugin's, whose Secret it creates)`);
      seen.add(token);
    }
    assert.equal(seen.size, 3, "each node its own token");
  });

  it("Hetzner Cloud and cloud-init Elastic Metal nodes get valid cloud-config within the providers' limits", () => {
    const cloudConfigs = shown.bootstraps.filter((b) => b.text.startsWith("#cloud-config"));
    assert.deepEqual(cloudConfigs.map((b) => b.type).sort(), ["hcloud:index/server:Server", "scaleway:elasticmetal/server:Server"]);
    for (const b of cloudConfigs) {
      assertCloudInitSchemaValid(b.text);
      const limit = b.type.startsWith("hcloud") ? 32 * 1024 : 127_998;
      assert.ok(Buffer.byteLength(b.text) <= limit, `${b.resource}: ${Buffer.byteLength(b.text)} bytes`);
      assertShellcheckClean(scriptOf(b.text));
    }
  });

  it("shows none of it without --show-secrets: no token, no token secret, no bootstrap kubeconfig", () => {
    // The tokens the shown render's join scripts carry.
    const secretsShown = shown.bootstraps.flatMap((b) => {
      const kubeconfig = bootstrapKubeconfigIn(scriptOf(b.text));
      return kubeconfig === undefined ? [] : [String(parse(kubeconfig).users[0].user.token).split(".")[1]!];
    });
    assert.ok(secretsShown.length > 0);
    const json = JSON.stringify(masked);
    const text = formatRender(masked);
    for (const secret of secretsShown) {
      assert.ok(!json.includes(secret), "token secret in --json render");
      assert.ok(!text.includes(secret), "token secret in render text");
    }
    assert.doesNotMatch(json, /[a-z0-9]{6}\.[a-z0-9]{16}/);
    for (const b of masked.bootstraps) {
      const script = scriptOf(b.text);
      const kubeconfig = bootstrapKubeconfigIn(script);
      if (kubeconfig !== undefined) assert.equal(kubeconfig.trim(), "[secret]", b.resource);
    }
    assert.ok(
      masked.bootstraps.some((b) => bootstrapKubeconfigIn(scriptOf(b.text)) !== undefined),
      "masked scripts keep their shape",
    );
  });

  it("renders the bootstrap kubeconfig offline and refuses a malformed token without echoing it", () => {
    const text = renderBootstrapKubeconfig({
      apiServer: API_SERVER,
      caCertificate: FIXTURE_CA_CERTIFICATE,
      token: "abcdef.0123456789abcdef",
    });
    const doc = parse(text);
    assert.equal(doc.kind, "Config");
    assert.equal(doc.users[0].name, KUBEADM_BOOTSTRAP_USER);
    assert.equal(doc.users[0].user.token, "abcdef.0123456789abcdef");
    assert.throws(
      () => renderBootstrapKubeconfig({ apiServer: API_SERVER, caCertificate: FIXTURE_CA_CERTIFICATE, token: "NOT-A-TOKEN-xyz" }),
      (e: Error) => /bootstrap token must be/.test(e.message) && !e.message.includes("NOT-A-TOKEN"),
    );
    assert.throws(
      () => renderBootstrapKubeconfig({ apiServer: "http://x", caCertificate: FIXTURE_CA_CERTIFICATE, token: "abcdef.0123456789abcdef" }),
      /https/,
    );
  });
});
