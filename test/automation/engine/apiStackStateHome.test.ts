/**
 * Where the automation engine keeps its own (API) stacks' state on the real pulumi CLI: in the data
 * directory next to the store even when PULUMI_BACKEND_URL names the git stack's backend, with the
 * files that come with it (checkpoint, its one `.bak`, bounded history, no backups); and how a stack
 * an earlier version kept in PULUMI_BACKEND_URL moves there, once, also after a crash mid-move.
 */
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { LocalWorkspace } from "@pulumi/pulumi/automation";
import { AutomationEngine } from "../../../automation/engine/automationEngine";
import { fileBackendUrl } from "../../../automation/engine/fileBackendState";
import { requirePulumiCommand } from "../../../automation/engine/pulumiCli";
import type { StackDefinition } from "../../../automation/engine/stackEngine";
import { pulumiProcessEnv } from "../../../automation/engine/toolchain";
import type { TestMember } from "../../support/engineTestProgram";
import { tempDirPerTest } from "../../support/tempDirPerTest";
import { missingTools, skipUnlessAvailable } from "../../support/toolchainRequirement";

const PROGRAM_MODULE = join(__dirname, "..", "..", "support", "engineTestProgram.js");
const PASSPHRASE = "state-home-tests";

function members(count: number): TestMember[] {
  return Array.from({ length: count }, (_, i) => ({ name: `m${i}`, serverType: "cpx21" }));
}

/** With a secret in the state (as the API stack's user data is): the moved state must still decrypt. */
function stack(count: number): StackDefinition {
  return {
    stackName: "api",
    program: { module: PROGRAM_MODULE, args: { mode: "local" } },
    config: {
      "enginetest:members": { value: members(count) },
      "enginetest:cluster": { value: "home" },
      "enginetest:token": { value: "kept-secret-value", secret: true },
    },
  };
}

/** Every file under `dir` (relative), empty when it does not exist. */
function files(dir: string, prefix = ""): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(join(dir, e.name), `${prefix}${e.name}/`) : [`${prefix}${e.name}`],
  );
}

const created = (result: { steps: ReadonlyArray<{ op: string; name: string }> }) =>
  result.steps
    .filter((s) => s.op === "create" && s.name.startsWith("m"))
    .map((s) => s.name)
    .sort();

describe("the automation engine's own stacks keep their state in the data directory", function () {
  this.timeout(600_000);
  const dir = tempDirPerTest("nodefleet-state-home-");
  const warnings: Array<{ event?: unknown; message: string }> = [];
  const logger = {
    info() {},
    error() {},
    warn: (record: Record<string, unknown>, message?: string) => warnings.push({ event: record.event, message: String(message) }),
  };
  const engineWith = (env: Record<string, string>, historyToKeep?: number) =>
    new AutomationEngine({
      dataDir: join(dir(), "data"),
      env: { ...process.env, PULUMI_CONFIG_PASSPHRASE: PASSPHRASE, ...env },
      logger,
      ...(historyToKeep ? { historyToKeep } : {}),
    });
  const shared = () => join(dir(), "git-stack-backend");
  const dataState = () => join(dir(), "data", "state", ".pulumi");

  before(function () {
    skipUnlessAvailable(this, missingTools("pulumi", "pulumi-resource-random"));
  });
  beforeEach(() => {
    warnings.length = 0;
    mkdirSync(shared());
  });

  it("writes them there, not to PULUMI_BACKEND_URL: checkpoint, its .bak, bounded history, no backups", async function () {
    const engine = engineWith({ PULUMI_BACKEND_URL: fileBackendUrl(shared()) }, 2);
    for (const count of [1, 2, 1]) assert.equal((await engine.up(stack(count))).succeeded, true);
    // (Asking it whether it holds an earlier version's copy leaves the backend's meta.yaml.)
    assert.deepEqual(
      files(shared()).filter((f) => f !== ".pulumi/meta.yaml"),
      [],
      "nothing of the API stack in the git stack's backend",
    );
    const stateFiles = files(dataState());
    assert.ok(stateFiles.includes("stacks/nodefleet/api.json"), stateFiles.join(", "));
    // The CLI copies the previous checkpoint there on every save (its integrity-check fallback): one file, kept.
    assert.ok(stateFiles.includes("stacks/nodefleet/api.json.bak"), stateFiles.join(", "));
    const history = stateFiles.filter((f) => f.startsWith("history/nodefleet/api/"));
    assert.equal(new Set(history.map((f) => /-(\d+)\./.exec(f)?.[1])).size, 2, history.join(", "));
    assert.deepEqual(
      stateFiles.filter((f) => f.startsWith("backups/")),
      [],
      "no checkpoint backups",
    );
  });

  it("moves a stack an earlier version kept in PULUMI_BACKEND_URL there, once, and runs on from it", async function () {
    // The earlier layout: the same data directory, its stack's state in the shared backend.
    const earlier = engineWith({ NODEFLEET_API_STACK_BACKEND_URL: fileBackendUrl(shared()) });
    assert.equal((await earlier.up(stack(1))).succeeded, true);
    assert.ok(files(shared()).includes(".pulumi/stacks/nodefleet/api.json"));

    const upgraded = engineWith({ PULUMI_BACKEND_URL: fileBackendUrl(shared()) });
    const after = await upgraded.up(stack(2));
    assert.equal(after.succeeded, true, JSON.stringify(after.steps.filter((s) => s.error)));
    assert.deepEqual(
      created(after),
      ["m1", "m1-server", "m1-suffix"],
      "only the new member is created: the state moved with its resources",
    );
    assert.equal(after.outputs.token, "kept-secret-value", "its secrets decrypt in the new home");
    assert.ok(files(dataState()).includes("stacks/nodefleet/api.json"));
    assert.deepEqual(
      files(join(shared(), ".pulumi", "stacks")).filter((f) => f.endsWith(".json")),
      [],
      "no second, stale copy left in the old backend",
    );
    assert.deepEqual(warnings.filter((w) => w.event === "state_moved").length, 1, JSON.stringify(warnings));

    const restarted = engineWith({ PULUMI_BACKEND_URL: fileBackendUrl(shared()) });
    const again = await restarted.up(stack(2));
    assert.ok(
      again.steps.every((s) => s.op === "same"),
      JSON.stringify(again.summary),
    );
    assert.deepEqual(warnings.filter((w) => w.event === "state_moved").length, 1, "moved once");
  });

  it("finishes a move a crash cut short, rather than trusting the half-made copy", async function () {
    const earlier = engineWith({ NODEFLEET_API_STACK_BACKEND_URL: fileBackendUrl(shared()) });
    assert.equal((await earlier.up(stack(1))).succeeded, true);
    // A move killed after it created the stack in the data directory, before it imported the state.
    const workDir = join(dir(), "data", "workspaces", "api");
    writeFileSync(join(workDir, "state-moving-from-PULUMI_BACKEND_URL"), "{}\n");
    mkdirSync(join(dir(), "data", "state"));
    const own = fileBackendUrl(join(dir(), "data", "state"));
    const half = await LocalWorkspace.create({
      workDir,
      pulumiCommand: await requirePulumiCommand(),
      envVars: { ...pulumiProcessEnv(join(dir(), "data")), PULUMI_BACKEND_URL: own, PULUMI_CONFIG_PASSPHRASE: PASSPHRASE },
      projectSettings: { name: "nodefleet", runtime: "nodejs", backend: { url: own } },
    });
    await half.createStack("api");
    assert.ok(files(dataState()).includes("stacks/nodefleet/api.json"), "an empty stack in the new home");

    const after = await engineWith({ PULUMI_BACKEND_URL: fileBackendUrl(shared()) }).up(stack(2));
    assert.equal(after.succeeded, true, JSON.stringify(after.steps.filter((s) => s.error)));
    assert.deepEqual(created(after), ["m1", "m1-server", "m1-suffix"], "m0 came along: the move was finished, not skipped");
    assert.ok(!existsSync(join(workDir, "state-moving-from-PULUMI_BACKEND_URL")), "the marker is gone once the move is done");
  });
});
