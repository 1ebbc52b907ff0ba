/**
 * nodefleet from a team's own project: the files `nodefleet init` writes, and the whole path from the
 * packed tarball (`npm pack`): install it into an empty npm project, `nodefleet init`, `render`, and
 * on the local cloud `pulumi preview` of the project's own program against its `local` stack.
 */
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse } from "yaml";
import { ProjectTemplateError, projectTemplate } from "../../../automation/init/projectTemplate";
import { type LocalCloud, startLocalCloud } from "../../../automation/local/localCloud";
import { runPulumi } from "../../../automation/local/localStack";
import { REPOSITORY_ROOT } from "../../support/serveProcess";
import { LOCAL_CLOUD_TOOLS, missingTools, skipUnlessAvailable } from "../../support/toolchainRequirement";
import { until } from "../../support/until";

const quiet = { info() {}, warn() {} };
const template = (over: Partial<Parameters<typeof projectTemplate>[0]> = {}) =>
  projectTemplate({
    projectName: "my-fleet",
    stackName: "prod",
    exampleStack: readFileSync(join(REPOSITORY_ROOT, "stacks", "Pulumi.example.yaml"), "utf8"),
    previewWorkflow: readFileSync(join(REPOSITORY_ROOT, ".github", "workflows", "preview.yml"), "utf8"),
    ...over,
  });

describe("nodefleet init: the project template", function () {
  it("writes a project whose program is nodefleet's, with the stack's config in stacks/", function () {
    const files = template();
    const project = parse(files["Pulumi.yaml"]!) as Record<string, unknown>;
    assert.equal(project.name, "my-fleet");
    assert.equal(project.main, "index.ts", "a file, so the runtime never falls back to package.json's main");
    assert.equal(project.stackConfigDir, "stacks");
    assert.deepEqual(
      project.plugins,
      { providers: [{ name: "nodefleet", path: "./node_modules/nodefleet/bin" }] },
      "plain pulumi commands find nodefleet's own plugin in the installed package",
    );
    assert.match(files["index.ts"]!, /import \{ fleetStackProgram \} from "nodefleet";\s+export = fleetStackProgram;/);
    const config = (parse(files["stacks/Pulumi.prod.yaml"]!) as { config: Record<string, any> }).config;
    assert.equal(config["nodefleet:cluster"].id, "prod");
    assert.ok(
      config["nodefleet:pools"].length > 0 && config["nodefleet:pools"].every((p: { provider: string }) => p.provider === "hcloud"),
      "Hetzner Cloud pools only",
    );
    assert.match(files[".github/workflows/preview.yml"]!, /^\s*PREVIEW_STACKS: prod$/m);
    assert.match(files[".gitignore"]!, /^stacks\/Pulumi\.local\.yaml$/m);
    assert.equal(files["package.json"], undefined, "no package.json unless asked for");
    assert.equal(JSON.parse(template({ nodefleetDependency: "^1.2.3" })["package.json"]!).dependencies.nodefleet, "^1.2.3");
  });

  it("refuses a project or stack name Pulumi would not take, naming the option", function () {
    assert.throws(
      () => template({ projectName: "my fleet" }),
      (e: unknown) => e instanceof ProjectTemplateError && /--name "my fleet"/.test(e.message),
    );
    assert.throws(
      () => template({ stackName: "../prod" }),
      (e: unknown) => e instanceof ProjectTemplateError && /--stack "\.\.\/prod"/.test(e.message),
    );
  });
});

describe("nodefleet from the packed tarball in a project of one's own", function () {
  this.timeout(900_000);
  let dir: string;
  let project: string;
  const npx = (args: string[], env: NodeJS.ProcessEnv = process.env) =>
    execFileSync("npx", ["--no-install", "nodefleet", ...args], { cwd: project, env, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });

  before(function () {
    dir = mkdtempSync(join(tmpdir(), "nodefleet-own-project-"));
    // `npm test` has just built dist/; packing must not build again.
    execFileSync("npm", ["pack", "--ignore-scripts", "--pack-destination", dir], { cwd: REPOSITORY_ROOT, stdio: "ignore" });
    const tarball = join(
      dir,
      readdirSync(dir).find((f) => f.endsWith(".tgz"))!,
    );
    project = join(dir, "my-fleet");
    mkdirSync(project);
    writeFileSync(join(project, "package.json"), JSON.stringify({ name: "my-fleet", private: true }));
    // Scripts off: better-sqlite3's native build is for `serve`, which this test does not start.
    execFileSync("npm", ["install", tarball, "--ignore-scripts", "--prefer-offline", "--no-audit", "--no-fund"], {
      cwd: project,
      stdio: "ignore",
    });
  });

  after(function () {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("ships the license package.json names, the compiled library with its types, and the CLI", function () {
    const installed = join(project, "node_modules", "nodefleet");
    const pkg = JSON.parse(readFileSync(join(installed, "package.json"), "utf8")) as {
      license: string;
      main: string;
      types: string;
      private?: boolean;
    };
    assert.equal(pkg.private, undefined);
    assert.equal(pkg.license, "Apache-2.0");
    assert.match(readFileSync(join(installed, "LICENSE"), "utf8"), /Apache License\s+Version 2\.0/);
    assert.ok(existsSync(join(installed, pkg.types)), pkg.types);
    assert.ok(!existsSync(join(installed, "dist", "test")), "tests are not shipped");
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const library = require(join(installed, pkg.main)) as Record<string, unknown>;
    assert.equal(typeof library.Fleet, "function");
    assert.equal(typeof library.fleetStackProgram, "function");
  });

  it("init writes the project, refuses to overwrite it, and render shows the stack's fleet", function () {
    assert.match(npx(["init", "--stack", "dev"]), /wrote Pulumi\.yaml, index\.ts/);
    assert.ok(existsSync(join(project, "stacks", "Pulumi.dev.yaml")));
    assert.throws(
      () => npx(["init", "--stack", "dev"]),
      (e: { stderr?: string }) => /already exist.*nothing was written/.test(e.stderr ?? ""),
    );
    const rendered = JSON.parse(npx(["render", "--stack", "dev", "--json"])) as { resources: Array<{ type: string }> };
    assert.ok(rendered.resources.filter((r) => r.type === "hcloud:index/server:Server").length >= 1, "the static pool's servers");
  });

  it("nodefleet preview (simulated) previews the project's stack", function () {
    const report = JSON.parse(npx(["preview", "--stack", "dev", "--engine", "simulated", "--json"])) as {
      project: string;
      succeeded: boolean;
      stacks: Array<{ pools: Array<{ pool: string; nodesAfter: number }> }>;
    };
    assert.equal(report.project, "my-fleet", "the project's own Pulumi.yaml");
    assert.ok(report.succeeded);
    assert.ok(
      report.stacks[0]!.pools.some((p) => p.nodesAfter > 0),
      JSON.stringify(report.stacks[0]!.pools),
    );
  });

  it("serve runs the project's stack on its embedded defaults", async function () {
    // npm's install script would build better-sqlite3's native module; this repository's build stands in.
    symlinkSync(join(REPOSITORY_ROOT, "node_modules", "better-sqlite3", "build"), join(project, "node_modules", "better-sqlite3", "build"));
    const serve = spawn(
      "npx",
      ["--no-install", "nodefleet", "serve", "--stack", "dev", "--engine", "simulated", "--port", "0", "--data-dir", join(dir, "serve")],
      { cwd: project, stdio: ["ignore", "ignore", "pipe"], detached: true },
    );
    let stderr = "";
    serve.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    try {
      const url = await until(
        "serve to listen",
        () => /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(stderr)?.[1],
        60_000,
        () => stderr,
      );
      const cluster = await until(
        "the dev cluster to be served",
        async () => {
          const response = await fetch(`${url}/readyz`);
          return response.ok ? ((await response.json()) as { status: string }) : undefined;
        },
        60_000,
        () => stderr,
      );
      assert.ok(["ready", "starting", "degraded"].includes(cluster.status), JSON.stringify(cluster));
      const token = readFileSync(join(dir, "serve", "api-token"), "utf8").trim();
      const response = await fetch(`${url}/api/v1/clusters/dev`, { headers: { authorization: `Bearer ${token}` } });
      const body = (await response.json()) as { pools?: Array<{ name: string }> };
      assert.equal(response.status, 200, JSON.stringify(body));
      assert.ok(
        body.pools?.some((p) => p.name === "hel1-burst"),
        JSON.stringify(body),
      );
    } finally {
      if (serve.exitCode === null) {
        process.kill(-serve.pid!, "SIGTERM");
        await new Promise((resolve) => serve.once("exit", resolve));
      }
    }
  });

  describe("on the local cloud (real engine, real control plane)", function () {
    let cloud: LocalCloud;

    before(async function () {
      skipUnlessAvailable(this, missingTools(...LOCAL_CLOUD_TOOLS));
      cloud = await startLocalCloud({ dataDir: join(dir, "data"), hcloudPort: 0, logger: quiet, projectDir: project });
    });

    after(async function () {
      await cloud?.stop();
    });

    it("pulumi preview runs the project's own two-line program and declares the fleet", async function () {
      assert.ok(cloud.stackFile?.startsWith(join(project, "stacks")), cloud.stackFile);
      const preview = await runPulumi(["preview", "--stack", "local", "--non-interactive"], project, cloud.env);
      // The CLI shows type tokens in their short form (hcloud:index:Server).
      assert.equal(preview.match(/\+\s+hcloud:index:Server\s/g)?.length, 3, preview);
      assert.match(preview, /\+\s+hcloud:index:Network\s/);
      assert.match(preview, /\+\s+hcloud:index:Firewall\s/);
      // nodefleet's own plugin, found through the project's Pulumi.yaml in the installed package.
      assert.equal(preview.match(/\+\s+nodefleet:kubernetes:NodeBootstrapToken\s/g)?.length, 3, preview);
    });
  });
});
