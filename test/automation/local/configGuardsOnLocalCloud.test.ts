/**
 * "A typo never deletes a fleet", on the local cloud with the real engine: once the local stack is
 * applied, a stack file whose pools are emptied or whose `nodefleet:pools` is misspelt makes
 * `pulumi preview --stack local` (and `pulumi up`) exit non-zero with the reason, the setting that
 * allows an empty fleet, or the nearest valid key, and no server is touched.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type YAMLMap, parseDocument } from "yaml";
import { type LocalCloud, startLocalCloud } from "../../../automation/local/localCloud";
import { runPulumi } from "../../../automation/local/localStack";
import { UP, editLocalPools, poolServers } from "../../support/localFleet";
import { localStackProject } from "../../support/localStackProject";
import { LOCAL_CLOUD_TOOLS, missingTools, skipUnlessAvailable } from "../../support/toolchainRequirement";

const quiet = { info() {}, warn() {} };
const PREVIEW = ["preview", "--stack", "local", "--non-interactive", "--diff"];

describe("config guards on the local cloud (real engine): a typo never deletes a fleet", function () {
  this.timeout(600_000);
  let dir: string;
  let project: string;
  let cloud: LocalCloud;
  let original: string;

  /** Server ids of the static pool, to show that nothing was deleted or replaced. */
  const serverIds = async () => (await poolServers(cloud, "local-general")).map((s) => s.id).sort();

  /** Edits the local stack file's `config:` map as a document (keys renamed, added or removed). */
  function editConfig(edit: (config: YAMLMap<string, unknown>) => void): void {
    const document = parseDocument(readFileSync(cloud.stackFile!, "utf8"));
    edit(document.get("config") as YAMLMap<string, unknown>);
    writeFileSync(cloud.stackFile!, document.toString());
  }

  before(async function () {
    skipUnlessAvailable(this, missingTools(...LOCAL_CLOUD_TOOLS, "kubectl"));
    dir = mkdtempSync(join(tmpdir(), "nodefleet-config-guards-"));
    project = localStackProject(join(dir, "project"));
    cloud = await startLocalCloud({ dataDir: join(dir, "data"), hcloudPort: 0, agentIntervalMs: 300, logger: quiet, projectDir: project });
    await runPulumi(UP, project, cloud.env);
    original = readFileSync(cloud.stackFile!, "utf8");
  });

  afterEach(function () {
    if (cloud?.stackFile && original !== undefined) writeFileSync(cloud.stackFile, original);
  });

  after(async function () {
    await cloud?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("refuses an empty pool list over the applied fleet: preview and up exit non-zero naming nodefleet:allowEmptyFleet, nothing is deleted", async function () {
    const before = await serverIds();
    assert.equal(before.length, 3, "the local stack's static pool is applied");
    editLocalPools(cloud, () => []);
    const refused =
      /nodefleet:pools: no pools are declared \(the key is missing or empty\), but the stack's last update holds 3 members \(local-general: 3\)[\s\S]*set nodefleet:allowEmptyFleet: true/;
    await assert.rejects(runPulumi(PREVIEW, project, cloud.env), refused);
    await assert.rejects(runPulumi(UP, project, cloud.env), refused);
    assert.deepEqual(await serverIds(), before, "no server was deleted");
  });

  it("refuses a missing nodefleet:pools the same way", async function () {
    const before = await serverIds();
    editConfig((config) => config.delete("nodefleet:pools"));
    await assert.rejects(runPulumi(PREVIEW, project, cloud.env), /nodefleet:pools: no pools are declared/);
    assert.deepEqual(await serverIds(), before);
  });

  it("previews the deletes once nodefleet:allowEmptyFleet: true says so (nothing applied)", async function () {
    const before = await serverIds();
    editLocalPools(cloud, () => []);
    editConfig((config) => config.set("nodefleet:allowEmptyFleet", true));
    const preview = await runPulumi(PREVIEW, project, cloud.env);
    assert.match(preview, /- hcloud:index\/server:Server/, "the servers' deletes are planned");
    assert.deepEqual(await serverIds(), before, "a preview deletes nothing");
  });

  it("refuses nodefleet:pool (a typo of nodefleet:pools) with the nearest valid key, before declaring anything", async function () {
    const before = await serverIds();
    editConfig((config) => {
      config.set("nodefleet:pool", config.get("nodefleet:pools"));
      config.delete("nodefleet:pools");
    });
    const didYouMean = /nodefleet:pool: unknown key in the nodefleet namespace \(did you mean nodefleet:pools\?\)/;
    await assert.rejects(runPulumi(PREVIEW, project, cloud.env), didYouMean);
    await assert.rejects(runPulumi(UP, project, cloud.env), didYouMean);
    assert.deepEqual(await serverIds(), before, "no server was deleted");
  });

  it("previews without error once the stack file is back as applied", async function () {
    await runPulumi(["preview", "--stack", "local", "--non-interactive"], project, cloud.env);
    assert.equal((await serverIds()).length, 3);
  });
});
