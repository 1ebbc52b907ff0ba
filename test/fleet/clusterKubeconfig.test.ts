/** Where a program's kubeconfig comes from: the stack's secret, or with kubeconfigFromEnvironment the file KUBECONFIG names. */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as path from "node:path";
import { parse } from "yaml";
import { FleetSpecError, parseFleetSpec } from "../../components/fleet/fleetSpec";
import { clusterKubeconfig } from "../../components/fleet/clusterKubeconfig";
import { tempDataDir } from "../support/apiHarness";

const REPO = path.resolve(__dirname, "..", "..", "..");
const exampleConfig = (): Record<string, any> =>
  structuredClone(parse(fs.readFileSync(path.join(REPO, "stacks", "Pulumi.example.yaml"), "utf8")).config);

describe("cluster kubeconfig", () => {
  it("is the stack's value unless kubeconfigFromEnvironment is set, and then the file KUBECONFIG names", () => {
    const file = path.join(tempDataDir("nodefleet-kubeconfig-"), "admin.kubeconfig");
    fs.writeFileSync(file, "apiVersion: v1\nkind: Config\n");
    assert.equal(clusterKubeconfig({ kubeconfig: "from-the-stack" }, { env: { KUBECONFIG: file } }), "from-the-stack");
    assert.equal(
      clusterKubeconfig({}, { env: { KUBECONFIG: file } }),
      undefined,
      "KUBECONFIG alone is not taken: it may be another cluster's",
    );
    assert.equal(clusterKubeconfig({ kubeconfigFromEnvironment: true }, { env: { KUBECONFIG: file } }), "apiVersion: v1\nkind: Config\n");
    assert.equal(
      clusterKubeconfig({ kubeconfigFromEnvironment: true }, { env: {}, optional: true }),
      undefined,
      "render and simulation run without it",
    );
  });

  it("names the field and the rule when KUBECONFIG is missing, a list, or unreadable", () => {
    const rejects = (env: NodeJS.ProcessEnv, fragment: RegExp) =>
      assert.throws(
        () => clusterKubeconfig({ kubeconfigFromEnvironment: true }, { env, optional: env.KUBECONFIG !== undefined }),
        (error: Error) =>
          error instanceof FleetSpecError && /cluster\.kubeconfigFromEnvironment/.test(error.message) && fragment.test(error.message),
      );
    rejects({}, /KUBECONFIG must name one kubeconfig file .*not set/);
    rejects({ KUBECONFIG: "/a:/b" }, /must name one kubeconfig file/);
    rejects({ KUBECONFIG: "/nonexistent/kubeconfig" }, /cannot read the kubeconfig \/nonexistent\/kubeconfig .*ENOENT/);
  });

  it("the stack config refuses kubeconfigFromEnvironment beside a kubeconfig", () => {
    const config = exampleConfig();
    config["nodefleet:cluster"].kubeconfig = "apiVersion: v1";
    config["nodefleet:cluster"].kubeconfigFromEnvironment = true;
    assert.throws(
      () => parseFleetSpec(config),
      (error: Error) =>
        error instanceof FleetSpecError &&
        /kubeconfigFromEnvironment: kubeconfigFromEnvironment and kubeconfig exclude each other/.test(error.message),
    );
  });
});
