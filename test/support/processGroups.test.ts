import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { descendantProcesses } from "../../automation/engine/cliProcesses";
import { REPOSITORY_ROOT } from "./serveProcess";
import { until } from "./until";

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe("a test runner stopped mid-suite", function () {
  this.timeout(120_000);

  for (const signal of ["SIGTERM", "SIGINT"] as const) {
    it(`leaves no process behind after ${signal}`, async function () {
      const dir = mkdtempSync(join(tmpdir(), "nodefleet-reaper-"));
      try {
        const pidsFile = join(dir, "pids.json");
        const mocha = spawn(
          process.execPath,
          [
            join(REPOSITORY_ROOT, "node_modules", "mocha", "bin", "mocha.js"),
            "--no-config",
            "--require",
            join(REPOSITORY_ROOT, "dist", "test", "support", "reapOnExit.js"),
            join(REPOSITORY_ROOT, "dist", "test", "fixtures", "reaper", "startsProcesses.fixture.js"),
          ],
          {
            cwd: REPOSITORY_ROOT,
            env: { ...process.env, REAPER_PIDS_FILE: pidsFile, REAPER_DATA_DIR: join(dir, "data") },
            stdio: "ignore",
          },
        );
        const exited = new Promise((resolve) => mocha.once("exit", resolve));
        await until("the suite to start its processes", () => (existsSync(pidsFile) ? true : undefined), 60_000);
        const started = [...(JSON.parse(readFileSync(pidsFile, "utf8")) as number[]), ...descendantProcesses(mocha.pid!)];
        assert.ok(started.every(alive), "all running before the stop");
        mocha.kill(signal);
        await exited;
        await until(
          "every process the suite started to be gone",
          () => (started.some(alive) ? undefined : true),
          10_000,
          () => `still running: ${started.filter(alive).join(", ")}`,
          100,
        );
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  }
});
