/**
 * `cluster.hcloudProviderIds: hcloud` (docs/hcloud-ccm.md) with the real engine on the local cloud:
 * the static pool's servers are created with user data that reads the server id from the metadata
 * service at boot; the node agent, standing in for the kubelet, reads it from the fake's metadata
 * stand-in the way the user data says, so every Node registers `hcloud://<its server's id>`, the
 * id the fake Hetzner API gave the server; the stack's `nodes` output names the same providerIDs.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type LocalCloud, startLocalCloud } from "../../../automation/local/localCloud";
import { runPulumi } from "../../../automation/local/localStack";
import { UP, allPoolServersReady, poolNodes, setLocalHcloudProviderIds } from "../../support/localFleet";
import { localStackProject } from "../../support/localStackProject";
import { LOCAL_CLOUD_TOOLS, missingTools, skipUnlessAvailable } from "../../support/toolchainRequirement";

const quiet = { info() {}, warn() {} };

describe("hcloud://<server id> providerIDs on the local cloud (real engine)", function () {
  this.timeout(600_000);
  let dir: string;
  let project: string;
  let cloud: LocalCloud;

  before(async function () {
    skipUnlessAvailable(this, missingTools(...LOCAL_CLOUD_TOOLS));
    dir = mkdtempSync(join(tmpdir(), "nodefleet-hcloud-provider-id-"));
    project = localStackProject(join(dir, "project"));
    cloud = await startLocalCloud({ dataDir: join(dir, "data"), hcloudPort: 0, agentIntervalMs: 300, logger: quiet, projectDir: project });
    setLocalHcloudProviderIds(cloud, "hcloud");
  });

  after(async function () {
    await cloud?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("registers every Node with hcloud://<its server's id>, as the stack's nodes output says", async function () {
    await runPulumi(UP, project, cloud.env);
    const servers = await allPoolServersReady(cloud, "local-general");
    assert.equal(servers.length, 3);
    const nodes = await poolNodes(cloud, "local-general");
    for (const server of servers) {
      const node = nodes.find((n) => n.metadata.name === server.name);
      assert.ok(node, `a Node for ${server.name}`);
      assert.equal(node.spec.providerID, `hcloud://${server.id}`, `${server.name}'s Node names its own server id`);
    }
    const outputs = JSON.parse(await runPulumi(["stack", "output", "nodes", "--json", "--stack", "local"], project, cloud.env)) as Array<{
      hostname: string;
      nodeName?: string;
      providerID: string;
      serverId: string;
    }>;
    const general = outputs.filter((o) => servers.some((s) => String(s.id) === String(o.serverId)));
    assert.equal(general.length, 3, JSON.stringify(outputs));
    for (const output of general) assert.equal(output.providerID, `hcloud://${output.serverId}`);
  });
});
