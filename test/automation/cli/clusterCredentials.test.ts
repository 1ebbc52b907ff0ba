/** A cluster's cloud credentials from its folder (clusterCredentials.ts). */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as path from "node:path";
import { clusterEnvironment } from "../../../automation/cli/clusterCredentials";
import { tempDataDir } from "../../support/apiHarness";

describe("a cluster's cloud credentials", () => {
  const base = { HCLOUD_TOKEN: "service-token", PATH: "/usr/bin" };

  it("is the service's environment without NODEFLEET_CLUSTER_CREDENTIALS_DIR, or without a folder for the stack", () => {
    assert.equal(clusterEnvironment(base, "prod"), base);
    const dir = tempDataDir("nodefleet-credentials-");
    assert.deepEqual(clusterEnvironment({ ...base, NODEFLEET_CLUSTER_CREDENTIALS_DIR: dir }, "prod").HCLOUD_TOKEN, "service-token");
  });

  it("replaces the service's variables with its folder's files, for that stack only, without a trailing newline", () => {
    const dir = tempDataDir("nodefleet-credentials-");
    fs.mkdirSync(path.join(dir, "prod"));
    fs.writeFileSync(path.join(dir, "prod", "HCLOUD_TOKEN"), "prod-token\n");
    fs.writeFileSync(path.join(dir, "prod", "HROBOT_PASSWORD"), "robot pass");
    // A mounted Secret's own entries.
    fs.mkdirSync(path.join(dir, "prod", "..2026_12_05_09_00_00.1"));
    fs.symlinkSync("..2026_12_05_09_00_00.1", path.join(dir, "prod", "..data"));
    const env = { ...base, NODEFLEET_CLUSTER_CREDENTIALS_DIR: dir };
    const prod = clusterEnvironment(env, "prod");
    assert.equal(prod.HCLOUD_TOKEN, "prod-token");
    assert.equal(prod.HROBOT_PASSWORD, "robot pass");
    assert.equal(prod.PATH, "/usr/bin");
    assert.equal(clusterEnvironment(env, "staging").HCLOUD_TOKEN, "service-token");
    assert.equal(env.HCLOUD_TOKEN, "service-token", "the service's own environment is unchanged");
  });

  it("refuses a file of another name or an empty one, naming it and never its value", () => {
    const dir = tempDataDir("nodefleet-credentials-");
    fs.mkdirSync(path.join(dir, "prod"));
    fs.writeFileSync(path.join(dir, "prod", "PULUMI_CONFIG_PASSPHRASE"), "sekret-passphrase");
    const env = { NODEFLEET_CLUSTER_CREDENTIALS_DIR: dir };
    assert.throws(
      () => clusterEnvironment(env, "prod"),
      (error: Error) => {
        assert.match(
          error.message,
          /prod\/PULUMI_CONFIG_PASSPHRASE names no credential this service reads; a cluster's folder holds files named HCLOUD_TOKEN/,
        );
        assert.doesNotMatch(error.message, /sekret-passphrase/);
        return true;
      },
    );
    fs.rmSync(path.join(dir, "prod", "PULUMI_CONFIG_PASSPHRASE"));
    fs.writeFileSync(path.join(dir, "prod", "SCW_SECRET_KEY"), "\n");
    assert.throws(() => clusterEnvironment(env, "prod"), /prod\/SCW_SECRET_KEY is empty; remove it to use the service's SCW_SECRET_KEY/);
  });
});
