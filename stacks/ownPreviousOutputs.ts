/**
 * The stack's own `nodes` and `network` outputs of its last update, read at the start of a plain
 * `pulumi up` through a StackReference to itself: static pools roll a fleet-wide change step by
 * step there too, and a changed network range is refused before anything is declared (the
 * automation engine and `nodefleet preview` pass them in). A first update reads nothing.
 */
import * as pulumi from "@pulumi/pulumi";
import type { PreviousRunOutputs } from "./fleetProgram";

export async function ownPreviousOutputs(): Promise<PreviousRunOutputs> {
  const self = new pulumi.StackReference("nodefleet-previous-run", {
    name: `${pulumi.getOrganization()}/${pulumi.getProject()}/${pulumi.getStack()}`,
  });
  const [nodes, network] = await Promise.all([self.getOutputDetails("nodes"), self.getOutputDetails("network")]);
  return { nodes: nodes.value ?? nodes.secretValue, network: network.value ?? network.secretValue };
}
