/**
 * `cluster.hcloudProviderIds` (docs/hcloud-ccm.md): the default keeps every member's providerID,
 * user data and generation as they were (existing fleets see no replacement); `hcloud` renders
 * user data that reads the server id from the metadata service at boot and gives the kubelet
 * `hcloud://<that id>`, for k0s and kubeadm clusters alike; the local cloud's reader and the fake's
 * metadata stand-in follow that user data.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { HCLOUD_INSTANCE_ID_URL, renderHcloudServerIdDiscovery } from "../../components/bootstrap/hcloudServerId";
import { renderKubeletConfig } from "../../components/bootstrap/kubeletConfig";
import { renderWorkerSelfJoinScript } from "../../components/bootstrap/selfJoinScript";
import { renderWorkerUserData } from "../../components/bootstrap/workerUserData";
import { workerUserDataInputs } from "../../components/bootstrap/workerUserDataInputs";
import { type HcloudStaticPool, parseFleetSpec } from "../../components/fleet/fleetSpec";
import { HCLOUD_PROVIDER_ID_FROM_METADATA, hcloudProviderId } from "../../components/fleet/naming";
import { planHcloudServers, staticHcloudMembers } from "../../components/hcloud/hcloudServerPlan";
import { buildFakeHcloud } from "../../automation/local/fakeHcloud/fakeHcloudApi";
import { fakeMetadataUrl } from "../../automation/local/fakeHcloud/fakeHcloudMetadata";
import { UserDataError, readK0sWorkerUserData, withServerId } from "../../automation/local/workerUserDataReader";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { hcloudStaticPoolConfig, rawFleetConfig, specProblems } from "../support/fleetConfigFixture";

const TOKEN = "abcdef.0123456789abcdef";

function specWith(hcloudProviderIds?: string) {
  const spec = parseFleetSpec(
    rawFleetConfig({ cluster: hcloudProviderIds === undefined ? {} : { hcloudProviderIds }, pools: [hcloudStaticPoolConfig()] }),
  );
  const { kubeconfig: _unused, ...cluster } = spec.cluster;
  return { cluster, pool: spec.pools[0] as HcloudStaticPool };
}

function planned(hcloudProviderIds?: string) {
  const { cluster, pool } = specWith(hcloudProviderIds);
  return planHcloudServers(cluster, pool, staticHcloudMembers(cluster, pool));
}

describe("cluster.hcloudProviderIds", function () {
  it("is refused, naming the field and the values, when it is neither nodefleet nor hcloud", function () {
    const problems = specProblems(rawFleetConfig({ cluster: { hcloudProviderIds: "hrobot" } }));
    assert.ok(
      problems.some((p) => p.includes("hcloudProviderIds") && p.includes("nodefleet or hcloud")),
      problems.join("\n"),
    );
  });

  it("by default (unset or nodefleet) keeps the providerID, user data and generation of existing fleets", function () {
    const unset = planned();
    const explicit = planned("nodefleet");
    assert.deepEqual(
      unset.map((p) => p.member.providerID),
      explicit.map((p) => p.member.providerID),
    );
    for (const p of unset) assert.match(p.member.providerID, /^[a-z][a-z0-9+.-]*:\/\/\/[a-z0-9-]+\/[a-z0-9-]+$/);
    assert.deepEqual(
      unset.map((p) => p.generation),
      explicit.map((p) => p.generation),
    );
    const userData = renderWorkerUserData(unset[0]!.cluster, unset[0]!.render, TOKEN);
    assert.ok(!userData.includes("169.254.169.254"), "the default user data never asks the metadata service");
  });

  it("hcloud: members read their id at boot, which is a new generation (the switch rolls the pool)", function () {
    const before = planned();
    const after = planned("hcloud");
    for (const p of after) assert.equal(p.member.providerID, HCLOUD_PROVIDER_ID_FROM_METADATA);
    assert.notEqual(after[0]!.generation, before[0]!.generation);
  });
});

describe("user data of a member whose providerID is read at boot", function () {
  it("k0s: the join script reads instance-id and passes hcloud://<id> to the kubelet; the local reader follows it", function () {
    const [plan] = planned("hcloud");
    const userData = renderWorkerUserData(plan!.cluster, plan!.render, TOKEN);
    assert.ok(userData.includes(HCLOUD_INSTANCE_ID_URL));
    assert.ok(!userData.includes("{instance-id}"), "the placeholder is never rendered");
    const intent = readK0sWorkerUserData(userData);
    assert.equal(intent.serverIdUrl, HCLOUD_INSTANCE_ID_URL);
    assert.equal(withServerId(intent.providerID, "4711"), "hcloud://4711");
    assert.throws(() => withServerId(intent.providerID, "not found"), UserDataError);
  });

  it("k0s: a fixed providerID is read as before, with no metadata URL", function () {
    const [plan] = planned();
    const intent = readK0sWorkerUserData(renderWorkerUserData(plan!.cluster, plan!.render, TOKEN));
    assert.equal(intent.serverIdUrl, undefined);
    assert.equal(intent.providerID, plan!.member.providerID);
  });

  it("kubeadm: the kubelet's drop-in names hcloud://${hcloud_server_id} and its config no providerID", function () {
    const { cluster, pool } = specWith("hcloud");
    const kubeadm = { ...cluster, kind: "kubeadm" as const, kubernetesVersion: "v1.33.4" };
    const [member] = staticHcloudMembers(kubeadm, pool);
    const inputs = workerUserDataInputs(kubeadm, member!);
    const script = renderWorkerSelfJoinScript(inputs, TOKEN);
    assert.match(script, /^ExecStart=\/usr\/bin\/kubelet .* --provider-id=hcloud:\/\/\$\{hcloud_server_id\}$/m);
    assert.ok(script.indexOf(HCLOUD_INSTANCE_ID_URL) < script.indexOf("ExecStart=/usr/bin/kubelet"), "the id is read before the drop-in");
    assert.ok(!renderKubeletConfig({ kubelet: kubeadm.kubelet, providerID: HCLOUD_PROVIDER_ID_FROM_METADATA }).includes("providerID"));
    assert.ok(renderKubeletConfig({ kubelet: kubeadm.kubelet, providerID: "nodefleet:///c/n" }).includes("providerID: nodefleet:///c/n"));
  });

  it("the discovery sets hcloud_server_id from what the service answers, and refuses an answer that is no server id", function () {
    const run = (answer: string) =>
      execFileSync(
        "bash",
        [
          "-c",
          `set -euo pipefail\ncurl() { printf '%s' ${JSON.stringify(answer)}; }\n${renderHcloudServerIdDiscovery()}\nprintf '%s' "$hcloud_server_id"`,
        ],
        {
          encoding: "utf8",
          stdio: ["ignore", "pipe", "pipe"],
        },
      );
    assert.equal(run("4711"), "4711");
    assert.throws(() => run("<html>"), /no server id/);
  });

  it("hcloudProviderId is the controller's hcloud://<server id>", function () {
    assert.equal(hcloudProviderId(4711), "hcloud://4711");
    assert.equal(hcloudProviderId("12"), "hcloud://12");
  });
});

describe("the fake's metadata stand-in", function () {
  let dir: string;
  before(() => (dir = mkdtempSync(join(tmpdir(), "nodefleet-fake-metadata-"))));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("answers a server's instance-id without a token, 404 for a server that does not exist", async function () {
    const fake = buildFakeHcloud({ token: "t".repeat(64), stateFile: join(dir, "state.json") });
    try {
      const created = await fake.app.inject({
        method: "POST",
        url: "/servers",
        headers: { authorization: `Bearer ${"t".repeat(64)}` },
        payload: { name: "n1", server_type: "cx22", image: "ubuntu-24.04", location: "hel1" },
      });
      assert.equal(created.statusCode, 201, created.body);
      const id = (created.json() as { server: { id: number } }).server.id;
      const url = fakeMetadataUrl("http://127.0.0.1:1", id, HCLOUD_INSTANCE_ID_URL)!;
      const path = new URL(url).pathname;
      const answer = await fake.app.inject({ method: "GET", url: path });
      assert.equal(answer.statusCode, 200);
      assert.equal(answer.body, String(id));
      assert.equal((await fake.app.inject({ method: "GET", url: path.replace(`/${id}/`, "/999999/") })).statusCode, 404);
      assert.equal(fakeMetadataUrl("http://127.0.0.1:1", id, "http://example.com/x"), undefined);
    } finally {
      await fake.app.close();
    }
  });
});
