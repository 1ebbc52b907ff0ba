/**
 * Issue 40 part 3: the API stack's state in S3-compatible object storage
 * (NODEFLEET_API_STACK_BACKEND_URL=s3://…), with the real pulumi CLI against the toolchain's
 * gofakes3 on loopback. Two engines with their own data directories stand for two replicas: they
 * share the stack through the bucket (one passphrase), take turns on the backend's lock, and the
 * lock a killed CLI leaves in the bucket is removed by the next run's crash recovery. In serve's
 * shared mode (a throwaway PostgreSQL on loopback) a run holding its shard's run lock also removes
 * a lock another host left, and a run whose run lock is lost is cancelled.
 */
import { PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import { join } from "node:path";
import pg from "pg";
import { AutomationEngine, type AutomationEngineOptions } from "../../../automation/engine/automationEngine";
import { killProcesses, processTrees, pulumiProcessesFor } from "../../../automation/engine/cliProcesses";
import { objectStoreLocation, objectStoreLocks } from "../../../automation/engine/objectStoreLocks";
import { RunCancelledError, RunFailedError, type ResourceStep, type StackDefinition } from "../../../automation/engine/stackEngine";
import { apiStackName } from "../../../automation/reconciler/apiStack";
import { apiStackFence } from "../../../automation/reconciler/apiStackFence";
import { openPostgresStores, type SharedStores } from "../../../automation/store/postgresStores";
import type { TestMember } from "../../support/engineTestProgram";
import { suitePostgres } from "../../support/postgresServer";
import { type S3Server, startS3Server } from "../../support/s3Server";
import { tempDirPerTest } from "../../support/tempDirPerTest";
import { missingTools, skipUnlessAvailable } from "../../support/toolchainRequirement";
import { until } from "../../support/until";

const PROGRAM_MODULE = join(__dirname, "..", "..", "support", "engineTestProgram.js");
const STACK = "replicas";

function members(count: number, createDelayMs = 0): TestMember[] {
  return Array.from({ length: count }, (_, i) => ({ name: `m${i}`, serverType: "cpx21", ...(createDelayMs ? { createDelayMs } : {}) }));
}

function stack(memberList: TestMember[], stackName = STACK): StackDefinition {
  return {
    stackName,
    program: { module: PROGRAM_MODULE, args: { mode: "local" } },
    config: { "enginetest:members": { value: memberList }, "enginetest:cluster": { value: "replicas" } },
  };
}

const created = (steps: readonly ResourceStep[]) =>
  steps
    .filter((s) => s.op === "create" && s.name.endsWith("-server"))
    .map((s) => s.name)
    .sort();

describe("API stack state in object storage (s3://, real pulumi CLI)", function () {
  this.timeout(300_000);
  let s3: S3Server;
  const dataDir = tempDirPerTest("nodefleet-object-store-");
  let prefix = 0;
  let backendUrl: string;
  const warnings: string[] = [];
  const logger = { info() {}, warn: (_fields: unknown, message: string) => warnings.push(message), error() {} };

  /** A replica's engine: its own data directory, the shared bucket and passphrase. */
  const replica = (name: string) =>
    new AutomationEngine({
      dataDir: join(dataDir(), name),
      env: {
        ...process.env,
        NODEFLEET_API_STACK_BACKEND_URL: backendUrl,
        AWS_ACCESS_KEY_ID: "nodefleet-test",
        AWS_SECRET_ACCESS_KEY: "nodefleet-test-secret",
        PULUMI_CONFIG_PASSPHRASE: "one passphrase for every replica",
      },
      logger,
    });

  before(async function () {
    skipUnlessAvailable(this, missingTools("pulumi", "gofakes3"));
    s3 = await startS3Server();
  });
  after(async () => {
    await s3?.stop();
  });
  beforeEach(() => {
    // Each test its own prefix in the bucket: the URL's path is the backend's key prefix.
    backendUrl = s3.backendUrl(`test-${++prefix}`);
    warnings.length = 0;
  });

  it("shares the stack between replicas: one's run builds on the other's, and no data directory holds state", async function () {
    const first = await replica("a").up(stack(members(2)));
    assert.equal(first.succeeded, true);
    assert.deepEqual(created(first.steps), ["m0-server", "m1-server"]);
    const keys = await s3.keys(`test-${prefix}/`);
    assert.ok(keys.includes(`test-${prefix}/.pulumi/stacks/nodefleet/${STACK}.json`), keys.join(", "));
    assert.equal(existsSync(join(dataDir(), "a", "state", ".pulumi")), false, "nothing in the replica's own directory");

    const second = await replica("b").up(stack(members(3)));
    assert.equal(second.succeeded, true);
    assert.deepEqual(created(second.steps), ["m2-server"], "the other replica sees the first two members");
    assert.equal(Object.keys(second.outputs.servers as object).length, 3);
  });

  it("takes turns on the backend's lock: two replicas' runs at once create each member once", async function () {
    await replica("a").up(stack(members(1)));
    const slow = members(3, 4000);
    const [a, b] = await Promise.all([replica("a").up(stack(slow)), replica("b").up(stack(slow))]);
    assert.equal(a.succeeded && b.succeeded, true);
    const both = [...created(a.steps), ...created(b.steps)].sort();
    assert.deepEqual(both, ["m1-server", "m2-server"], "each new member created by one replica only");
    assert.ok(
      warnings.some((w) => /is locked by another pulumi process; retrying/.test(w)),
      "one run waited for the other's lock",
    );
  });

  it("removes the lock a killed pulumi process left in the bucket, and the next run converges", async function () {
    const location = objectStoreLocation(backendUrl, { AWS_ACCESS_KEY_ID: "nodefleet-test", AWS_SECRET_ACCESS_KEY: "x" })!;
    const locks = () => objectStoreLocks(location, "nodefleet", STACK);
    const a = replica("a");
    const running = a.up(stack(members(2, 20_000)));
    await until(
      "the CLI's lock in the bucket",
      async () => ((await locks()).length > 0 && (await s3.keys(`test-${prefix}/.pulumi/stacks/`)).length > 0 ? true : undefined),
      60_000,
      () => "",
      200,
    );
    // Kill the CLI and its plugins once the run has begun, as a crash of the replica would.
    await until(
      "the run's pulumi processes",
      () => (killProcesses(processTrees(pulumiProcessesFor(STACK))).length > 0 ? true : undefined),
      30_000,
    );
    await assert.rejects(running, (error: unknown) => error instanceof RunFailedError);
    assert.equal((await locks()).length, 1, "the killed CLI left its lock in the bucket");

    const converged = await replica("b").up(stack(members(2)));
    assert.equal(converged.succeeded, true, JSON.stringify(converged.steps.filter((s) => s.error)));
    assert.deepEqual(await locks(), []);
    assert.ok(warnings.includes("removed the stack lock of a pulumi process that no longer runs"), warnings.join("\n"));
    assert.equal(Object.keys(converged.outputs.servers as object).length, 2);
  });

  it("reads an s3:// URL as gocloud does, and no other backend", function () {
    const location = objectStoreLocation("s3://state/fleet/eu?endpoint=fsn1.your-objectstorage.com&region=fsn1", {});
    assert.deepEqual(location, {
      bucket: "state",
      prefix: "fleet/eu/",
      client: { region: "fsn1", forcePathStyle: false, endpoint: "https://fsn1.your-objectstorage.com" },
    });
    assert.equal(objectStoreLocation("file:///var/lib/nodefleet/state"), undefined);
    assert.equal(objectStoreLocation(s3.backendUrl(), {})?.client.endpoint, `http://${s3.endpoint}`);
  });
});

describe("another host's lock on an API stack in object storage, in serve's shared mode (real pulumi CLI, PostgreSQL)", function () {
  this.timeout(300_000);
  const CLUSTER = "c1";
  const API_STACK = apiStackName(CLUSTER, "0");
  const CREDENTIALS = { AWS_ACCESS_KEY_ID: "nodefleet-test", AWS_SECRET_ACCESS_KEY: "nodefleet-test-secret" };
  const database = suitePostgres("the fenced object-store lock suite");
  const dataDir = tempDirPerTest("nodefleet-object-store-fence-");
  let s3: S3Server;
  let shared: SharedStores;
  let url: string;
  let prefix = 0;
  let backendUrl: string;
  const logged: Array<{ fields: Record<string, unknown>; message: string }> = [];
  const logger = {
    info() {},
    warn: (fields: unknown, message: string) => logged.push({ fields: fields as Record<string, unknown>, message }),
    error() {},
  };
  const location = () => objectStoreLocation(backendUrl, CREDENTIALS)!;
  const locks = () => objectStoreLocks(location(), "nodefleet", API_STACK);

  const replica = (name: string, options: Partial<AutomationEngineOptions> = {}) =>
    new AutomationEngine({
      dataDir: join(dataDir(), name),
      env: {
        ...process.env,
        ...CREDENTIALS,
        NODEFLEET_API_STACK_BACKEND_URL: backendUrl,
        PULUMI_CONFIG_PASSPHRASE: "one passphrase for every replica",
      },
      logger,
      // A lost run lock's CLI is killed after 1 s; the fence's grace is that plus its margin.
      forceStopAfterMs: 1000,
      ...options,
    });

  /** The lock object a replica's CLI on another machine leaves when it dies there mid-run (pkg/backend/diy/lock.go's content). */
  async function deadReplicasLock(takenSecondsAgo: number): Promise<string> {
    const key = `${location().prefix}.pulumi/locks/organization/nodefleet/${API_STACK}/${randomUUID()}.json`;
    const content = {
      pid: 4242,
      username: "nodefleet",
      hostname: "replica-on-another-machine",
      timestamp: new Date(Date.now() - takenSecondsAgo * 1000).toISOString(),
    };
    const client = new S3Client(location().client);
    try {
      await client.send(new PutObjectCommand({ Bucket: location().bucket, Key: key, Body: JSON.stringify(content) }));
    } finally {
      client.destroy();
    }
    return key;
  }

  before(async function () {
    skipUnlessAvailable(this, missingTools("pulumi", "gofakes3"));
    s3 = await startS3Server();
    await database.before();
  });
  after(async () => {
    await s3?.stop();
    await database.after();
  });
  beforeEach(async () => {
    backendUrl = s3.backendUrl(`fence-${++prefix}`);
    logged.length = 0;
    url = await database.createDatabase("fence");
    shared = await openPostgresStores({ connectionString: url });
    // The stack exists, as after the replicas' earlier runs.
    const first = await replica("a").up(stack(members(1), API_STACK));
    assert.equal(first.succeeded, true);
  });
  afterEach(async () => shared?.close());

  it("refuses it, as before, in a run that holds no run lock", async function () {
    await deadReplicasLock(600);
    await assert.rejects(replica("b", { runFence: apiStackFence(shared.runs) }).up(stack(members(2), API_STACK)), (error: unknown) => {
      assert.ok(error instanceof RunFailedError, String(error));
      assert.match(error.message, /locked/);
      return true;
    });
    assert.deepEqual(
      (await locks()).map((lock) => lock.hostname),
      ["replica-on-another-machine"],
      "the other machine's lock is never judged",
    );
  });

  it("removes it in a run holding the shard's PostgreSQL run lock, after the grace, and logs it without secrets", async function () {
    const key = await deadReplicasLock(600);
    const b = replica("b", { runFence: apiStackFence(shared.runs) });
    const started = Date.now();
    const result = await shared.runs.exclusively(
      CLUSTER,
      "0",
      () => b.up(stack(members(2), API_STACK)),
      () => false,
    );
    assert.equal(result?.succeeded, true, JSON.stringify(result?.steps.filter((s) => s.error)));
    assert.deepEqual(created(result.steps), ["m1-server"]);
    assert.ok(Date.now() - started >= 11_000, "the lock was given the grace (force-stop time and margin) to go by itself");
    assert.deepEqual(await locks(), []);
    assert.ok(!(await s3.keys(`fence-${prefix}/`)).includes(key));
    const removed = logged.find((l) => l.message.startsWith("removed another host's stack lock"));
    assert.ok(removed, logged.map((l) => l.message).join("\n"));
    const { ageSeconds, ...fields } = removed.fields;
    assert.deepEqual(fields, {
      event: "crash_recovery",
      stack: API_STACK,
      lockHost: "replica-on-another-machine",
      lockPid: 4242,
      since: (removed.fields as { since: string }).since,
    });
    assert.ok(typeof ageSeconds === "number" && ageSeconds >= 600, String(ageSeconds));
    assert.ok(logged.some((l) => l.message.startsWith("another host's lock is on the stack while this replica holds its run lock")));
    assert.ok(!JSON.stringify(logged).includes(CREDENTIALS.AWS_SECRET_ACCESS_KEY));
  });

  it("leaves another shard's stack, and a git stack, unfenced", function () {
    const fence = apiStackFence(shared.runs);
    return shared.runs.exclusively(
      CLUSTER,
      "0",
      async () => {
        assert.ok(fence(API_STACK), "the shard's own stack");
        assert.equal(fence(apiStackName(CLUSTER, "pool-b")), undefined);
        assert.equal(fence("prod"), undefined);
      },
      () => false,
    );
  });

  it("cancels a run whose run lock is lost (its database connection ended) while its CLI runs", async function () {
    const a = replica("a", { runFence: apiStackFence(shared.runs) });
    const running = shared.runs.exclusively(
      CLUSTER,
      "0",
      () => a.up(stack(members(3, 20_000), API_STACK)),
      () => false,
    );
    await until(
      "the CLI's lock in the bucket",
      async () => ((await locks()).length > 0 ? true : undefined),
      60_000,
      () => "",
      200,
    );
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    try {
      await admin.query(
        "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 2 AND granted AND pid <> pg_backend_pid()",
      );
    } finally {
      await admin.end();
    }
    await assert.rejects(running, (error: unknown) => {
      assert.ok(error instanceof RunCancelledError, String(error));
      assert.match(error.message, /lost its run lock/);
      return true;
    });
  });
});
