/**
 * The API stack's program gets the git stack's secure values (the kubeconfig that mints bootstrap
 * tokens): read offline they are left out, so the automation engine decrypts them with the real CLI.
 */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as path from "node:path";
import { withDecryptedSecrets } from "../../../automation/api/decryptedStackConfig";
import { StackConfigSource } from "../../../automation/api/stackConfigSource";
import { AutomationEngine } from "../../../automation/engine/automationEngine";
import { requirePulumiCommand } from "../../../automation/engine/pulumiCli";
import { pulumiProcessEnv } from "../../../automation/engine/toolchain";
import { gitStackProgram } from "../../../automation/gitStackProgram";
import { tempDataDir } from "../../support/apiHarness";
import { stackFileConfig } from "../../support/fleetConfigFixture";
import { missingTools, skipUnlessAvailable } from "../../support/toolchainRequirement";
import { stringify } from "yaml";

describe("the git stack's secure values for the API stack", function () {
  it("puts decrypted secrets in, parsed and marked secret, and leaves the API tokens out", function () {
    const merged = withDecryptedSecrets(
      { "nodefleet:network": { value: { zone: "eu-central" } }, "nodefleet:cluster": { value: { id: "c1" } } },
      {
        "nodefleet:cluster": { value: JSON.stringify({ id: "c1", kubeconfig: "apiVersion: v1" }), secret: true },
        "nodefleet:network": { value: JSON.stringify({ zone: "eu-central" }), secret: false },
        "nodefleet:apiTokens": { value: JSON.stringify(["t"]), secret: true },
        "nodefleet:sshKey": { value: "-----BEGIN KEY-----", secret: true },
      },
    );
    assert.deepEqual(merged, {
      "nodefleet:network": { value: { zone: "eu-central" } },
      "nodefleet:cluster": { value: { id: "c1", kubeconfig: "apiVersion: v1" }, secret: true },
      "nodefleet:sshKey": { value: "-----BEGIN KEY-----", secret: true },
    });
  });

  it("decrypts a passphrase-encrypted nodefleet:cluster.kubeconfig of a project stack through the real CLI", async function () {
    skipUnlessAvailable(this, missingTools("pulumi", "pulumi-language-nodejs"));
    const project = tempDataDir("nodefleet-decrypt-project-");
    fs.mkdirSync(path.join(project, "stacks"));
    fs.mkdirSync(path.join(project, "state"));
    fs.writeFileSync(path.join(project, "Pulumi.yaml"), "name: nodefleet\nruntime: nodejs\nstackConfigDir: stacks\n");
    fs.writeFileSync(path.join(project, "stacks", "Pulumi.fleet.yaml"), stringify({ config: stackFileConfig("example") }));
    const backend = `file://${path.join(project, "state")}`;
    const env = { ...process.env, PULUMI_BACKEND_URL: backend, PULUMI_CONFIG_PASSPHRASE: "test-passphrase" };
    const engine = await AutomationEngine.create({ dataDir: path.join(project, "data"), env });
    const def = { stackName: "fleet", program: gitStackProgram({ allowMissingKubeconfig: true }), config: {}, projectDir: project };
    await engine.readStackConfig(def); // creates the stack and its encryption salt
    const { LocalWorkspace } = await import("@pulumi/pulumi/automation");
    const workspace = await LocalWorkspace.create({
      workDir: project,
      pulumiCommand: await requirePulumiCommand(),
      envVars: { ...pulumiProcessEnv(path.join(project, "data")), PULUMI_BACKEND_URL: backend, PULUMI_CONFIG_PASSPHRASE: "test-passphrase" },
    });
    const kubeconfig = "apiVersion: v1\nkind: Config\nusers: [{name: admin, user: {token: not-in-clear-0123456789}}]\n";
    await workspace.setConfig("fleet", "nodefleet:cluster.kubeconfig", { value: kubeconfig, secret: true }, true);
    assert.ok(!fs.readFileSync(path.join(project, "stacks", "Pulumi.fleet.yaml"), "utf8").includes("not-in-clear"));

    const offline = new StackConfigSource("fleet", project);
    assert.deepEqual(offline.encryptedPaths, ["nodefleet:cluster.kubeconfig"]);
    const stripped = offline.stackConfig()["nodefleet:cluster"]!.value as Record<string, unknown>;
    assert.equal(stripped.kubeconfig, undefined, "offline, the secure value is left out");

    const merged = withDecryptedSecrets(offline.stackConfig(), await engine.readStackConfig(def));
    const cluster = merged["nodefleet:cluster"]!;
    assert.equal(cluster.secret, true);
    assert.equal((cluster.value as Record<string, unknown>).kubeconfig, kubeconfig);
    assert.equal((cluster.value as Record<string, unknown>).id, (stripped as { id: string }).id);
  });
});
