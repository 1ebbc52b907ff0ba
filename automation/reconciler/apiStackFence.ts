/**
 * The scale-out mode's fence of the API stacks (docs/scaling-api.md, "A dead replica's stack lock"):
 * every replica's run of an API stack holds its shard's run lock (the reconciler runs each inside
 * `RunStore.exclusively`), so a run holding it knows no other run of that stack is live. The engine
 * is given the lock for the shard's own stack only: a git stack, or another shard's, is not fenced.
 */
import type { RunFence } from "../engine/automationEngine";
import type { RunStore } from "../store/runStore";
import { apiStackName } from "./apiStack";

export function apiStackFence(runs: RunStore): (stackName: string) => RunFence | undefined {
  return (stackName) => {
    const held = runs.runLockHeld();
    return held && apiStackName(held.clusterId, held.shard) === stackName ? held : undefined;
  };
}
