/**
 * No bootstrap token secret in clear in any Pulumi state (issue 32, part 1): on the local cloud with
 * the real engine, after the git stack's first `pulumi up`, a scale-up through the scaling API and a
 * rolling replacement, every `kube-system/bootstrap-token-*` Secret seen in the cluster is searched
 * for, as text and in base64, in every file of both stacks' backends: checkpoints, `.bak` files,
 * backups and history. Anyone who can read the state must not be able to join a machine.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileBackendDir } from "../../../automation/engine/fileBackendState";
import { kube } from "../../../automation/local/kubeClient";
import { type LocalCloud, startLocalCloud } from "../../../automation/local/localCloud";
import { runPulumi } from "../../../automation/local/localStack";
import { awaitRunning, createClaims } from "../../support/karpenterConformance";
import { UP, allPoolServersReady, driveRollout, editLocalPool, editLocalPools, poolServers } from "../../support/localFleet";
import { localStackProject } from "../../support/localStackProject";
import { type ServeProcess, serveOnLocalCloud } from "../../support/serveProcess";
import { filesHolding } from "../../support/filesHolding";
import { until } from "../../support/until";
import { LOCAL_CLOUD_TOOLS, missingTools, skipUnlessAvailable } from "../../support/toolchainRequirement";

const STATIC = "local-general";
const BURST = "local-burst";
const quiet = { info() {}, warn() {} };

interface SecretItem {
  metadata: { name: string };
  type: string;
  data?: Record<string, string>;
}

describe("bootstrap token secrets in the Pulumi state on the local cloud (real engine)", function () {
  this.timeout(1_200_000);
  let dir: string;
  let project: string;
  let cloud: LocalCloud;
  let serve: ServeProcess | undefined;
  /** Every token secret the cluster has held, by Secret name. */
  const seen = new Map<string, string>();

  before(async function () {
    skipUnlessAvailable(this, missingTools(...LOCAL_CLOUD_TOOLS));
    dir = mkdtempSync(join(tmpdir(), "nodefleet-token-state-"));
    project = localStackProject(join(dir, "project"));
    cloud = await startLocalCloud({ dataDir: join(dir, "data"), hcloudPort: 0, agentIntervalMs: 500, logger: quiet, projectDir: project });
    editLocalPool(cloud, STATIC, (pool) => {
      pool.replicas = 2;
      pool.rollout = { maxSurge: 2, maxUnavailable: 0, drainTimeoutSeconds: 60 };
    });
    editLocalPools(cloud, (pools) => pools.filter((p) => p.name === STATIC || p.name === BURST));
  });

  after(async function () {
    if (serve && serve.child.exitCode === null) {
      serve.child.kill("SIGTERM");
      await serve.exited();
    }
    await cloud?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** Records the token secrets the cluster holds now; returns how many there were. */
  const recordTokenSecrets = async (): Promise<number> => {
    const list = (await kube(cloud.plane.admin, "GET", "/api/v1/namespaces/kube-system/secrets")) as { items: SecretItem[] };
    const tokens = list.items.filter((s) => s.type === "bootstrap.kubernetes.io/token");
    for (const secret of tokens) {
      const encoded = secret.data?.["token-secret"];
      assert.ok(encoded, `${secret.metadata.name} has a token-secret`);
      seen.set(secret.metadata.name, Buffer.from(encoded, "base64").toString("utf8"));
    }
    return tokens.length;
  };

  /** Every state file of the git stack's backend and of the service's data directory (its API stack). */
  const stateRoots = (): string[] => [fileBackendDir(cloud.env.PULUMI_BACKEND_URL!)!, join(dir, "serve")];

  const assertNoSecretInState = (when: string) => {
    assert.ok(seen.size > 0, `${when}: token secrets were read from the cluster`);
    const needles = [...seen].flatMap(([name, secret]) => [
      { label: `${name} token-secret`, text: secret },
      { label: `${name} token-secret (base64)`, text: Buffer.from(secret).toString("base64") },
    ]);
    const found = filesHolding(stateRoots(), needles);
    assert.deepEqual(found, [], `${when}: token secrets in clear in state files`);
  };

  it("keeps the git stack's token secrets out of its state after the first up", async function () {
    await runPulumi(UP, project, cloud.env);
    await allPoolServersReady(cloud, STATIC);
    assert.ok((await recordTokenSecrets()) >= 2, "a token Secret per static member");
    assertNoSecretInState("after the first up");
  });

  it("keeps them out of both stacks' state after a scale-up through the API", async function () {
    serve = await serveOnLocalCloud(join(dir, "serve"), cloud.env, project);
    const before = seen.size;
    const ids = await createClaims(serve.client, ["token-a", "token-b"], { pool: BURST, instanceType: "cpx21" });
    // Read while the new members boot: their Secrets go once their Nodes register and a run follows.
    await until(
      "the API members' token Secrets",
      async () => ((await recordTokenSecrets(), seen.size >= before + 2) ? true : undefined),
      300_000,
      () => serve!.stderr().slice(-3000),
    );
    await awaitRunning(
      serve.client,
      ids,
      (what, probe) => until(what, probe, 600_000, () => serve!.stderr().slice(-3000), 1000),
      "nodefleet:///local/",
    );
    await recordTokenSecrets();
    assertNoSecretInState("after the API scale-up");
  });

  it("keeps them out after a rolling replacement of the static pool", async function () {
    const oldNames = new Set((await poolServers(cloud, STATIC)).map((s) => s.name));
    const before = seen.size;
    editLocalPool(cloud, STATIC, (pool) => ((pool.labels as Record<string, string>)["example.com/revision"] = "2"));
    await driveRollout({
      cloud,
      project,
      pool: STATIC,
      members: 2,
      maxSurge: 2,
      maxUnavailable: 0,
      isNew: (s) => !oldNames.has(s.name),
      maxRuns: 6,
      afterRun: async () => void (await recordTokenSecrets()),
    });
    assert.ok(seen.size >= before + 2, "the replacements had token Secrets of their own");
    assertNoSecretInState("after the rollout");
  });
});
