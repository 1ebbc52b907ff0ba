/**
 * The preview guard's fingerprint as a function: each part moves with what it covers and with
 * nothing else (the members never count: their own resources come from frozen snapshots), the
 * program's identity follows the files its module loads and its package version, the state-derived
 * refresh targets of a deleting run, and the store that keeps the fingerprint across restarts.
 */
import { strict as assert } from "node:assert";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import fc from "fast-check";
import type { StackConfigValue, StackDefinition, StoredResource } from "../../../automation/engine/stackEngine";
import { apiStackDefinition, type SharedResources } from "../../../automation/reconciler/apiStack";
import { changedParts, guardFingerprint, programIdentity, withState } from "../../../automation/reconciler/guardFingerprint";
import { refreshTargetsFromState } from "../../../automation/reconciler/refreshBeforeDelete";
import { openDatabase } from "../../../automation/store/database";
import { FINGERPRINT_PARTS, GuardFingerprints, type GuardFingerprint } from "../../../automation/store/guardFingerprints";
import type { Claim } from "../../../automation/store/claimStore";
import { exampleConfig, tempDataDir } from "../../support/apiHarness";

const PROGRAM = "program-identity";
const STATE = { digest: "state-1" };
const shared: SharedResources = {
  network: { id: 7, name: "example-net", labels: { "nodefleet.io/cluster": "example" } },
  firewall: { id: 8, name: "example-nodes", labels: { "nodefleet.io/cluster": "example" } },
};
const member = (nodeId: string) =>
  ({ nodeId, pool: "hel1-burst", snapshot: { serverType: "cpx21", placementSlot: 0 } }) as unknown as Claim;

function stackOf(input: { members?: string[]; config?: Record<string, StackConfigValue>; shared?: SharedResources } = {}): StackDefinition {
  return apiStackDefinition({
    clusterId: "example",
    members: (input.members ?? []).map(member),
    config: input.config ?? exampleConfig(),
    shared: input.shared ?? shared,
  });
}

const fingerprintOf = (stack: StackDefinition, env: NodeJS.ProcessEnv = {}, state = STATE) =>
  guardFingerprint({ stack, state, program: PROGRAM, env });

const hex = fc.stringMatching(/^[0-9a-f]{8}$/);
const fingerprints = fc.record(Object.fromEntries(FINGERPRINT_PARTS.map((p) => [p, hex])) as Record<keyof GuardFingerprint, typeof hex>);

describe("preview guard fingerprint", () => {
  const dirs: string[] = [];
  after(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  it("names exactly the parts that differ, and every part when none was stored", () => {
    fc.assert(
      fc.property(fingerprints, fc.subarray([...FINGERPRINT_PARTS]), (stored, moved) => {
        const current = Object.fromEntries(
          FINGERPRINT_PARTS.map((p) => [p, moved.includes(p) ? `${stored[p]}x` : stored[p]]),
        ) as GuardFingerprint;
        assert.deepEqual(changedParts(stored, current), moved);
      }),
    );
    assert.deepEqual(changedParts(undefined, fingerprintOf(stackOf())), [...FINGERPRINT_PARTS]);
  });

  it("ignores the members and the order of config keys", () => {
    const base = fingerprintOf(stackOf());
    fc.assert(
      fc.property(fc.uniqueArray(fc.stringMatching(/^k[0-9a-f]{12}$/), { maxLength: 20 }), fc.boolean(), (nodeIds, reverse) => {
        const config = exampleConfig();
        const entries = Object.entries(config);
        const reordered = Object.fromEntries(reverse ? entries.reverse() : entries);
        assert.deepEqual(fingerprintOf(stackOf({ members: nodeIds, config: reordered })), base);
      }),
    );
  });

  it("moves the config part with any config value, the shared part with the network or firewall, the state part with the state", () => {
    const base = fingerprintOf(stackOf());
    fc.assert(
      fc.property(fc.constantFrom(...Object.keys(exampleConfig())), fc.string({ minLength: 1 }), (key, value) => {
        const config = exampleConfig();
        config[key] = { ...config[key]!, value: { changed: value } };
        assert.deepEqual(changedParts(base, fingerprintOf(stackOf({ config }))), ["config"]);
      }),
    );
    const relabelled = { ...shared, firewall: { ...shared.firewall, labels: { ...shared.firewall.labels, extra: "1" } } };
    assert.deepEqual(changedParts(base, fingerprintOf(stackOf({ shared: relabelled }))), ["shared"]);
    assert.deepEqual(changedParts(base, fingerprintOf(stackOf({ shared: { ...shared, network: { ...shared.network, id: 9 } } }))), [
      "shared",
    ]);
    assert.deepEqual(changedParts(base, fingerprintOf(stackOf(), {}, { digest: "state-2" })), ["state"]);
    assert.deepEqual(changedParts(base, withState(base, { digest: "state-2" })), ["state"]);
    assert.deepEqual(changedParts(base, fingerprintOf(stackOf(), { NODEFLEET_PLUGINS: "toolchain" })), ["plugins"]);
  });

  it("moves the config part with the content of the kubeconfig KUBECONFIG names", () => {
    const dir = mkdtempSync(path.join(tmpdir(), "nodefleet-fingerprint-"));
    dirs.push(dir);
    const file = path.join(dir, "kubeconfig");
    writeFileSync(file, "apiVersion: v1\n");
    const env = { KUBECONFIG: file };
    const before = fingerprintOf(stackOf(), env);
    assert.deepEqual(fingerprintOf(stackOf(), env), before);
    writeFileSync(file, "apiVersion: v1\n# rotated\n");
    assert.deepEqual(changedParts(before, fingerprintOf(stackOf(), env)), ["config"]);
  });

  it("identifies a program by the files its module loads and its package's version, not by files it does not load", () => {
    const dir = mkdtempSync(path.join(tmpdir(), "nodefleet-program-"));
    dirs.push(dir);
    writeFileSync(path.join(dir, "package.json"), JSON.stringify({ name: "p", version: "1.0.0" }));
    writeFileSync(path.join(dir, "part.js"), "exports.part = 1;\n");
    writeFileSync(path.join(dir, "unused.js"), "exports.unused = 1;\n");
    writeFileSync(path.join(dir, "program.js"), 'require("./part.js");\nexports.runProgram = async () => ({});\n');
    const module = path.join(dir, "program.js");
    const first = programIdentity(module);
    assert.equal(programIdentity(module), first);
    writeFileSync(path.join(dir, "unused.js"), "exports.unused = 2;\n");
    assert.equal(programIdentity(module), first, "a file the program does not load");
    writeFileSync(path.join(dir, "part.js"), "exports.part = 2;\n");
    const edited = programIdentity(module);
    assert.notEqual(edited, first, "a file the program loads");
    writeFileSync(path.join(dir, "package.json"), JSON.stringify({ name: "p", version: "1.0.1" }));
    assert.notEqual(programIdentity(module), edited, "the package's version");
  });

  it("identifies the shipped API stack program, stably", () => {
    const module = stackOf().program.module;
    assert.equal(programIdentity(module), programIdentity(module));
  });

  it("refreshes, without a preview, the leaving members' servers and their placement groups, nothing of the others", () => {
    const server = (nodeId: string, group: string): StoredResource => ({
      urn: `urn:pulumi:example-api::nodefleet::nodefleet:hcloud:NodePool$hcloud:index/server:Server::example-${nodeId}-g0`,
      type: "hcloud:index/server:Server",
      id: `${nodeId}-id`,
      inputs: { placementGroupId: Number(group) },
    });
    const group = (id: string): StoredResource => ({
      urn: `urn:pulumi:example-api::nodefleet::hcloud:index/placementGroup:PlacementGroup::pool-pg-${id}`,
      type: "hcloud:index/placementGroup:PlacementGroup",
      id,
    });
    const drain = (nodeId: string): StoredResource => ({
      urn: `urn:x::example-${nodeId}-g0-drain`,
      type: "pulumi-nodejs:dynamic:Resource",
    });
    const resources = [server("k0aa", "1"), server("k0aab", "2"), server("k0bb", "1"), group("1"), group("2"), drain("k0aa")];
    assert.deepEqual(refreshTargetsFromState(resources, ["k0aa"]), [resources[0]!.urn, resources[3]!.urn]);
    assert.deepEqual(refreshTargetsFromState(resources, []), []);
    assert.deepEqual(refreshTargetsFromState(resources, ["k0zz"]), []);
  });

  it("keeps the fingerprint across a reopen of the store, and reads back none after a clear", () => {
    const dataDir = tempDataDir();
    const stored = fingerprintOf(stackOf());
    const db = openDatabase(dataDir);
    const store = new GuardFingerprints(db);
    assert.equal(store.get("example"), undefined);
    store.set("example", stored);
    store.set("other", withState(stored, { digest: "other" }));
    db.close();
    const reopened = openDatabase(dataDir);
    try {
      const again = new GuardFingerprints(reopened);
      assert.deepEqual(again.get("example"), stored);
      again.clear("example");
      assert.equal(again.get("example"), undefined);
      assert.equal(again.get("other")?.state, "other");
    } finally {
      reopened.close();
    }
  });
});
