/**
 * Which provider plugins the engine's runs use (docs/engines.md): the SDK-pinned versions, the
 * choice NODEFLEET_PLUGINS makes, and on the real CLI: upstream's installed into the Pulumi home
 * (from a plugin directory, or downloaded from a local stand-in for get.pulumi.com), a run that
 * ignores plugins on PATH, and a service that says which plugin is missing and starts no run.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { createReadStream, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { type Server, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { basename, dirname, join } from "node:path";
import { NodefleetApiError } from "../../../automation/client/nodefleetClient";
import { AutomationEngine } from "../../../automation/engine/automationEngine";
import {
  ProviderPluginsMissingError,
  apiStackPlugins,
  fleetPlugins,
  installCommand,
  pluginCacheEntry,
  pluginSource,
  sdkPlugin,
} from "../../../automation/engine/providerPlugins";
import { PulumiCliVersionError, requirePulumiCommand, supportedCliRange } from "../../../automation/engine/pulumiCli";
import { findTool, pulumiProcessEnv, toolchainBinDir } from "../../../automation/engine/toolchain";
import type { FleetSpec } from "../../../components/fleet/fleetSpec";
import { type ServeProcess, startServe } from "../../support/serveProcess";
import { tempDirPerTest } from "../../support/tempDirPerTest";
import { missingTools, skipUnlessAvailable } from "../../support/toolchainRequirement";
import { until } from "../../support/until";

const PROGRAM_MODULE = join(__dirname, "..", "..", "support", "engineTestProgram.js");

function lockedVersion(pkg: string): string {
  const lock = JSON.parse(readFileSync(join(__dirname, "..", "..", "..", "..", "package-lock.json"), "utf8")) as {
    packages: Record<string, { version: string }>;
  };
  return lock.packages[`node_modules/${pkg}`]!.version.replace(/^v/, "");
}

describe("provider plugins: which a run uses", function () {
  const dataDir = tempDirPerTest("nodefleet-plugin-env-");

  it("reads each plugin's version from the installed SDK, as package-lock.json pins it", function () {
    for (const [sdk, name] of [
      ["@pulumi/hcloud", "hcloud"],
      ["@pulumi/kubernetes", "kubernetes"],
      ["@pulumi/random", "random"],
      ["@pulumiverse/time", "time"],
      ["@pulumi/command", "command"],
      ["@pulumiverse/scaleway", "scaleway"],
    ] as const) {
      const plugin = sdkPlugin(sdk);
      assert.equal(plugin.name, name);
      assert.equal(plugin.version, lockedVersion(sdk), sdk);
    }
    // pulumiverse plugins come from GitHub releases, as their SDKs say.
    assert.match(sdkPlugin("@pulumiverse/time").server ?? "", /^github:\/\//);
  });

  it("needs scaleway only for the fleets whose pools use it", function () {
    // Only the pools' providers decide.
    const names = (...providers: string[]) =>
      fleetPlugins({ pools: providers.map((provider) => ({ provider })) } as unknown as FleetSpec).map((p) => p.name);
    assert.deepEqual(names("hcloud", "hcloud"), ["hcloud", "kubernetes", "random", "time", "command"]);
    assert.deepEqual(names("hcloud", "scaleway-elastic-metal"), ["hcloud", "kubernetes", "random", "time", "command", "scaleway"]);
    assert.deepEqual(names("hetzner-robot"), ["hcloud", "kubernetes", "random", "time", "command"]);
    assert.deepEqual(
      apiStackPlugins().map((p) => p.name),
      ["hcloud", "kubernetes", "random", "time"],
    );
  });

  it("uses upstream's unless NODEFLEET_PLUGINS=toolchain, and refuses any other value naming the variable", function () {
    assert.equal(pluginSource({}), "upstream");
    assert.equal(pluginSource({ NODEFLEET_PLUGINS: "upstream" }), "upstream");
    assert.equal(pluginSource({ NODEFLEET_PLUGINS: "toolchain" }), "toolchain");
    assert.throws(
      () => pluginSource({ NODEFLEET_PLUGINS: "ours" }),
      /NODEFLEET_PLUGINS: must be one of upstream, toolchain \(got "ours"\)/,
    );
  });

  it("gives upstream runs no plugin from PATH and toolchain runs the toolchain's", function () {
    const env = { PATH: "/usr/bin", NODEFLEET_TOOLCHAIN_DIR: "/opt/toolchain" };
    const upstream = pulumiProcessEnv(dataDir(), env);
    assert.equal(upstream.PULUMI_IGNORE_AMBIENT_PLUGINS, "true");
    assert.equal(upstream.PATH, "/usr/bin");
    const doubles = pulumiProcessEnv(dataDir(), { ...env, NODEFLEET_PLUGINS: "toolchain" });
    assert.equal(doubles.PULUMI_IGNORE_AMBIENT_PLUGINS, undefined);
    assert.ok(doubles.PATH!.split(":").includes("/opt/toolchain/bin"), doubles.PATH);
  });

  it("names the missing plugin, its version, its SDK and the commands that provide it", function () {
    const hcloud = sdkPlugin("@pulumi/hcloud");
    const error = new ProviderPluginsMissingError(
      [hcloud],
      "/srv/data/pulumi-home",
      new Map([["hcloud", "downloading it failed: no route"]]),
    );
    assert.match(error.message, new RegExp(`hcloud ${hcloud.version} \\(pinned by @pulumi/hcloud; downloading it failed: no route\\)`));
    assert.ok(error.message.includes(`\`PULUMI_HOME=/srv/data/pulumi-home pulumi plugin install resource hcloud ${hcloud.version}\``));
    assert.ok(error.message.includes(`--file <pulumi-resource-hcloud binary>`));
    assert.match(installCommand("/h", sdkPlugin("@pulumiverse/time")), /pulumi plugin install resource time \S+ --server github:\/\//);
  });
});

describe("provider plugins on the real CLI", function () {
  this.timeout(300_000);
  const plugins = apiStackPlugins();
  let root: string;
  let count = 0;
  // A fresh directory per use (hooks included): each engine its own empty Pulumi home.
  const dir = () => join(root, `d${count}`);

  before(function () {
    skipUnlessAvailable(this, missingTools("pulumi", "pulumi-language-nodejs", ...plugins.map((p) => `pulumi-resource-${p.name}`)));
    root = mkdtempSync(join(tmpdir(), "nodefleet-plugins-"));
  });

  beforeEach(() => (count += 1));

  after(() => root && rmSync(root, { recursive: true, force: true }));

  /** A plugin directory laid out as a plugin cache, holding the toolchain's builds under the pinned versions. */
  function pluginDirectory(): string {
    const pluginDir = join(dir(), "plugins");
    for (const plugin of plugins) {
      const entry = pluginCacheEntry(pluginDir, plugin);
      mkdirSync(join(entry, ".."), { recursive: true });
      symlinkSync(findTool(`pulumi-resource-${plugin.name}`)!, entry);
    }
    return pluginDir;
  }

  async function engine(env: Record<string, string>): Promise<AutomationEngine> {
    return AutomationEngine.create({ dataDir: join(dir(), "data"), env: { ...process.env, PULUMI_CONFIG_PASSPHRASE: "plugins", ...env } });
  }

  it("checks the CLI's version against the supported range", async function () {
    const command = await requirePulumiCommand();
    assert.ok(command.version, "the CLI reports a version");
    assert.match(supportedCliRange(), /^>=3\.\d+\.\d+ <4\.0\.0$/);
    assert.match(
      new PulumiCliVersionError("/usr/bin/pulumi", "v3.100.0").message,
      /is v3\.100\.0; nodefleet supports >=3\.\d+\.\d+ <4\.0\.0/,
    );
  });

  it("installs upstream plugins from the operator's plugin directory, then finds them in the Pulumi home", async function () {
    const automation = await engine({ NODEFLEET_PLUGINS: "upstream", NODEFLEET_PLUGIN_DIR: pluginDirectory() });
    const first = await automation.resolvePlugins(plugins);
    assert.deepEqual(
      first.map((r) => [r.plugin.name, r.from]),
      plugins.map((p) => [p.name, "plugin directory"]),
    );
    for (const r of first) assert.ok(r.path.startsWith(join(dir(), "data", "pulumi-home", "plugins")), r.path);
    const again = await automation.resolvePlugins(plugins);
    assert.deepEqual(new Set(again.map((r) => r.from)), new Set(["plugin cache"]));
  });

  describe("downloads", function () {
    let server: Server;
    let requested: string[];

    before(async function () {
      // A stand-in for get.pulumi.com and GitHub releases on loopback: each plugin as Pulumi's tarball.
      requested = [];
      // Each plugin as Pulumi's release tarball (fast compression: the kubernetes plugin is large).
      const tarballs = join(root, "tarballs");
      mkdirSync(tarballs, { recursive: true });
      for (const plugin of plugins) {
        const binary = findTool(`pulumi-resource-${plugin.name}`)!;
        const file = join(tarballs, `pulumi-resource-${plugin.name}-v${plugin.version}-linux-amd64.tar.gz`);
        execFileSync("tar", ["--use-compress-program=gzip -1", "-chf", file, "-C", dirname(binary), basename(binary)]);
      }
      server = createServer((request, response) => {
        requested.push(request.url ?? "");
        const name = basename(request.url ?? "");
        const file = join(tarballs, name);
        if (!/^pulumi-resource-[a-z]+-v[^/]+\.tar\.gz$/.test(name) || !existsSync(file)) return void response.writeHead(404).end();
        // Pulumi checks the length it was promised against what it copied.
        response.writeHead(200, { "content-type": "application/gzip", "content-length": statSync(file).size });
        createReadStream(file).pipe(response);
      });
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    });

    after(async function () {
      server?.closeAllConnections();
      if (server) await new Promise((resolve) => server.close(resolve));
    });

    it("downloads upstream plugins the way `pulumi plugin install` does when no directory has them", async function () {
      const { port } = server.address() as AddressInfo;
      const automation = await engine({
        NODEFLEET_PLUGINS: "upstream",
        PULUMI_PLUGIN_DOWNLOAD_URL_OVERRIDES: `.*=http://127.0.0.1:${port}`,
      });
      const resolved = await automation.resolvePlugins(plugins);
      assert.deepEqual(new Set(resolved.map((r) => r.from)), new Set(["download"]));
      for (const plugin of plugins)
        assert.ok(
          requested.some((url) => url.includes(`pulumi-resource-${plugin.name}-v${plugin.version}-`)),
          plugin.name,
        );
    });

    it("fails naming every plugin it cannot have, with the command, and installs nothing half-way", async function () {
      const automation = await engine({ NODEFLEET_PLUGINS: "upstream", PULUMI_PLUGIN_DOWNLOAD_URL_OVERRIDES: ".*=http://127.0.0.1:9" });
      await assert.rejects(automation.resolvePlugins(plugins), (error: unknown) => {
        assert.ok(error instanceof ProviderPluginsMissingError, String(error));
        assert.deepEqual(
          error.missing.map((p) => p.name),
          plugins.map((p) => p.name),
        );
        for (const plugin of plugins)
          assert.ok(error.message.includes(`pulumi plugin install resource ${plugin.name} ${plugin.version}`), error.message);
        return true;
      });
    });
  });

  it("runs on the plugins in the Pulumi home, never on a double on PATH", async function () {
    const stack = {
      stackName: "upstream",
      program: { module: PROGRAM_MODULE, args: { mode: "local" } },
      config: { "enginetest:members": { value: [{ name: "m0", serverType: "cpx21" }] } },
    };
    // The toolchain's random plugin on PATH, and none installed: an upstream run must not load it.
    const onPath = { PATH: `${toolchainBinDir()}:${process.env.PATH}`, NODEFLEET_PLUGINS: "upstream" };
    const bare = await engine(onPath);
    await assert.rejects(bare.up(stack), /no resource plugin 'pulumi-resource-random' found/);
    const installed = await engine({ ...onPath, NODEFLEET_PLUGIN_DIR: pluginDirectory() });
    await installed.resolvePlugins([sdkPlugin("@pulumi/random")]);
    const result = await installed.up(stack);
    assert.equal(result.succeeded, true);
    assert.ok(
      result.steps.some((step) => step.op === "create" && step.type === "random:index/randomString:RandomString"),
      JSON.stringify(result.steps),
    );
  });

  describe("a service whose plugins cannot be had", function () {
    let serve: ServeProcess | undefined;

    before(async function () {
      serve = await startServe(
        join(root, "serve"),
        { NODEFLEET_PLUGINS: "upstream", PULUMI_PLUGIN_DOWNLOAD_URL_OVERRIDES: ".*=http://127.0.0.1:9", NODEFLEET_LOG_LEVEL: "info" },
        { engine: "automation", startTimeoutMs: 120_000 },
      );
    });

    after(async function () {
      serve?.child.kill("SIGTERM");
      await serve?.exited();
    });

    it("says on /readyz and in its log which plugin and version is missing and how to install it", async function () {
      const hcloud = sdkPlugin("@pulumi/hcloud");
      const body = await until(
        "readyz to name the missing plugins",
        async () => {
          const answer = (await (await fetch(`${serve!.baseUrl}/readyz`)).json()) as { status: string; details: { engine?: string } };
          return answer.status === "degraded" ? answer : undefined;
        },
        90_000,
      );
      assert.match(body.details.engine ?? "", new RegExp(`hcloud ${hcloud.version} \\(pinned by @pulumi/hcloud`));
      assert.match(body.details.engine ?? "", new RegExp(`pulumi plugin install resource hcloud ${hcloud.version}`));
      assert.match(serve!.stderr(), /provider plugins missing: no engine run starts/);
    });

    it("refuses a create with 503 naming the plugins, and accepts nothing", async function () {
      await assert.rejects(serve!.client.createNode({ uniqueID: "no-plugins", pool: "hel1-burst" }), (error: unknown) => {
        assert.ok(error instanceof NodefleetApiError, String(error));
        assert.equal(error.status, 503);
        assert.match(error.message, /the engine cannot run: provider plugins missing/);
        return true;
      });
      assert.deepEqual(await serve!.client.listNodes(), []);
    });
  });
});
