/**
 * Bad input to the CLI, as a user makes it: each is refused with an error naming the field and the
 * rule, a non-zero exit, and nothing written. An unknown stack name (render, preview, serve: the
 * stacks that exist are listed), a misspelt `nodefleet:` key (the nearest valid one is named), an
 * empty pool list over a stack holding members (`nodefleet:allowEmptyFleet` is named), a static
 * pool where an autoscaled one is needed (`nodes create`: the pool's mode and the autoscaled pools),
 * and a missing `limits.maxNodes` (plain words, not the schema library's).
 */
import { strict as assert } from "node:assert";
import { execFileSync, spawn, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { parse, stringify } from "yaml";
import type { PreviewReport } from "../../../automation/preview/stackPreview";
import { TOKEN, startTestApi, tempDataDir, type TestApi } from "../../support/apiHarness";
import { BIN, REPOSITORY_ROOT } from "../../support/serveProcess";

type StackDocument = { config: Record<string, unknown> };
type Pool = Record<string, unknown>;

/** The parent's environment without simulation knobs or credentials, which would change what the runs do. */
function childEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const key of Object.keys(env)) {
    if (key.startsWith("NODEFLEET_") || ["HCLOUD_TOKEN", "SCW_ACCESS_KEY", "SCW_SECRET_KEY", "PULUMI_BACKEND_URL"].includes(key))
      delete env[key];
  }
  return { ...env, ...extra };
}

function nodefleet(args: string[], cwd: string, env: Record<string, string> = {}) {
  const result = spawnSync(process.execPath, [BIN, ...args], { cwd, env: childEnv(env), encoding: "utf8", timeout: 120_000 });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** As `nodefleet`, without blocking this process: the API it talks to runs in it. */
function nodefleetAsync(
  args: string[],
  cwd: string,
  env: Record<string, string> = {},
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], { cwd, env: childEnv(env) });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
    child.on("close", (status) => resolve({ status, stdout, stderr }));
  });
}

/** The example stack with its Hetzner Cloud pools only (the Elastic Metal pool would only make the runs longer). */
function exampleDocument(): StackDocument {
  const document = parse(fs.readFileSync(path.join(REPOSITORY_ROOT, "stacks", "Pulumi.example.yaml"), "utf8")) as StackDocument;
  document.config["nodefleet:pools"] = (document.config["nodefleet:pools"] as Pool[]).filter((p) => p.provider === "hcloud");
  return document;
}

/** Nothing a run writes: no store, lock, engine state or simulated cloud. */
function assertNothingWritten(dataDir: string): void {
  const left = fs.existsSync(dataDir) ? fs.readdirSync(dataDir) : [];
  assert.deepEqual(left, [], `nothing written to ${dataDir}`);
}

describe("bad input to the CLI: a clear error, nothing changed", function () {
  this.timeout(300_000);
  let project: string;

  const writeStack = (stack: string, document: StackDocument) =>
    fs.writeFileSync(path.join(project, "stacks", `Pulumi.${stack}.yaml`), stringify(document));
  const git = (...args: string[]) =>
    execFileSync("git", ["-c", "user.name=nodefleet-test", "-c", "user.email=test@example.invalid", ...args], {
      cwd: project,
      stdio: "pipe",
    });

  before(() => {
    project = tempDataDir("nodefleet-bad-input-");
    fs.copyFileSync(path.join(REPOSITORY_ROOT, "Pulumi.yaml"), path.join(project, "Pulumi.yaml"));
    fs.mkdirSync(path.join(project, "stacks"));
    writeStack("example", exampleDocument());
    writeStack("staging", exampleDocument());
    git("init", "--quiet");
    git("add", ".");
    git("commit", "--quiet", "-m", "base");
  });

  afterEach(() => {
    // Each test leaves the committed stacks as they were.
    writeStack("example", exampleDocument());
    for (const file of fs.readdirSync(path.join(project, "stacks"))) {
      if (!["Pulumi.example.yaml", "Pulumi.staging.yaml"].includes(file)) fs.rmSync(path.join(project, "stacks", file));
    }
  });

  describe("an unknown stack name", () => {
    const unknown = /stack prod: stacks\/Pulumi\.prod\.yaml does not exist \(stacks here: example, staging\)/;

    it("render names the stacks that exist", () => {
      const result = nodefleet(["render", "--stack", "prod"], project);
      assert.equal(result.status, 1);
      assert.equal(result.stdout, "");
      assert.match(result.stderr, unknown);
    });

    it("preview names the stacks that exist, and creates no engine data", () => {
      const dataDir = path.join(project, "preview-data");
      const result = nodefleet(["preview", "--stack", "prod", "--engine", "simulated", "--data-dir", dataDir, "--json"], project);
      assert.equal(result.status, 1);
      const report = JSON.parse(result.stdout) as PreviewReport;
      assert.deepEqual(
        report.stacks.map((s) => [s.stack, s.succeeded]),
        [["prod", false]],
      );
      assert.match(report.stacks[0]!.error ?? "", unknown);
      assert.match(result.stderr, unknown);
      assertNothingWritten(dataDir);
    });

    it("serve names the stacks that exist before it takes the data directory", () => {
      const dataDir = path.join(project, "serve-data");
      const result = nodefleet(["serve", "--stack", "prod", "--data-dir", dataDir, "--port", "0"], project, {
        NODEFLEET_API_TOKENS: `example:${TOKEN}`,
      });
      assert.equal(result.status, 1);
      assert.match(result.stderr, unknown);
      assertNothingWritten(dataDir);
    });
  });

  describe("a misspelt nodefleet: key (nodefleet:pool)", () => {
    beforeEach(() => {
      const document = exampleDocument();
      document.config["nodefleet:pool"] = document.config["nodefleet:pools"];
      delete document.config["nodefleet:pools"];
      writeStack("typo", document);
    });
    const didYouMean = /nodefleet:pool: unknown key in the nodefleet namespace \(did you mean nodefleet:pools\?\)/;

    it("render refuses it with the nearest valid key, rendering nothing", () => {
      const result = nodefleet(["render", "--stack", "typo", "--json"], project);
      assert.equal(result.status, 2, "an invalid stack config exits 2");
      assert.equal(result.stdout, "");
      assert.match(result.stderr, didYouMean);
    });

    it("preview fails with it", () => {
      const result = nodefleet(
        ["preview", "--stack", "typo", "--engine", "simulated", "--data-dir", path.join(project, "preview-typo"), "--json"],
        project,
      );
      assert.equal(result.status, 1);
      assert.match((JSON.parse(result.stdout) as PreviewReport).stacks[0]!.error ?? "", didYouMean);
    });

    it("serve refuses to start with it, writing nothing", () => {
      const dataDir = path.join(project, "serve-typo");
      const result = nodefleet(["serve", "--stack", "typo", "--data-dir", dataDir, "--port", "0"], project, {
        NODEFLEET_API_TOKENS: `example:${TOKEN}`,
      });
      assert.equal(result.status, 2, "an invalid stack config exits 2");
      assert.match(result.stderr, didYouMean);
      const left = fs.existsSync(dataDir) ? fs.readdirSync(dataDir) : [];
      assert.ok(!left.includes("simulated-cloud") && !left.includes("nodefleet.db") && !left.includes("nodefleet.lock"), left.join(", "));
    });
  });

  describe("no pools over a stack holding members", () => {
    it("preview refuses an empty and a missing pool list, naming nodefleet:allowEmptyFleet, and previews the deletes once it is set", () => {
      const refused =
        /nodefleet:pools: no pools are declared \(the key is missing or empty\), but the stack's last update holds 3 members \(hel1-general: 3\).*set nodefleet:allowEmptyFleet: true/s;
      const preview = () =>
        nodefleet(
          [
            "preview",
            "--stack",
            "example",
            "--engine",
            "simulated",
            "--base-ref",
            "HEAD",
            "--data-dir",
            path.join(project, "preview-empty"),
            "--json",
          ],
          project,
        );
      for (const edit of [
        (d: StackDocument) => (d.config["nodefleet:pools"] = []),
        (d: StackDocument) => delete d.config["nodefleet:pools"],
      ]) {
        const document = exampleDocument();
        edit(document);
        writeStack("example", document);
        const result = preview();
        assert.equal(result.status, 1, result.stderr);
        assert.match((JSON.parse(result.stdout) as PreviewReport).stacks[0]!.error ?? "", refused);
      }
      const allowed = exampleDocument();
      allowed.config["nodefleet:pools"] = [];
      allowed.config["nodefleet:allowEmptyFleet"] = true;
      writeStack("example", allowed);
      const result = preview();
      assert.equal(result.status, 0, result.stderr);
      const stack = (JSON.parse(result.stdout) as PreviewReport).stacks[0]!;
      assert.ok(
        stack.steps.some((s) => s.op === "delete" && s.type === "hcloud:index/server:Server"),
        "asked for explicitly, the servers' deletes are previewed",
      );
    });
  });

  it("a missing limits.maxNodes is required for an autoscaled pool, in plain words", () => {
    const document = exampleDocument();
    const burst = (document.config["nodefleet:pools"] as Pool[]).find((p) => p.mode === "autoscaled")!;
    delete (burst.limits as Record<string, unknown>).maxNodes;
    writeStack("nomax", document);
    const result = nodefleet(["render", "--stack", "nomax"], project);
    assert.equal(result.status, 2, "an invalid stack config exits 2");
    assert.match(result.stderr, /nodefleet:pools\[1\]\.limits\.maxNodes: required for an autoscaled pool/);
    assert.doesNotMatch(result.stderr, /Invalid input|expected number, received/);
  });

  describe("nodes create with a static pool", () => {
    let api: TestApi;
    before(async () => {
      api = await startTestApi();
    });
    after(async () => api?.close());

    it("names the pool's mode and lists the autoscaled pools; nothing is admitted", async () => {
      const args = [
        "nodes",
        "create",
        "--url",
        api.baseUrl,
        "--cluster",
        "example",
        "--unique-id",
        "static-pool-node",
        "--pool",
        "hel1-general",
      ];
      const result = await nodefleetAsync(args, REPOSITORY_ROOT, { NODEFLEET_API_TOKEN: TOKEN });
      assert.equal(result.status, 1);
      assert.match(
        result.stderr,
        /404 PoolNotFound: pool hel1-general of cluster example is a static pool \(provider hcloud, nodefleet:pools\[0\]\).*the autoscaled pools are: hel1-burst/,
      );
      assert.equal(api.app.nodefleet.store.byUniqueId("example", "static-pool-node"), undefined);
    });
  });
});
