/**
 * Autoscaled members with `cluster.hcloudProviderIds: hcloud` (docs/hcloud-ccm.md): the snapshot
 * records it (older snapshots keep their hash), the member renders the boot-time providerID, the
 * API shows `hcloud://<server id>` once the server exists and nothing before, and switching the
 * setting is drift (ProviderIdDrift), so Karpenter replaces such members gracefully.
 */
import assert from "node:assert/strict";
import { type HcloudAutoscaledPool, parseFleetSpec } from "../../../components/fleet/fleetSpec";
import { HCLOUD_PROVIDER_ID_FROM_METADATA } from "../../../components/fleet/naming";
import { claimProviderId } from "../../../automation/api/nodeView";
import { drifts, memberProviderId, poolTemplate, templateHash } from "../../../automation/reconciler/memberSnapshot";
import type { MemberSnapshot } from "../../../automation/store/claimSnapshot";
import type { Claim } from "../../../automation/store/claimStore";
import { hcloudAutoscaledPoolConfig, rawFleetConfig } from "../../support/fleetConfigFixture";

function fleet(hcloudProviderIds?: string) {
  const spec = parseFleetSpec(
    rawFleetConfig({ cluster: hcloudProviderIds === undefined ? {} : { hcloudProviderIds }, pools: [hcloudAutoscaledPoolConfig()] }),
  );
  return { cluster: spec.cluster, pool: spec.pools[0] as HcloudAutoscaledPool };
}

function claimOf(hcloudProviderIds: string | undefined, instanceId?: string): Claim {
  const { cluster, pool } = fleet(hcloudProviderIds);
  const template = poolTemplate(cluster, pool);
  const serverType = pool.serverTypes[0]!;
  const snapshot = { template, serverType, templateHash: templateHash(template, serverType) } as unknown as MemberSnapshot;
  return { nodeId: "k0123456789ab", snapshot, ...(instanceId ? { instanceId } : {}) } as unknown as Claim;
}

describe("hcloudProviderIds for the scaling API's members", function () {
  it("leaves the template of an unset or nodefleet cluster as it was, and records hcloud", function () {
    assert.equal("providerIds" in poolTemplate(fleet().cluster, fleet().pool), false);
    assert.equal("providerIds" in poolTemplate(fleet("nodefleet").cluster, fleet("nodefleet").pool), false);
    assert.equal(poolTemplate(fleet("hcloud").cluster, fleet("hcloud").pool).providerIds, "hcloud");
  });

  it("renders the member by its snapshot, whatever the cluster says now", function () {
    const { cluster } = fleet();
    assert.equal(memberProviderId(cluster, "k1", claimOf("hcloud").snapshot.template), HCLOUD_PROVIDER_ID_FROM_METADATA);
    assert.equal(memberProviderId(cluster, "k1", claimOf(undefined).snapshot.template), `nodefleet:///${cluster.id}/k1`);
  });

  it("shows hcloud://<server id> once the server exists, nothing before; the nodefleet form at once", function () {
    const { cluster } = fleet();
    assert.equal(claimProviderId(cluster, claimOf("hcloud")), "");
    assert.equal(claimProviderId(cluster, claimOf("hcloud", "4711")), "hcloud://4711");
    assert.equal(claimProviderId(cluster, claimOf(undefined, "4711")), `nodefleet:///${cluster.id}/k0123456789ab`);
  });

  it("reports switching the setting as ProviderIdDrift", function () {
    const before = claimOf(undefined).snapshot;
    const { cluster, pool } = fleet("hcloud");
    const found = drifts(before, poolTemplate(cluster, pool));
    assert.deepEqual(
      found.map((d) => d.reason),
      ["ProviderIdDrift"],
    );
  });
});
