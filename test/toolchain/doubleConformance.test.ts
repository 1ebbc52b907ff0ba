/**
 * The hcloud, command and scaleway plugin doubles against the SDKs installed from npm (issues #34, #37): every
 * property a double's Go source reads or writes exists in the SDK's declarations for that resource
 * or look-up; the hcloud double's required inputs are the SDK's required Args (plus the extras
 * FIDELITY.md states) and its replace keys are upstream's as FIDELITY.md lists them. The double's
 * side comes from its source and its own `--dump-schema`, never from a list kept beside it.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { findTool } from "../../automation/engine/toolchain";
import { doubleSourceKeys, fileDeclaring } from "../support/doubleSourceKeys";
import { SdkPackage, type SdkType } from "../support/sdkDeclarations";
import { REPOSITORY_ROOT } from "../support/serveProcess";
import { missingTools, skipUnlessAvailable } from "../support/toolchainRequirement";

const PROVIDERS = join(REPOSITORY_ROOT, "toolchain", "providers");
const FIDELITY = join(PROVIDERS, "FIDELITY.md");

/** Each Go file of a double with the SDK declarations it serves: the tokens whose struct or function it declares. */
function servedBy(dir: string, tokens: ReadonlyMap<string, string>): Map<string, string[]> {
  const files = new Map<string, string[]>();
  for (const [token, declared] of tokens) {
    const file = fileDeclaring(dir, declared);
    files.set(file, [...(files.get(file) ?? []), token]);
  }
  return files;
}

/** Keys of the double's source missing from the SDK: a file serving tokens against those, a helper against all of the plugin's. */
function unknownKeys(dir: string, tokens: ReadonlyMap<string, string>, sdk: ReadonlyMap<string, SdkType>): string[] {
  const served = servedBy(dir, tokens);
  const everything = new Set([...sdk.values()].flatMap((t) => [...t.properties]));
  const problems: string[] = [];
  for (const [file, keys] of doubleSourceKeys(dir)) {
    const against = served.get(file);
    const known = against ? new Set(against.flatMap((token) => [...sdk.get(token)!.properties])) : everything;
    for (const key of keys) {
      // Every resource and look-up result has an id.
      if (key !== "id" && !known.has(key))
        problems.push(`${file}: "${key}" is in none of ${against?.join(", ") ?? "the plugin's SDK types"}`);
    }
  }
  return problems;
}

/** The "### Replace keys" table of FIDELITY.md's hcloud network section, by resource token. */
function fidelityReplaceKeys(): Map<string, { replaceKeys: string[]; extraRequired: string[] }> {
  const text = readFileSync(FIDELITY, "utf8");
  const section = text.slice(text.indexOf("### Replace keys"));
  const table = section.slice(0, section.search(/\n## /) === -1 ? undefined : section.search(/\n## /));
  const names = (cell: string) =>
    cell.trim() === "none"
      ? []
      : cell
          .split(",")
          .map((n) => n.trim())
          .sort();
  const rows = new Map<string, { replaceKeys: string[]; extraRequired: string[] }>();
  for (const line of table.split("\n")) {
    const cells = line.split("|").slice(1, -1);
    const token = /^`(hcloud:[^`]+)`$/.exec(cells[0]?.trim() ?? "")?.[1];
    if (token) rows.set(token, { replaceKeys: names(cells[1]!), extraRequired: names(cells[2]!) });
  }
  return rows;
}

describe("the plugin doubles against the installed SDKs", function () {
  this.timeout(60_000);
  const hcloudDir = join(PROVIDERS, "cmd", "pulumi-resource-hcloud");
  const hcloudSdk = new SdkPackage(join(REPOSITORY_ROOT, "node_modules", "@pulumi", "hcloud"));
  // The double's main.go: resource tokens with the struct serving each, look-ups with their method.
  const hcloudMain = readFileSync(join(hcloudDir, "main.go"), "utf8");
  const hcloudTokens = new Map([
    ...[...hcloudMain.matchAll(/"(hcloud:index\/\w+:\w+)":\s+(?:(\w+)\{api\}|api\.(\w+))/g)].map((m) => [m[1]!, (m[2] ?? m[3])!] as const),
    ["pulumi:providers:hcloud", /Configure:\s+api\.(\w+)/.exec(hcloudMain)![1]!],
  ]);
  const hcloudTypes = new Map(
    [...hcloudTokens.keys()].map((token) => {
      if (token === "pulumi:providers:hcloud") return [token, hcloudSdk.type("provider.d.ts", "Provider", "ProviderArgs")] as const;
      const [, module, name] = /^hcloud:index\/(\w+):(\w+)$/.exec(token)!;
      const upper = name!.charAt(0).toUpperCase() + name!.slice(1);
      const declarations = name!.startsWith("get") ? [`${upper}Args`, `${upper}Result`] : [name!, `${name}Args`, `${name}State`];
      return [token, hcloudSdk.type(`${module}.d.ts`, ...declarations)] as const;
    }),
  );

  it("finds the double's resources and look-ups in its main.go", () => {
    assert.deepEqual([...hcloudTokens.keys()].sort(), [
      "hcloud:index/firewall:Firewall",
      "hcloud:index/getFirewall:getFirewall",
      "hcloud:index/getImage:getImage",
      "hcloud:index/getNetwork:getNetwork",
      "hcloud:index/network:Network",
      "hcloud:index/networkRoute:NetworkRoute",
      "hcloud:index/networkSubnet:NetworkSubnet",
      "hcloud:index/placementGroup:PlacementGroup",
      "hcloud:index/server:Server",
      "pulumi:providers:hcloud",
    ]);
  });

  it("hcloud: every property the double reads or writes is in @pulumi/hcloud's declarations for it", () => {
    const keys = [...doubleSourceKeys(hcloudDir).values()].reduce((n, k) => n + k.size, 0);
    assert.ok(keys > 50, `only ${keys} keys found in the double's source: the patterns no longer match it`);
    assert.deepEqual(unknownKeys(hcloudDir, hcloudTokens, hcloudTypes), []);
  });

  it("command: every property the double reads or writes is in @pulumi/command's declarations for it", () => {
    const dir = join(PROVIDERS, "cmd", "pulumi-resource-command");
    const sdk = new SdkPackage(join(REPOSITORY_ROOT, "node_modules", "@pulumi", "command"));
    const tokens = new Map([
      ["command:local:Command", "localRunner"],
      ["command:remote:Command", "remoteRunner"],
    ]);
    const types = new Map([
      ["command:local:Command", sdk.type("local/command.d.ts", "Command", "CommandArgs")],
      ["command:remote:Command", sdk.type("remote/command.d.ts", "Command", "CommandArgs")],
    ]);
    assert.deepEqual(unknownKeys(dir, tokens, types), []);
  });

  it("catches a property the SDK does not have", () => {
    const types = new Map([["hcloud:index/network:Network", hcloudSdk.type("network.d.ts", "Network", "NetworkArgs", "NetworkState")]]);
    assert.ok(!types.get("hcloud:index/network:Network")!.properties.has("ipRanges"));
    assert.ok(types.get("hcloud:index/network:Network")!.properties.has("exposeRoutesToVswitch"));
    assert.ok(hcloudTypes.get("hcloud:index/firewall:Firewall")!.properties.has("sourceIps"), "nested rule properties are followed");
  });

  describe("the hcloud double's own report (--dump-schema)", function () {
    let schema: Record<string, { replaceKeys: string[]; required: string[] }>;
    before(function () {
      skipUnlessAvailable(this, missingTools("pulumi-resource-hcloud"));
      schema = JSON.parse(execFileSync(findTool("pulumi-resource-hcloud")!, ["--dump-schema"], { encoding: "utf8" })) as typeof schema;
    });

    it("requires what the SDK's Args require, plus only the extras FIDELITY.md states", () => {
      const fidelity = fidelityReplaceKeys();
      for (const [token, reported] of Object.entries(schema)) {
        const row = fidelity.get(token);
        assert.ok(row, `FIDELITY.md's "### Replace keys" table has no row for ${token}`);
        const wanted = [...new Set([...hcloudTypes.get(token)!.requiredArgs, ...row.extraRequired])].sort();
        assert.deepEqual(reported.required, wanted, `${token}: required inputs`);
      }
    });

    it("replaces on the keys FIDELITY.md lists as upstream's", () => {
      const fidelity = fidelityReplaceKeys();
      assert.deepEqual(Object.keys(schema).sort(), [...fidelity.keys()].sort(), "one row per resource the double serves");
      for (const [token, reported] of Object.entries(schema)) {
        const row = fidelity.get(token)!;
        assert.deepEqual(reported.replaceKeys, row.replaceKeys, `${token}: replace keys`);
        for (const key of row.replaceKeys)
          assert.ok(hcloudTypes.get(token)!.properties.has(key), `${token}: replace key ${key} is no SDK input`);
      }
    });
  });

  describe("scaleway", function () {
    const dir = join(PROVIDERS, "cmd", "pulumi-resource-scaleway");
    const sdk = new SdkPackage(join(REPOSITORY_ROOT, "node_modules", "@pulumiverse", "scaleway"));
    const main = readFileSync(join(dir, "main.go"), "utf8");
    const tokens = new Map([
      ...[...main.matchAll(/"(scaleway:\w+\/\w+:\w+)":\s+(?:(\w+)\{api\}|api\.(\w+))/g)].map((m) => [m[1]!, (m[2] ?? m[3])!] as const),
      ["pulumi:providers:scaleway", /Configure:\s+api\.(\w+)/.exec(main)![1]!],
    ]);
    const types = new Map(
      [...tokens.keys()].map((token) => {
        if (token === "pulumi:providers:scaleway") return [token, sdk.type("provider.d.ts", "Provider", "ProviderArgs")] as const;
        const [, module, file, name] = /^scaleway:(\w+)\/(\w+):(\w+)$/.exec(token)!;
        const upper = name!.charAt(0).toUpperCase() + name!.slice(1);
        const declarations = name!.startsWith("get") ? [`${upper}Args`, `${upper}Result`] : [name!, `${name}Args`, `${name}State`];
        return [token, sdk.type(`${module}/${file}.d.ts`, ...declarations)] as const;
      }),
    );

    it("finds the double's resources and look-ups in its main.go", () => {
      assert.deepEqual([...tokens.keys()].sort(), [
        "pulumi:providers:scaleway",
        "scaleway:elasticmetal/getOffer:getOffer",
        "scaleway:elasticmetal/getOption:getOption",
        "scaleway:elasticmetal/getOs:getOs",
        "scaleway:elasticmetal/getServer:getServer",
        "scaleway:elasticmetal/server:Server",
        "scaleway:ipam/ip:Ip",
        "scaleway:network/getPrivateNetwork:getPrivateNetwork",
        "scaleway:network/privateNetwork:PrivateNetwork",
      ]);
    });

    it("reads and writes only properties of @pulumiverse/scaleway's declarations", () => {
      const keys = [...doubleSourceKeys(dir).values()].reduce((n, k) => n + k.size, 0);
      assert.ok(keys > 50, `only ${keys} keys found in the double's source: the patterns no longer match it`);
      assert.deepEqual(unknownKeys(dir, tokens, types), []);
    });

    it("reports (--dump-schema) the SDK's required Args and replace keys that are SDK inputs", function () {
      skipUnlessAvailable(this, missingTools("pulumi-resource-scaleway"));
      const schema = JSON.parse(execFileSync(findTool("pulumi-resource-scaleway")!, ["--dump-schema"], { encoding: "utf8" })) as Record<
        string,
        { replaceKeys: string[]; required: string[] }
      >;
      assert.deepEqual(
        Object.keys(schema).sort(),
        [...tokens.keys()].filter((t) => /:[A-Z]\w*$/.test(t) && !t.startsWith("pulumi:")).sort(),
      );
      for (const [token, reported] of Object.entries(schema)) {
        assert.deepEqual(reported.required, [...types.get(token)!.requiredArgs].sort(), `${token}: required inputs`);
        for (const key of reported.replaceKeys)
          assert.ok(types.get(token)!.properties.has(key), `${token}: replace key ${key} is no SDK input`);
      }
    });
  });
});
