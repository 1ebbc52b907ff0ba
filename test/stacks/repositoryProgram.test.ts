/**
 * The repository's own Pulumi.yaml runs the fleet program (not package.json's main, which declared
 * nothing): `pulumi preview --stack example` from a clean checkout reaches the program's config
 * check and names the one thing the example lacks for a real cloud, its kubeconfig.
 */
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pulumiProcessEnv } from "../../automation/engine/toolchain";
import { runPulumi } from "../../automation/local/localStack";
import { cleanCheckout } from "../support/cleanCheckout";
import { readerEnvironment } from "../support/readerEnvironment";
import { missingTools, skipUnlessAvailable } from "../support/toolchainRequirement";

describe("pulumi preview --stack example from the repository (real CLI)", function () {
  this.timeout(300_000);
  let dir: string;

  before(function () {
    skipUnlessAvailable(
      this,
      missingTools(
        "pulumi",
        "pulumi-language-nodejs",
        "pulumi-resource-kubernetes",
        "pulumi-resource-hcloud",
        "pulumi-resource-random",
        "pulumi-resource-time",
      ),
    );
    dir = mkdtempSync(join(tmpdir(), "nodefleet-example-"));
  });

  after(function () {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("runs stacks/index.ts, which asks for the cluster's kubeconfig", async function () {
    const checkout = cleanCheckout(join(dir, "checkout"));
    mkdirSync(join(dir, "state"));
    const env = {
      ...(readerEnvironment() as Record<string, string>),
      ...pulumiProcessEnv(join(dir, "home")),
      PULUMI_BACKEND_URL: `file://${join(dir, "state")}`,
      PULUMI_CONFIG_PASSPHRASE: "example",
    };
    await runPulumi(["stack", "init", "example", "--non-interactive"], checkout, env);
    await assert.rejects(runPulumi(["preview", "--stack", "example", "--non-interactive"], checkout, env), (error: Error) => {
      assert.match(error.message, /nodefleet:cluster\.kubeconfig: is required to mint bootstrap tokens/);
      assert.doesNotMatch(error.message, /Fleet\s*:\s*\{\}/);
      return true;
    });
  });
});
