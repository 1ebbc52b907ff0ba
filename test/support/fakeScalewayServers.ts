/**
 * Elastic Metal servers ordered straight from a fake Scaleway API, as another fleet, a killed run or
 * a previous stack would have left them: the tests of the healer and the orphan reclaimer start from
 * such servers.
 */
import { strict as assert } from "node:assert";

export interface FakeScalewayAccount {
  readonly apiUrl: string;
  readonly secretKey: string;
  readonly projectId: string;
}

/** Orders a server of the zone's first offer, named and tagged as given. */
export async function orderElasticMetalServer(account: FakeScalewayAccount, zone: string, name: string, tags: readonly string[] = []) {
  const base = `${account.apiUrl}/baremetal/v1/zones/${zone}`;
  const headers = { "X-Auth-Token": account.secretKey, "Content-Type": "application/json" };
  const offers = (await (await fetch(`${base}/offers`, { headers })).json()) as { offers: Array<{ id: string }> };
  const created = await fetch(`${base}/servers`, {
    method: "POST",
    headers,
    body: JSON.stringify({ offer_id: offers.offers[0]!.id, name, project_id: account.projectId, tags }),
  });
  assert.equal(created.status, 200, await created.text());
}

/** The tags nodefleet puts on a member's server. */
export function memberTags(clusterId: string, pool: string, nodeId: string): string[] {
  return [`nodefleet.io/cluster=${clusterId}`, `nodefleet.io/pool=${pool}`, `nodefleet.io/node=${nodeId}`];
}
