/**
 * What to refresh before a run deletes members. Upstream's hcloud provider fails the delete of a
 * server or placement group that is already gone (not_found; terraform-provider-hcloud
 * server/resource.go and placementgroup/resource.go) and only a refresh drops it from the state. A
 * server removed in the console or locked for abuse would otherwise hold its claim in TERMINATING
 * for ever, so the run refreshes exactly the resources it is about to delete: one read each, and
 * those found gone leave the state before the up. A run that skipped the guard's preview takes them
 * from the stored state instead.
 */
import type { ResourceStep, StoredResource } from "../engine/stackEngine";
import { nodePattern } from "./runOutcome";

const SERVER = "hcloud:index/server:Server";
const PLACEMENT_GROUP = "hcloud:index/placementGroup:PlacementGroup";
const GONE_IS_AN_ERROR = new Set([SERVER, PLACEMENT_GROUP]);

/** URNs of the steps that delete a resource whose delete fails when it is already gone. */
export function refreshTargetsBeforeDelete(steps: readonly ResourceStep[]): string[] {
  return steps.filter((step) => step.op === "delete" && GONE_IS_AN_ERROR.has(step.type)).map((step) => step.urn);
}

/**
 * The same without a preview, for a run whose only deletes are the members it removes (its guard
 * fingerprint is unchanged): their servers in the stored state, and the placement groups those
 * servers are in. A group is deleted only with its last member, so some of these stay; refreshing
 * one of them is a read that changes nothing.
 */
export function refreshTargetsFromState(resources: readonly StoredResource[], leaving: readonly string[]): string[] {
  const patterns = leaving.map(nodePattern);
  const servers = resources.filter((r) => r.type === SERVER && patterns.some((p) => p.test(r.urn)));
  const groupIds = new Set(
    servers
      .map((s) => s.inputs?.placementGroupId)
      .filter((id) => id !== undefined && id !== null)
      .map(String),
  );
  const groups = resources.filter((r) => r.type === PLACEMENT_GROUP && r.id !== undefined && groupIds.has(String(r.id)));
  return [...servers, ...groups].map((r) => r.urn);
}
