/**
 * What the engine would do between two mock runs of a program: each resource of the second run is
 * stepped against the first run's inputs as the engine steps it (its `ignoreChanges` keep the
 * previous values, then the simulated engine's create/update/replace decision, stepDiff.ts), so a
 * mock-runtime test can say which commands a change would update or replace; and the assertions the
 * bare-metal pools' in-place-change tests share.
 */
import { strict as assert } from "node:assert";
import {
  type MockResourceArgsWithOptions,
  type MockRunOptions,
  type MockRunResult,
  runUnderMocks,
} from "../../automation/mocks/runUnderMocks";
import { deterministicOutputs } from "../../automation/mocks/deterministicOutputs";
import { resolveSecrets } from "../../automation/mocks/secretValues";
import { decideStep } from "../../automation/simulated/stepDiff";

/** A mock run plus each resource's `ignoreChanges` (by name), which the mock runtime leaves out of its records. */
export interface SteppedMockRun<T> extends MockRunResult<T> {
  readonly ignoreChanges: ReadonlyMap<string, readonly string[]>;
}

/** What a run recorded. */
type Recorded = Pick<MockRunResult<unknown>, "resources">;

/** `runUnderMocks` with deterministic outputs, recording each resource's `ignoreChanges`. */
async function runRecordingIgnoreChanges<T>(options: Omit<MockRunOptions<T>, "newResource">): Promise<SteppedMockRun<T>> {
  const ignoreChanges = new Map<string, readonly string[]>();
  const run = await runUnderMocks({
    ...options,
    newResource: (args: MockResourceArgsWithOptions) => {
      if (args.ignoreChanges) ignoreChanges.set(args.name, args.ignoreChanges);
      return deterministicOutputs(args);
    },
  });
  return { ...run, ignoreChanges };
}

/** `op name` of every resource of `after` that the engine would create, update or replace after `before`. */
export function engineSteps(before: Recorded, after: Recorded & Pick<SteppedMockRun<unknown>, "ignoreChanges">): string[] {
  const plain = (inputs: unknown) => resolveSecrets(inputs, true) as Record<string, unknown>;
  return after.resources.flatMap((resource) => {
    if (!resource.custom) return [];
    const previous = before.resources.find((r) => r.type === resource.type && r.name === resource.name);
    const inputs = plain(resource.inputs);
    if (previous) for (const key of after.ignoreChanges.get(resource.name) ?? []) inputs[key] = plain(previous.inputs)[key];
    const { op } = decideStep(previous && { type: previous.type, inputs: plain(previous.inputs) }, { type: resource.type, inputs });
    return op === "same" ? [] : [`${op} ${resource.name}`];
  });
}

/** A resource's inputs in `run`, secrets revealed; fails naming it when it was not declared. */
export function declaredInputs(run: Recorded, name: string): Record<string, unknown> {
  const found = run.resources.find((r) => r.name === name);
  if (!found) throw new Error(`no resource named ${name}`);
  return resolveSecrets(found.inputs, true) as Record<string, unknown>;
}

/** A label and a taint the pools in the in-place-change tests add. */
export const ADDED_LABELS = {
  labels: { "example.com/team": "build" },
  taints: [{ key: "example.com/dedicated", value: "ci", effect: "NoSchedule" }],
};
/** A cluster-firewall change: NodePorts opened to one range. */
export const OPENED_NODE_PORTS = { nodePortSources: ["198.51.100.0/24"] };

/** A run of a bare-metal pool returning its `rollout` summary. */
type InPlaceRun = Recorded & Pick<SteppedMockRun<unknown>, "ignoreChanges"> & { readonly outputs: unknown };
const rolloutOf = (run: InPlaceRun) => (run.outputs as { rollout: { updating: readonly unknown[]; remaining: number } }).rollout;

/** After ADDED_LABELS, the engine would patch each member's Node (`<member>-node-metadata`) and step nothing else, and nothing rolls. */
export function assertOnlyNodePatches(before: InPlaceRun, after: InPlaceRun, members: readonly string[]): void {
  const steps = engineSteps(before, after);
  assert.deepEqual(
    steps,
    members.map((m) => `update ${m}-node-metadata`),
    `only the Node patches: ${steps.join(", ")}`,
  );
  assert.deepEqual([rolloutOf(after).updating, rolloutOf(after).remaining], [[], 0], "nothing to roll");
  for (const member of members) {
    const metadata = declaredInputs(after, `${member}-node-metadata`);
    assert.equal((metadata.labels as Record<string, string>)["example.com/team"], "build", `${member}: the label reaches its Node`);
    assert.deepEqual(metadata.taints, ADDED_LABELS.taints);
  }
}

/** After OPENED_NODE_PORTS, the engine would update each member's `-host-firewall` (the reload, with the new rule) and step nothing else. */
export function assertOnlyHostFirewallReloads(before: InPlaceRun, after: InPlaceRun, members: readonly string[]): void {
  const steps = engineSteps(before, after);
  assert.deepEqual(
    steps,
    members.map((m) => `update ${m}-host-firewall`),
    `only the host firewalls: ${steps.join(", ")}`,
  );
  for (const member of members) {
    const script = String(declaredInputs(after, `${member}-host-firewall`).stdin);
    assert.match(script, /ip saddr \{ 198\.51\.100\.0\/24 \} tcp dport 30000-32767 accept/, `${member} gets the new rule`);
    assert.doesNotMatch(script, /restart kubelet|k0s (install|start)|join token/i, "no kubelet or k0s restart, no token");
    assert.match(script, /systemctl restart nodefleet-firewall\.service/, "the reload, when the rules changed");
  }
  assert.deepEqual(rolloutOf(after).updating, [], "no member is drained for it");
}

/** A placeholder OpenSSH key for the bare-metal pools' SSH commands (never dialled under mocks). */
const MOCK_SSH_KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAAexample\n-----END OPENSSH PRIVATE KEY-----\n";

/** `runRecordingIgnoreChanges` of a bare-metal pool's program, with an SSH key configured. */
export function runPoolRecordingIgnoreChanges<T>(program: () => T): Promise<SteppedMockRun<T>> {
  return runRecordingIgnoreChanges({
    stack: "test",
    config: { "nodefleet:sshPrivateKey": MOCK_SSH_KEY },
    secretKeys: ["nodefleet:sshPrivateKey"],
    program,
  });
}

/** The `nodes` a run reported, and their hostnames as the Ready Nodes (the next run's `current` is read from both). */
export function reportedNodes(run: { readonly outputs: unknown }): { nodes: Array<Record<string, unknown>>; ready: Set<string> } {
  const nodes = resolveSecrets((run.outputs as { nodes: unknown }).nodes, true) as Array<Record<string, unknown>>;
  return { nodes, ready: new Set(nodes.map((n) => String(n.hostname))) };
}
