/**
 * Moving a Robot pool's webservice credentials from the environment into the stack config, and
 * back, on the local cloud with the real engine and the Robot machines (issue #35 parts 1 and 2): a
 * pool installed while HROBOT_USER/HROBOT_PASSWORD supplied them has a provider
 * (`pulumi:providers:nodefleet`) without `robotCredentials`. Setting `nodefleet:hrobotUser` and the
 * secret `nodefleet:hrobotPassword` (and emptying the variables) gives that provider the
 * credentials: its preview updates the provider in place and replaces, creates and deletes
 * nothing, and its `pulumi up` keeps every member (no Robot rescue, reset or boot, no install, no
 * SSH login, the same Nodes, all Ready). The provider holds them as a secret: the password is
 * nowhere in clear in the exported state, the backend's files or the stack file, and the plugin's
 * rescues use them (a reinstall with the variables still empty goes through rescue). Removing the
 * config again (the variables back) updates the provider in place the same way.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { fileBackendDir } from "../../../automation/engine/fileBackendState";
import type { LocalCloud } from "../../../automation/local/localCloud";
import { LOCAL_ROBOT_POOL, runPulumi } from "../../../automation/local/localStack";
import { UP, editLocalPool, editLocalPools, isReady, poolNodes } from "../../support/localFleet";
import { localStackProject } from "../../support/localStackProject";
import { skipUnlessRobotMachines, startRobotLocalCloud, stopLocalCloudLeavingNoMachine } from "../../support/localRobotMachines";
import { until } from "../../support/until";

type Json = Record<string, any>;

/** What a member's server and Node show; a run that keeps every member leaves it as it was. */
interface MemberMarks {
  readonly nodes: Array<[string, string]>;
  readonly servers: Array<{ serverNumber: number; boots: number; resets: number; installs: number; sshSessions: number }>;
  /** Robot requests that change something (POST, DELETE), by route. */
  readonly robotWrites: Array<[string, number]>;
}

describe("moving a Robot pool's credentials from the environment into the stack config and back (real engine, Robot machines)", function () {
  this.timeout(1_200_000);
  let dir: string;
  let project: string;
  let cloud: LocalCloud | undefined;
  const warnings: string[] = [];
  let installed: MemberMarks;
  let user: string;
  let password: string;

  const robotServers = () => cloud!.robot.state.servers().slice(0, 2);
  const marks = async (): Promise<MemberMarks> => ({
    nodes: (await poolNodes(cloud!, LOCAL_ROBOT_POOL))
      .filter(isReady)
      .map((n): [string, string] => [n.metadata.name, (n.metadata as unknown as { uid: string }).uid])
      .sort(),
    servers: robotServers().map((s) => {
      const machine = cloud!.robotMachines!.machine(s.serverNumber);
      return {
        serverNumber: s.serverNumber,
        boots: s.boots.length,
        resets: s.resets.length,
        installs: machine.installs,
        sshSessions: machine.acceptedSshSessions(),
      };
    }),
    robotWrites: [...cloud!.robot.requestCounts.entries()].filter(([route]) => /^(POST|DELETE|PUT) /.test(route)).sort(),
  });
  /** The run's environment: the local cloud's, with the Robot credentials in it or emptied (read as absent). */
  const env = (credentialsInEnvironment: boolean) =>
    credentialsInEnvironment ? cloud!.env : { ...cloud!.env, HROBOT_USER: "", HROBOT_PASSWORD: "" };
  const exportState = async (showSecrets = false): Promise<{ text: string; provider: Json }> => {
    const file = join(dir, `state-${Date.now()}.json`);
    await runPulumi(
      ["stack", "export", "--stack", "local", "--file", file, ...(showSecrets ? ["--show-secrets"] : [])],
      project,
      cloud!.env,
    );
    const text = readFileSync(file, "utf8");
    rmSync(file);
    const resources = (JSON.parse(text) as Json).deployment.resources as Json[];
    // The Robot pool's provider: its parent is the pool component.
    const providers = resources.filter(
      (r) => r.type === "pulumi:providers:nodefleet" && String(r.urn).includes("nodefleet:hrobot:NodePool"),
    );
    assert.equal(providers.length, 1, `one provider of the Robot pool: ${providers.map((r) => r.urn).join(", ")}`);
    return { text, provider: providers[0]! };
  };
  /** The preview's summary; it fails the test unless the only change is the Robot pool's provider, updated in place. */
  const previewOnlyProviderUpdate = async (credentialsInEnvironment: boolean): Promise<string> => {
    const out = await runPulumi(["preview", "--stack", "local", "--diff", "--non-interactive"], project, env(credentialsInEnvironment));
    const summary = out.slice(out.lastIndexOf("Resources:"));
    assert.match(summary, /~ 1 to update/, out.slice(-4000));
    assert.doesNotMatch(summary, /to create|to replace|to delete|to discard/, summary);
    assert.match(out, /~ pulumi:providers:nodefleet: \(update\)[^~]*-cluster-access[^~]*robotCredentials\s*: \[secret\]/, out);
    assert.ok(!out.includes(password), "the preview never shows the password");
    return summary
      .split("\n")
      .slice(1, 4)
      .map((l) => l.trim())
      .filter(Boolean)
      .join("; ");
  };
  /** `pulumi up`; it fails the test unless it updated one resource (the provider) and kept every member. */
  const upKeepsEveryMember = async (credentialsInEnvironment: boolean): Promise<number> => {
    const started = Date.now();
    const out = await runPulumi([...UP, "--diff", "--suppress-outputs"], project, env(credentialsInEnvironment));
    const seconds = (Date.now() - started) / 1000;
    const summary = out.slice(out.lastIndexOf("Resources:"));
    assert.match(summary, /~ 1 updated/, out.slice(-4000));
    assert.doesNotMatch(summary, /created|replaced|deleted|discarded/, summary);
    assert.ok(!out.includes(password), "the up never shows the password");
    const after = await marks();
    assert.deepEqual(after.servers, installed.servers, "no Robot reset or boot, no install, no SSH login to a member");
    assert.deepEqual(after.robotWrites, installed.robotWrites, "no rescue activation, reset or key upload through Robot");
    assert.deepEqual(after.nodes, installed.nodes, "the same Nodes (same uids), all Ready");
    for (const server of robotServers()) assert.equal(cloud!.robotMachines!.machine(server.serverNumber).system, "installed");
    const again = await runPulumi(
      ["preview", "--stack", "local", "--non-interactive", "--expect-no-changes"],
      project,
      env(credentialsInEnvironment),
    );
    assert.doesNotMatch(again, /error:/);
    return seconds;
  };

  before(async function () {
    skipUnlessRobotMachines(this);
    dir = mkdtempSync(join(tmpdir(), "nodefleet-robot-credentials-"));
    project = localStackProject(join(dir, "project"));
    cloud = await startRobotLocalCloud(dir, project, warnings);
    user = cloud.env.HROBOT_USER!;
    password = cloud.env.HROBOT_PASSWORD!;
    assert.ok(user && password && password.length >= 16, "the local cloud's Robot account has a user and a long password");
    editLocalPools(cloud, (pools) => pools.filter((p) => p.name === LOCAL_ROBOT_POOL));
    await runPulumi(UP, project, env(true)).catch((error: Error) => {
      throw new Error(`${error.message}\nlocal cloud warnings:\n${warnings.join("\n")}`);
    });
    await until(
      "two Ready Robot Nodes",
      async () => ((await poolNodes(cloud!, LOCAL_ROBOT_POOL)).filter(isReady).length === 2 ? true : undefined),
      180_000,
    );
    installed = await marks();
    assert.equal(installed.nodes.length, 2);
  });

  after(async function () {
    await stopLocalCloudLeavingNoMachine(cloud, dir);
  });

  it("installs the pool with the credentials from the environment: its provider has none", async function () {
    const { provider } = await exportState();
    assert.equal(provider.inputs.robotCredentials, undefined, JSON.stringify(Object.keys(provider.inputs)));
    assert.ok(
      installed.servers.every((s) => s.installs >= 1),
      JSON.stringify(installed.servers),
    );
  });

  it("moving them into the stack config: the preview updates the pool's provider in place, nothing else", async function () {
    await runPulumi(["config", "set", "--stack", "local", "nodefleet:hrobotUser", user], project, cloud!.env);
    // The password through stdin, never argv.
    await runPulumi(["config", "set", "--stack", "local", "--secret", "nodefleet:hrobotPassword"], project, cloud!.env, password);
    const summary = await previewOnlyProviderUpdate(false);
    process.stdout.write(`      (the move's preview: ${summary})\n`);
  });

  it("its pulumi up keeps every member: no Robot reset, boot or install, the same Nodes, all Ready", async function () {
    const seconds = await upKeepsEveryMember(false);
    process.stdout.write(`      (the move's pulumi up: ${seconds.toFixed(1)} s)\n`);
  });

  it("the provider holds the credentials as a secret: the password is nowhere in clear in the state, the backend or the stack file", async function () {
    const { text, provider } = await exportState();
    const held = provider.inputs.robotCredentials as Json | undefined;
    assert.ok(
      held && typeof held.ciphertext === "string",
      `robotCredentials is a secret in the provider's inputs: ${JSON.stringify(held)}`,
    );
    assert.ok(!text.includes(password), "the exported state has no password in clear");
    const backend = fileBackendDir(cloud!.env.PULUMI_BACKEND_URL!)!;
    const files = (readdirSync(backend, { recursive: true }) as string[]).map((f) => join(backend, f)).filter((f) => statSync(f).isFile());
    assert.ok(files.length > 0, backend);
    for (const file of files) {
      const bytes = readFileSync(file);
      const content = file.endsWith(".gz") ? gunzipSync(bytes).toString("utf8") : bytes.toString("utf8");
      assert.ok(!content.includes(password), `${file} has no password in clear`);
    }
    const stackFile = readFileSync(cloud!.stackFile!, "utf8");
    assert.ok(!stackFile.includes(password), "the stack file holds the password encrypted");
    assert.match(stackFile, /nodefleet:hrobotPassword:\s*\n\s*secure: /);
    // Decrypted, they are the account's: what the plugin's rescues would log in with.
    const shown = (await exportState(true)).provider;
    const plaintext = JSON.stringify(shown.inputs.robotCredentials);
    assert.ok(plaintext.includes(password) && plaintext.includes(user), "the provider's secret holds the account's user and password");
  });

  it("the plugin's rescues use the moved credentials: a reinstall with the variables emptied goes through rescue", async function () {
    const rescues = () =>
      [...cloud!.robot.requestCounts.entries()]
        .filter(([route]) => /^POST \/boot\/\{\w+\}\/rescue$/.test(route))
        .reduce((a, [, n]) => a + n, 0);
    const activations = rescues();
    // Both members at once (one run): a new image reinstalls each through its rescue.
    editLocalPool(cloud!, LOCAL_ROBOT_POOL, (pool) => Object.assign(pool, { image: "ubuntu-22.04", rollout: { maxUnavailable: 2 } }));
    await runPulumi([...UP, "--suppress-outputs"], project, env(false)).catch((error: Error) => {
      throw new Error(`${error.message}\nlocal cloud warnings:\n${warnings.join("\n")}`);
    });
    assert.equal(rescues(), activations + 2, "one rescue activation a member, authenticated with the provider's credentials");
    const now = await marks();
    for (const server of now.servers) {
      const before = installed.servers.find((s) => s.serverNumber === server.serverNumber)!;
      assert.equal(server.installs, before.installs + 1, `server ${server.serverNumber} reinstalled`);
    }
    await until(
      "two Ready Robot Nodes after the reinstall",
      async () => ((await poolNodes(cloud!, LOCAL_ROBOT_POOL)).filter(isReady).length === 2 ? true : undefined),
      180_000,
    );
    // The next run ends the rollout: it deletes the members' update drains, and nothing else.
    const settle = await runPulumi([...UP, "--diff", "--suppress-outputs"], project, env(false));
    const deleted = [...settle.matchAll(/^\s*- ([\w:/-]+): \(delete\)/gm)].map((m) => m[1]);
    assert.deepEqual(deleted, ["nodefleet:kubernetes:NodeUpdateDrain", "nodefleet:kubernetes:NodeUpdateDrain"], settle.slice(-4000));
    await runPulumi(["preview", "--stack", "local", "--non-interactive", "--expect-no-changes"], project, env(false));
    installed = await marks();
  });

  it("moving them back to the environment updates the provider in place again and keeps every member", async function () {
    await runPulumi(["config", "rm", "--stack", "local", "nodefleet:hrobotUser"], project, cloud!.env);
    await runPulumi(["config", "rm", "--stack", "local", "nodefleet:hrobotPassword"], project, cloud!.env);
    const out = await runPulumi(["preview", "--stack", "local", "--diff", "--non-interactive"], project, env(true));
    const summary = out.slice(out.lastIndexOf("Resources:"));
    assert.match(summary, /~ 1 to update/, out.slice(-4000));
    assert.doesNotMatch(summary, /to create|to replace|to delete|to discard/, summary);
    assert.match(out, /~ pulumi:providers:nodefleet: \(update\)[^~]*-cluster-access[^~]*- robotCredentials\s*: \[secret\]/, out);
    const seconds = await upKeepsEveryMember(true);
    const { provider } = await exportState();
    assert.equal(provider.inputs.robotCredentials, undefined, "the provider holds no credentials again");
    process.stdout.write(`      (back to the environment: ${seconds.toFixed(1)} s)\n`);
  });
});
