import { strict as assert } from "node:assert";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { parse, stringify } from "yaml";
import { tempDataDir } from "../../support/apiHarness";

const REPO = path.resolve(__dirname, "..", "..", "..", "..");
const CLI = path.join(REPO, "bin", "nodefleet.js");
const TOKEN = /[a-z0-9]{6}\.[a-z0-9]{16}/;

function nodefleet(args: string[], cwd = REPO) {
  const result = spawnSync(process.execPath, [CLI, ...args], { cwd, encoding: "utf8", timeout: 60_000 });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe("nodefleet render (as a process)", function () {
  this.timeout(120_000);
  let masked: ReturnType<typeof nodefleet>;
  let shown: ReturnType<typeof nodefleet>;

  before(() => {
    masked = nodefleet(["render", "--stack", "example", "--json"]);
    shown = nodefleet(["render", "--stack", "example", "--json", "--show-secrets"]);
  });

  it("exits 0 and prints exactly one JSON document on stdout", () => {
    assert.equal(masked.status, 0, masked.stderr);
    const doc = JSON.parse(masked.stdout);
    assert.equal(doc.stack, "example");
    assert.equal(doc.offline, true);
    assert.ok(doc.resources.length > 0);
  });

  it("declares a server with user data for every static hcloud member", () => {
    const doc = JSON.parse(masked.stdout);
    const servers = doc.resources.filter((r: { type: string }) => r.type === "hcloud:index/server:Server");
    assert.equal(servers.length, 3, "hel1-general has 3 replicas");
    const hcloudBootstraps = doc.bootstraps.filter((b: { type: string }) => b.type === "hcloud:index/server:Server");
    assert.deepEqual(hcloudBootstraps.map((b: { node: string }) => b.node).sort(), ["hel1-general-0", "hel1-general-1", "hel1-general-2"]);
    for (const b of hcloudBootstraps) assert.match(b.text, /^#cloud-config/);
  });

  it("masks secrets without --show-secrets", () => {
    assert.doesNotMatch(masked.stdout, TOKEN);
    assert.match(masked.stdout, /\[secret\]/);
    const doc = JSON.parse(masked.stdout);
    assert.equal(doc.secretsShown, false);
  });

  it("shows the tokens with --show-secrets, and only then", () => {
    assert.equal(shown.status, 0, shown.stderr);
    const tokenSecrets = (stdout: string) =>
      JSON.parse(stdout)
        .resources.filter((r: { type: string }) => r.type === "kubernetes:core/v1:Secret")
        .map((r: { inputs: { stringData: unknown } }) => r.inputs.stringData);
    const pluginTokens = JSON.parse(shown.stdout).resources.filter(
      (r: { type: string }) => r.type === "nodefleet:kubernetes:NodeBootstrapToken",
    );
    assert.equal(
      pluginTokens.length,
      JSON.parse(shown.stdout).outputs.nodes.length,
      "one bootstrap token per static node, the plugin's token resource (Hetzner Cloud and bare metal alike)",
    );
    assert.deepEqual(tokenSecrets(shown.stdout), [], "no token Secret is declared: the plugin creates it");
    // The k0s join token (gzip+base64 kubeconfig) sits in the 0600 token file of the user data.
    const joinFile = /path: \/etc\/k0s\/join-token[\s\S]*?content: (\S+)/;
    assert.match(JSON.parse(shown.stdout).bootstraps[0].text, /content: H4sI/);
    assert.equal(joinFile.exec(JSON.parse(masked.stdout).bootstraps[0].text)?.[1], '"[secret]"');
    assert.equal(JSON.parse(shown.stdout).secretsShown, true);
  });

  it("masks the join token in every node's bootstrap text, user data and SSH self-join scripts alike", () => {
    const bootstraps = (stdout: string) => JSON.parse(stdout).bootstraps as Array<{ node: string; type: string; text: string }>;
    const revealed = bootstraps(shown.stdout);
    assert.equal(revealed.length, JSON.parse(shown.stdout).outputs.nodes.length, "a bootstrap text per static node");
    for (const b of revealed) assert.match(b.text, /H4sI/, `${b.node} carries a k0s join token when shown`);
    for (const b of bootstraps(masked.stdout)) {
      assert.doesNotMatch(b.text, /H4sI/, `${b.node}: no join token (gzip+base64) when masked`);
      assert.doesNotMatch(b.text, TOKEN, `${b.node}: no bootstrap token when masked`);
    }
    assert.doesNotMatch(masked.stdout, /H4sI/);
  });

  it("prints a readable table and user data without --json", () => {
    const text = nodefleet(["render", "--stack", "example"]);
    assert.equal(text.status, 0, text.stderr);
    assert.match(text.stdout, /^nodefleet render: stack example/);
    assert.match(text.stdout, /hcloud:index\/server:Server/);
    assert.match(text.stdout, /--- userData of node hel1-general-0/);
    assert.doesNotMatch(text.stdout, TOKEN);
  });

  it("renders a stack whose kubeconfig comes from the environment without one, offline as ever", () => {
    const root = tempDataDir("nodefleet-render-");
    fs.copyFileSync(path.join(REPO, "Pulumi.yaml"), path.join(root, "Pulumi.yaml"));
    fs.mkdirSync(path.join(root, "stacks"));
    const doc = parse(fs.readFileSync(path.join(REPO, "stacks", "Pulumi.example.yaml"), "utf8"));
    delete doc.config["nodefleet:cluster"].kubeconfig;
    doc.config["nodefleet:cluster"].kubeconfigFromEnvironment = true;
    fs.writeFileSync(path.join(root, "stacks", "Pulumi.fromenv.yaml"), stringify(doc));
    const { KUBECONFIG: _unset, ...env } = process.env;
    const result = spawnSync(process.execPath, [CLI, "render", "--stack", "fromenv"], {
      cwd: root,
      env,
      encoding: "utf8",
      timeout: 60_000,
    });
    assert.equal(result.status, 0, result.stderr);
    assert.match(result.stdout, /hcloud:index\/server:Server/);
  });

  it("fails with every problem listed and a non-zero exit for an invalid stack", () => {
    const root = tempDataDir("nodefleet-render-");
    fs.copyFileSync(path.join(REPO, "Pulumi.yaml"), path.join(root, "Pulumi.yaml"));
    fs.mkdirSync(path.join(root, "stacks"));
    const doc = parse(fs.readFileSync(path.join(REPO, "stacks", "Pulumi.example.yaml"), "utf8"));
    doc.config["nodefleet:pools"][0].location = "ash";
    doc.config["nodefleet:pools"][1].name = "hel1-general";
    fs.writeFileSync(path.join(root, "stacks", "Pulumi.bad.yaml"), stringify(doc));
    const result = nodefleet(["render", "--stack", "bad", "--json"], root);
    assert.notEqual(result.status, 0);
    assert.equal(result.stdout, "", "nothing is rendered");
    assert.match(result.stderr, /nodefleet:pools\[0\]\.location: location ash is in network zone us-east/);
    assert.match(result.stderr, /nodefleet:pools\[1\]\.name: pool name hel1-general is already used/);
  });

  it("names the stacks it knows when the stack file is missing", () => {
    const result = nodefleet(["render", "--stack", "missing"]);
    assert.notEqual(result.status, 0);
    assert.match(result.stderr, /stacks\/Pulumi\.missing\.yaml does not exist \(stacks here: .*example/);
  });
});
