import assert from "node:assert/strict";
import { fork } from "node:child_process";
import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { AddressPool } from "../../../automation/simulated/addressPool";
import {
  JournalCorruptError,
  StackStateFile,
  hashSecrets,
  matchesSelector,
  type SimResource,
} from "../../../automation/simulated/simulatedCloud";
import { SimulatedEngine } from "../../../automation/simulated/simulatedEngine";
import { resolveKnobs } from "../../../automation/simulated/simulationKnobs";
import { processAlive } from "../../../automation/engine/cliProcesses";
import { acquireStackLock, readLock, stackLockPath } from "../../../automation/simulated/stackLock";
import type { StackDefinition } from "../../../automation/engine/stackEngine";
import { tempDirPerTest } from "../../support/tempDirPerTest";

const PROGRAM_MODULE = join(__dirname, "..", "..", "support", "engineTestProgram.js");
const silent = { info() {}, warn() {}, error() {} };

function resource(urn: string, extra: Partial<SimResource> = {}): SimResource {
  return {
    urn,
    type: "random:index/randomString:RandomString",
    name: urn,
    custom: true,
    id: urn,
    inputs: {},
    outputs: {},
    createdAt: "2026-01-01T00:00:00Z",
    updatedAt: "2026-01-01T00:00:00Z",
    generation: 0,
    ...extra,
  };
}

function stack(count: number, stackName = "cloudtest"): StackDefinition {
  return {
    stackName,
    program: { module: PROGRAM_MODULE, args: { mode: "hcloud" } },
    config: {
      "enginetest:members": { value: Array.from({ length: count }, (_, i) => ({ name: `m${i}`, serverType: "cpx21" })) },
      "enginetest:cluster": { value: "cloudtest" },
    },
  };
}

describe("simulated cloud", function () {
  const dataDir = tempDirPerTest("nodefleet-simcloud-");

  describe("stack state file", function () {
    it("replays the journal over the snapshot and ignores a line torn by a crash", function () {
      const file = new StackStateFile(dataDir(), "s1");
      file.append({ t: "put", r: resource("a") });
      file.append({ t: "put", r: resource("b") });
      file.append({ t: "del", urn: "a" });
      appendFileSync(file.journalPath, '{"t":"put","r":{"urn":"c"');
      const state = file.load();
      assert.deepEqual([...state.resources.keys()], ["b"]);
    });

    it("refuses a journal with a damaged line in the middle, naming the file and the line, instead of dropping later steps", function () {
      const file = new StackStateFile(dataDir(), "s1");
      file.append({ t: "put", r: resource("a") });
      appendFileSync(file.journalPath, "{not json\n");
      file.append({ t: "put", r: resource("b") });
      assert.throws(
        () => file.load(),
        (error: Error) => {
          assert.ok(error instanceof JournalCorruptError);
          assert.ok(error.message.includes(file.journalPath), error.message);
          assert.match(error.message, /line 2 .*1 entry follows/);
          assert.match(error.message, /restore/);
          return true;
        },
      );
    });

    it("refuses a line in the middle that is JSON but not a journal entry (null, a number, an unknown kind), as damage", function () {
      for (const damaged of ["null", "42", '{"t":"put"}', '{"t":"moved","urn":"a"}']) {
        const file = new StackStateFile(dataDir(), "s1");
        file.append({ t: "put", r: resource("a") });
        appendFileSync(file.journalPath, `${damaged}\n`);
        file.append({ t: "put", r: resource("b") });
        assert.throws(
          () => file.load(),
          (error: Error) => error instanceof JournalCorruptError && /line 2 /.test(error.message),
          damaged,
        );
      }
    });

    it("cuts a torn last line off before appending, so entries written after a crash are kept", function () {
      const file = new StackStateFile(dataDir(), "s1");
      file.append({ t: "put", r: resource("a") });
      appendFileSync(file.journalPath, '{"t":"put","r":{"urn":"c"');
      const next = new StackStateFile(dataDir(), "s1");
      next.append({ t: "put", r: resource("b") });
      next.append({ t: "put", r: resource("d") });
      assert.deepEqual([...next.load().resources.keys()], ["a", "b", "d"]);
    });

    it("compacts into an atomically written snapshot (0600) and drops the journal", function () {
      const file = new StackStateFile(dataDir(), "s1");
      file.append({ t: "put", r: resource("a") });
      const state = file.load();
      state.outputs = { x: 1 };
      file.compact(state);
      assert.equal(existsSync(file.journalPath), false);
      assert.equal(statSync(file.snapshotPath).mode & 0o777, 0o600);
      assert.deepEqual(file.load().outputs, { x: 1 });
      assert.deepEqual([...file.load().resources.keys()], ["a"]);
    });

    it("stores a hash instead of a secret's value", function () {
      const wrapped = { "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", value: "hunter2" };
      const stored = JSON.stringify(hashSecrets({ token: wrapped, plain: "ok" }));
      assert.ok(!stored.includes("hunter2"));
      assert.notEqual(
        JSON.stringify(hashSecrets({ token: { ...wrapped, value: "other" } })),
        JSON.stringify(hashSecrets({ token: wrapped })),
      );
    });

    it("rejects stack names that could escape the state directory", function () {
      assert.throws(() => new StackStateFile(dataDir(), "../etc"), /invalid stack name/);
    });
  });

  describe("label selectors", function () {
    const labels = { "nodefleet.io/cluster": "c1", pool: "burst" };
    it("matches hcloud selector syntax and objects", function () {
      assert.equal(matchesSelector(labels, "nodefleet.io/cluster=c1,pool=burst"), true);
      assert.equal(matchesSelector(labels, "nodefleet.io/cluster=c2"), false);
      assert.equal(matchesSelector(labels, "pool!=burst"), false);
      assert.equal(matchesSelector(labels, "pool"), true);
      assert.equal(matchesSelector(labels, "!pool"), false);
      assert.equal(matchesSelector(labels, { pool: "burst" }), true);
      assert.equal(matchesSelector(labels, undefined), true);
    });
  });

  describe("address pool", function () {
    it("property: never hands out the same public or private address twice (within the pool's size)", function () {
      fc.assert(
        fc.property(fc.uniqueArray(fc.string(), { minLength: 1, maxLength: 200 }), (keys) => {
          const pool = new AddressPool();
          const pub = keys.map((k) => pool.public(k));
          const priv = keys.map((k) => pool.private("10.0.1.0/24", k));
          return (
            new Set(pub).size === keys.length &&
            new Set(priv).size === keys.length &&
            priv.every((a) => /^10\.0\.1\.\d+$/.test(a) && a !== "10.0.1.1")
          );
        }),
        { numRuns: 30 },
      );
    });

    it("is deterministic: the same keys in the same order get the same addresses", function () {
      const a = new AddressPool();
      const b = new AddressPool();
      assert.deepEqual(
        ["x", "y"].map((k) => a.public(k)),
        ["x", "y"].map((k) => b.public(k)),
      );
    });
  });

  describe("knobs", function () {
    it("reads the environment variables exactly as named, options winning", function () {
      const env = {
        NODEFLEET_SIM_BOOT_DELAY_MS: "10",
        NODEFLEET_SIM_FAIL_CREATE_RATE: "0.25",
        NODEFLEET_SIM_OUT_OF_STOCK: "cx22, EM-A115X-SSD",
        NODEFLEET_SIM_QUOTA_EXCEEDED: "cpx21 ,cx32",
        NODEFLEET_SIM_CRASH_AFTER_STEPS: "3",
      };
      assert.deepEqual(resolveKnobs({}, env), {
        bootDelayMs: 10,
        failCreateRate: 0.25,
        outOfStock: ["cx22", "EM-A115X-SSD"],
        quotaExceeded: ["cpx21", "cx32"],
        crashAfterSteps: 3,
        seed: "nodefleet",
      });
      assert.equal(resolveKnobs({ bootDelayMs: 7 }, env).bootDelayMs, 7);
      assert.equal(resolveKnobs({}, {}).bootDelayMs, 2000);
      assert.deepEqual(resolveKnobs({}, {}).quotaExceeded, []);
      assert.throws(() => resolveKnobs({}, { NODEFLEET_SIM_FAIL_CREATE_RATE: "2" }), /NODEFLEET_SIM_FAIL_CREATE_RATE/);
    });
  });

  describe("stack lock", function () {
    it("refuses a second live holder and removes a dead holder's lock", function () {
      const held = acquireStackLock(dataDir(), "s1", process.pid);
      assert.throws(() => acquireStackLock(dataDir(), "s1", process.ppid), /currently locked by process/);
      held.release();
      writeFileSync(stackLockPath(dataDir(), "s1"), JSON.stringify({ pid: 2 ** 22 + 12345, startedAt: "2026-01-01T00:00:00Z" }));
      const again = acquireStackLock(dataDir(), "s1", process.pid);
      assert.equal(again.staleHolder?.pid, 2 ** 22 + 12345);
      again.release();
      assert.equal(readLock(stackLockPath(dataDir(), "s1")), undefined);
    });
  });

  describe("servers as the scaling API sees them", function () {
    it("lists servers by label with addresses, initializing until the boot delay passed", async function () {
      const engine = new SimulatedEngine({ dataDir: dataDir(), bootDelayMs: 60_000, env: {}, logger: silent });
      await engine.up(stack(2));
      const servers = engine.cloud.listServers("nodefleet.io/cluster=cloudtest");
      assert.equal(servers.length, 2);
      for (const s of servers) {
        assert.equal(s.status, "initializing");
        assert.equal(s.serverType, "cpx21");
        assert.equal(s.location, "hel1");
        assert.match(s.ipv4 ?? "", /^203\.0\.113\.\d+$/);
        assert.match(s.privateIpv4 ?? "", /^10\.0\.1\.\d+$/);
        assert.equal(engine.cloud.getServer(s.id, Date.parse(s.runningAt))?.status, "running");
      }
      assert.equal(engine.cloud.listServers("nodefleet.io/member=m1").length, 1);
      assert.equal(engine.cloud.listServers("nodefleet.io/cluster=other").length, 0);
    });

    it("injects orphans and deletes servers out-of-band; a refresh drops deleted ones from the stack", async function () {
      const engine = new SimulatedEngine({ dataDir: dataDir(), bootDelayMs: 0, env: {}, logger: silent });
      await engine.up(stack(2));
      const orphan = engine.cloud.injectOrphanServer({
        name: "cloudtest-ghost",
        labels: { "nodefleet.io/cluster": "cloudtest" },
        createdAt: new Date("2026-01-01T00:00:00Z"),
      });
      const all = engine.cloud.listServers("nodefleet.io/cluster=cloudtest");
      assert.equal(all.length, 3);
      assert.equal(all.find((s) => s.id === orphan.id)?.stack, undefined);
      assert.equal(engine.cloud.deleteServer(orphan.id), true);
      assert.equal(engine.cloud.deleteServer(orphan.id), false, "deleting again finds nothing");

      const victim = engine.cloud.listServers("nodefleet.io/member=m0")[0];
      engine.cloud.deleteServer(victim.id);
      assert.equal(engine.cloud.listServers("nodefleet.io/cluster=cloudtest").length, 1);
      const refresh = await engine.refresh(stack(2));
      assert.deepEqual(
        refresh.steps.filter((s) => s.op === "delete").map((s) => s.name),
        ["m0-server"],
      );
      assert.equal(refresh.simulated, true);
      const up = await engine.up(stack(2));
      assert.deepEqual(
        up.steps.filter((s) => s.op !== "same").map((s) => `${s.op} ${s.name}`),
        ["create m0-server"],
      );
    });

    it("draws create failures from a seed: the same seed fails the same members", async function () {
      const failures = async (dir: string) => {
        const engine = new SimulatedEngine({ dataDir: dir, bootDelayMs: 0, failCreateRate: 0.5, seed: "s", env: {}, logger: silent });
        const result = await engine.up(stack(6));
        return result.steps.filter((s) => s.error).map((s) => s.name);
      };
      const first = await failures(dataDir());
      const otherDir = mkdtempSync(join(tmpdir(), "nodefleet-simcloud-"));
      try {
        assert.deepEqual(await failures(otherDir), first);
      } finally {
        rmSync(otherDir, { recursive: true, force: true });
      }
      assert.ok(first.length > 0 && first.length < 6, `some but not all of 6 servers fail at rate 0.5 (got ${first.length})`);
      assert.ok(first.every((n) => n.endsWith("-server")));
    });

    it("fails only the servers that do not fit a full subnet", async function () {
      const engine = new SimulatedEngine({ dataDir: dataDir(), bootDelayMs: 0, env: {}, logger: silent });
      const tiny: StackDefinition = { ...stack(3), config: { ...stack(3).config, "enginetest:subnet": { value: "10.0.1.0/30" } } };
      const result = await engine.up(tiny);
      const failed = result.steps.filter((s) => s.error);
      assert.equal(failed.length, 2);
      assert.ok(failed.every((s) => s.type === "hcloud:index/server:Server" && /subnet 10\.0\.1\.0\/30 is full/.test(s.error!)));
      assert.equal(engine.cloud.listServers("nodefleet.io/cluster=cloudtest").length, 1);
    });

    it("labels every result and the banner as simulated", async function () {
      const records: string[] = [];
      const logger = { info() {}, error() {}, warn: (_r: object, m?: string) => void records.push(m ?? "") };
      const engine = new SimulatedEngine({ dataDir: dataDir(), bootDelayMs: 0, env: {}, logger });
      assert.match(records[0], /simulation that talks to no cloud/);
      const preview = await engine.preview(stack(1));
      assert.equal(preview.simulated, true);
    });
  });

  describe("the engine's child process", function () {
    it("dies with its parent", async function () {
      // A parent process that starts a long up, then is killed; its child must not outlive it.
      const script = join(dataDir(), "parent.js");
      writeFileSync(
        script,
        `const { SimulatedEngine } = require(${JSON.stringify(join(__dirname, "..", "..", "..", "automation", "simulated", "simulatedEngine.js"))});
         const engine = new SimulatedEngine({ dataDir: ${JSON.stringify(dataDir())}, bootDelayMs: 0, env: {}, banner: false });
         engine.up(${JSON.stringify(stack(400, "orphaned"))}).catch(() => {});`,
      );
      const parent = fork(script, [], { stdio: "ignore" });
      const lockPath = stackLockPath(dataDir(), "orphaned");
      let childPid: number | undefined;
      for (let i = 0; i < 200 && childPid === undefined; i++) {
        await new Promise((r) => setTimeout(r, 50));
        childPid = readLock(lockPath)?.pid;
      }
      assert.ok(childPid, "the child took the stack lock");
      parent.kill("SIGKILL");
      let alive = true;
      for (let i = 0; i < 60 && alive; i++) {
        await new Promise((r) => setTimeout(r, 100));
        alive = processAlive(childPid);
      }
      assert.equal(alive, false, "the child exited after its parent died");
      assert.ok(readFileSync(lockPath, "utf8").includes(String(childPid)), "its lock stays behind for the next run to clear");
    });
  });
});
