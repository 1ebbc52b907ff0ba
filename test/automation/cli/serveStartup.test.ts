/**
 * `nodefleet serve` refuses a bad start before it touches any state: configuration errors exit
 * non-zero at once with nothing applied and no lock left behind, and a lost store (nodefleet.db
 * deleted next to the API stack's engine state) is refused instead of served empty.
 */
import { strict as assert } from "node:assert";
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { databaseFiles, databasePath } from "../../../automation/store/database";
import { TOKEN, eventually, tempDataDir } from "../../support/apiHarness";
import { BIN, REPOSITORY_ROOT, startServe } from "../../support/serveProcess";

/** Runs serve until it exits (at most 60 s), as a failed start should. */
function serveUntilExit(dataDir: string, env: Record<string, string>): Promise<{ code: number | null; stderr: string; ms: number }> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, "serve", "--stack", "example", "--data-dir", dataDir, "--port", "0"], {
      cwd: REPOSITORY_ROOT,
      env: {
        ...process.env,
        HCLOUD_TOKEN: "",
        SCW_SECRET_KEY: "",
        NODEFLEET_API_TOKENS: `example:${TOKEN}`,
        NODEFLEET_LOG_LEVEL: "warn",
        NODEFLEET_SIM_BOOT_DELAY_MS: "100",
        ...env,
      },
      stdio: ["ignore", "ignore", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`serve did not exit within 60 s:\n${stderr}`));
    }, 60_000);
    child.on("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, stderr, ms: Date.now() - started });
    });
  });
}

function assertUntouched(dataDir: string): void {
  const left = fs.existsSync(dataDir) ? fs.readdirSync(dataDir) : [];
  assert.ok(!left.includes("nodefleet.lock"), `no lock file left behind (${left.join(", ")})`);
  assert.ok(!left.includes("simulated-cloud"), `nothing applied to the simulated cloud (${left.join(", ")})`);
  assert.ok(!left.includes("nodefleet.db"), `no store created (${left.join(", ")})`);
}

describe("nodefleet serve start-up", function () {
  this.timeout(120_000);

  it("exits non-zero at once on a short token in NODEFLEET_API_TOKENS, before applying anything, leaving no lock", async () => {
    const dataDir = tempDataDir("nodefleet-start-");
    const result = await serveUntilExit(dataDir, { NODEFLEET_API_TOKENS: "example:short" });
    assert.notEqual(result.code, 0);
    assert.match(result.stderr, /NODEFLEET_API_TOKENS entry 1 must be <clusterId>:<token> with a token of at least 16 characters/);
    assert.doesNotMatch(result.stderr, /short/, "the token is not echoed");
    assertUntouched(dataDir);
  });

  it("exits non-zero at once on an invalid setting, naming it, leaving no lock", async () => {
    const dataDir = tempDataDir("nodefleet-start-");
    const result = await serveUntilExit(dataDir, { NODEFLEET_BATCH_IDLE_MS: "soon" });
    assert.notEqual(result.code, 0);
    assert.match(result.stderr, /NODEFLEET_BATCH_IDLE_MS must be a non-negative integer/);
    assertUntouched(dataDir);
  });

  it("refuses an engine parallelism of 0 (the CLI would run nothing), naming the setting", async () => {
    const dataDir = tempDataDir("nodefleet-start-");
    const result = await serveUntilExit(dataDir, { NODEFLEET_ENGINE_PARALLEL: "0" });
    assert.notEqual(result.code, 0);
    assert.match(result.stderr, /NODEFLEET_ENGINE_PARALLEL must be a positive integer/);
    assertUntouched(dataDir);
  });

  it("refuses an unknown healing mode, naming the setting and the modes", async () => {
    const dataDir = tempDataDir("nodefleet-start-");
    const result = await serveUntilExit(dataDir, { NODEFLEET_HEAL: "sometimes" });
    assert.notEqual(result.code, 0);
    assert.match(result.stderr, /NODEFLEET_HEAL must be one of on, dry-run, off \(got "sometimes"\)/);
    assertUntouched(dataDir);
  });

  it("refuses a healing rung wait that is not a whole number of milliseconds, naming the setting", async () => {
    const dataDir = tempDataDir("nodefleet-start-");
    const result = await serveUntilExit(dataDir, { NODEFLEET_HEAL_RUNG_WAIT_MS: "ten minutes" });
    assert.notEqual(result.code, 0);
    assert.match(result.stderr, /NODEFLEET_HEAL_RUNG_WAIT_MS/);
    assertUntouched(dataDir);
  });

  it("refuses to serve an empty store when nodefleet.db was deleted next to the API stack's state, naming the file and how to restore", async () => {
    const dataDir = tempDataDir("nodefleet-start-");
    const serve = await startServe(dataDir);
    const { node } = await serve.client.createNode({ uniqueID: "survivor", pool: "hel1-burst" }, { waitSeconds: 60 });
    assert.equal(node.status, "RUNNING");
    serve.child.kill("SIGTERM");
    assert.equal(await serve.exited(), 0);
    for (const file of databaseFiles(dataDir)) fs.rmSync(file, { force: true });

    const result = await serveUntilExit(dataDir, {});
    assert.notEqual(result.code, 0);
    assert.ok(result.stderr.includes(databasePath(dataDir)), result.stderr);
    assert.match(result.stderr, /missing.*Restore nodefleet\.db/s);
    assert.doesNotMatch(result.stderr, /listening on/);
    assert.ok(!fs.existsSync(path.join(dataDir, "nodefleet.lock")), "the failed start removed its lock file");
    assert.ok(!fs.existsSync(databasePath(dataDir)), "no empty store was created");
  });

  it("retries a failed first apply of the git stack, not ready meanwhile, and is ready once it goes through", async () => {
    const dataDir = tempDataDir("nodefleet-start-");
    // Where the simulated cloud keeps its state, a file: every apply fails until it is gone.
    fs.writeFileSync(path.join(dataDir, "simulated-cloud"), "in the way\n");
    const serve = await startServe(dataDir);
    try {
      const retrying = () => (serve.stderr().match(/applying the git stack to the simulated cloud failed; retrying/g) ?? []).length;
      await eventually(() => (retrying() >= 2 ? true : undefined), 100, 100);
      const starting = await serve.client.readiness();
      assert.equal(starting.status, 503);
      assert.equal(starting.body.status, "starting");
      fs.rmSync(path.join(dataDir, "simulated-cloud"));
      await eventually(async () => ((await serve.client.readiness()).body.status === "ready" ? true : undefined), 100, 100);
      const { node } = await serve.client.createNode({ uniqueID: "after-the-retries", pool: "hel1-burst" }, { waitSeconds: 60 });
      assert.equal(node.status, "RUNNING");
    } finally {
      serve.child.kill("SIGTERM");
      await serve.exited();
    }
  });
});
