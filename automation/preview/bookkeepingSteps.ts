/**
 * Steps of a preview that change nothing a reviewer cares about, so an unchanged fleet previews as
 * no change: the program's read of its own previous outputs (a StackReference that `pulumi up`
 * declares and `nodefleet preview` does not need, since it passes those outputs in), and the join
 * token parts of nodes that have joined, which the program stops declaring once their Node is Ready
 * (deleting them revokes a credential nobody uses), or, for tokens of nodefleet's own plugin, whose
 * Secret it deletes in place (an update of `secretObject` alone). They are counted apart and
 * explained in one line.
 */
import { NODE_BOOTSTRAP_TOKEN_TYPE } from "../../components/provider/bootstrapTokenResource";
import type { ResourceStep } from "../engine/stackEngine";

/** Name of the program's StackReference to its own stack (stacks/ownPreviousOutputs.ts). */
const OWN_OUTPUTS_REFERENCE = "nodefleet-previous-run";
const STACK_REFERENCE = "pulumi:pulumi:StackReference";
/** `<server name>-token` and its parts (components/kubernetes/bootstrapToken.ts). */
const TOKEN_PART = /^(.+)-token(?:-(?:id|secret|password|expiry|secret-object))?$/;

export interface Bookkeeping {
  /** Nodes whose join token is revoked because they joined. */
  readonly revokedJoinTokens: number;
  /** The program's own-outputs StackReference appears in the steps. */
  readonly ownOutputsReference: boolean;
}

/** Splits `steps` into the reviewable ones and the bookkeeping, which it summarises. */
export function separateBookkeeping<S extends ResourceStep>(steps: readonly S[]): { steps: S[]; bookkeeping: S[]; summary: Bookkeeping } {
  const keptServers = new Set(
    steps.filter((s) => s.type.endsWith("/server:Server") && s.op !== "delete" && s.op !== "replace").map((s) => s.name),
  );
  const revoked = new Set<string>();
  const kept: S[] = [];
  const bookkeeping: S[] = [];
  for (const step of steps) {
    const secretOnly = step.op === "update" && step.type === NODE_BOOTSTRAP_TOKEN_TYPE && step.keys.join() === "secretObject";
    const token = step.op === "delete" || secretOnly ? TOKEN_PART.exec(step.name) : null;
    if (step.type === STACK_REFERENCE && step.name === OWN_OUTPUTS_REFERENCE && step.op !== "same") {
      bookkeeping.push(step);
    } else if (token && keptServers.has(token[1]!)) {
      revoked.add(token[1]!);
      bookkeeping.push(step);
    } else {
      kept.push(step);
    }
  }
  return {
    steps: kept,
    bookkeeping,
    summary: { revokedJoinTokens: revoked.size, ownOutputsReference: bookkeeping.some((s) => s.type === STACK_REFERENCE) },
  };
}

/** The sentence a preview prints for the bookkeeping, or undefined when there is none. */
export function bookkeepingLine(summary: Bookkeeping): string | undefined {
  const parts: string[] = [];
  if (summary.revokedJoinTokens > 0)
    parts.push(
      `${summary.revokedJoinTokens === 1 ? "the join token of 1 node that has" : `the join tokens of ${summary.revokedJoinTokens} nodes that have`} joined ${summary.revokedJoinTokens === 1 ? "is" : "are"} revoked`,
    );
  if (summary.ownOutputsReference) parts.push(`the program's read of its own last outputs (${OWN_OUTPUTS_REFERENCE}) is not needed here`);
  return parts.length === 0 ? undefined : `Not counted as changes: ${parts.join("; ")}.`;
}
