/**
 * What to refresh before a run deletes members. Upstream's hcloud provider fails the delete of a
 * server or placement group that is already gone (not_found; terraform-provider-hcloud
 * server/resource.go and placementgroup/resource.go) and only a refresh drops it from the state. A
 * server removed in the console or locked for abuse would otherwise hold its claim in TERMINATING
 * for ever, so the run refreshes exactly the resources it is about to delete: one read each, and
 * those found gone leave the state before the up.
 */
import type { ResourceStep } from "../engine/stackEngine";

const GONE_IS_AN_ERROR = new Set(["hcloud:index/server:Server", "hcloud:index/placementGroup:PlacementGroup"]);

/** URNs of the steps that delete a resource whose delete fails when it is already gone. */
export function refreshTargetsBeforeDelete(steps: readonly ResourceStep[]): string[] {
  return steps.filter((step) => step.op === "delete" && GONE_IS_AN_ERROR.has(step.type)).map((step) => step.urn);
}
