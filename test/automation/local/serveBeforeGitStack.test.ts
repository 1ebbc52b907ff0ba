/**
 * `serve --engine automation` started before the git stack was applied (a new user's first try):
 * /readyz (degraded) and the log name the missing network and firewall and the command that creates them,
 * creates are refused with 503 Unavailable (nothing accepted, so nothing retried forever), and after
 * `pulumi up` the service turns ready by itself and a create goes through.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { NodefleetApiError } from "../../../automation/client/nodefleetClient";
import { type LocalCloud, startLocalCloud } from "../../../automation/local/localCloud";
import { runPulumi } from "../../../automation/local/localStack";
import { TOKEN } from "../../support/apiHarness";
import { UP } from "../../support/localFleet";
import { localStackProject } from "../../support/localStackProject";
import { type ServeProcess, startServe } from "../../support/serveProcess";
import { LOCAL_CLOUD_TOOLS, missingTools, skipUnlessAvailable } from "../../support/toolchainRequirement";
import { until } from "../../support/until";

const quiet = { info() {}, warn() {} };

describe("serve before the git stack is applied (real engine, local cloud)", function () {
  this.timeout(600_000);
  let dir: string;
  let project: string;
  let cloud: LocalCloud;
  let serve: ServeProcess | undefined;

  before(async function () {
    skipUnlessAvailable(this, missingTools(...LOCAL_CLOUD_TOOLS));
    dir = mkdtempSync(join(tmpdir(), "nodefleet-serve-first-"));
    project = localStackProject(join(dir, "project"));
    cloud = await startLocalCloud({ dataDir: join(dir, "data"), hcloudPort: 0, logger: quiet, projectDir: project });
    serve = await startServe(
      join(dir, "serve"),
      { ...cloud.env, NODEFLEET_API_TOKENS: `local:${TOKEN}`, NODEFLEET_PREREQUISITE_RECHECK_MS: "500" },
      { stack: "local", engine: "automation", cwd: project, clusterId: "local", startTimeoutMs: 180_000 },
    );
  });

  after(async function () {
    serve?.child.kill("SIGTERM");
    await serve?.exited();
    await cloud?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("says on /readyz and in its log what is missing and the command to run", async function () {
    const readiness = await until(
      "readyz to name the missing resources",
      async () => {
        const response = await fetch(`${serve!.baseUrl}/readyz`);
        const body = (await response.json()) as { status: string; details: { gitStack?: string } };
        return body.details.gitStack ? { status: response.status, body } : undefined;
      },
      60_000,
    );
    // Degraded is still 200: deletes keep working (probeRoutes.ts).
    assert.equal(readiness.status, 200);
    assert.equal(readiness.body.status, "degraded");
    assert.match(readiness.body.details.gitStack!, /network local-network and firewall local-nodes are missing/);
    assert.match(readiness.body.details.gitStack!, /run `pulumi up --stack local` in /);
    assert.match(serve!.stderr(), /the git stack is not applied.*pulumi up --stack local/);
  });

  it("refuses a create with 503 Unavailable naming the reason, and accepts nothing", async function () {
    await assert.rejects(serve!.client.createNode({ uniqueID: "first-try", pool: "local-burst" }), (error: unknown) => {
      assert.ok(error instanceof NodefleetApiError, String(error));
      assert.equal(error.status, 503);
      assert.equal(error.code, "Unavailable");
      assert.match(error.message, /pulumi up --stack local/);
      return true;
    });
    assert.deepEqual(await serve!.client.listNodes(), [], "no claim was accepted");
  });

  it("turns ready by itself once the git stack is applied, and then creates", async function () {
    await runPulumi(UP, project, cloud.env);
    await until(
      "readyz to turn ready",
      async () => (((await (await fetch(`${serve!.baseUrl}/readyz`)).json()) as { status: string }).status === "ready" ? true : undefined),
      60_000,
      () => serve!.stderr().slice(-2000),
    );
    const { created, node } = await serve!.client.createNode({ uniqueID: "after-apply", pool: "local-burst" });
    assert.equal(created, true);
    const running = await until(
      "the node to run",
      async () => {
        const current = await serve!.client.getNode(node.nodeID);
        return current.status === "RUNNING" ? current : undefined;
      },
      300_000,
      () => serve!.stderr().slice(-3000),
    );
    assert.equal(running.pool, "local-burst");
  });
});
