/**
 * The stack's own `nodes` output of its last update, read at the start of a plain `pulumi up`
 * through a StackReference to itself, so static pools roll a fleet-wide change step by step there
 * too (the automation engine and `nodefleet preview` pass it in). A first update reads nothing.
 */
import * as pulumi from "@pulumi/pulumi";

export async function ownPreviousNodes(): Promise<unknown> {
  const self = new pulumi.StackReference("nodefleet-previous-run", { name: `${pulumi.getOrganization()}/${pulumi.getProject()}/${pulumi.getStack()}` });
  const details = await self.getOutputDetails("nodes");
  return details.value ?? details.secretValue;
}
