/**
 * The API stack's program gets the git stack's secure values (the kubeconfig that mints bootstrap
 * tokens): read offline they are left out, so the automation engine decrypts them with the real CLI.
 */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as path from "node:path";
import { withDecryptedSecrets } from "../../../automation/api/decryptedStackConfig";
import { StackConfigSource } from "../../../automation/api/stackConfigSource";
import { tempDataDir } from "../../support/apiHarness";
import { passphraseProject } from "../../support/passphraseProject";
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
    const { project, engine, def, setConfig } = await passphraseProject(
      tempDataDir("nodefleet-decrypt-project-"),
      "fleet",
      stringify({ config: stackFileConfig("example") }),
    );
    const kubeconfig = "apiVersion: v1\nkind: Config\nusers: [{name: admin, user: {token: not-in-clear-0123456789}}]\n";
    await setConfig("nodefleet:cluster.kubeconfig", kubeconfig, true);
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
