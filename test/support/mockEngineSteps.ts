/**
 * What the engine would do between two mock runs of a program: each resource of the second run is
 * stepped against the first run's inputs as the engine steps it (its `ignoreChanges` keep the
 * previous values, then the simulated engine's create/update/replace decision, stepDiff.ts), so a
 * mock-runtime test can say which commands a change would update or replace.
 */
import { type MockResourceArgsWithOptions, type MockRunOptions, type MockRunResult, runUnderMocks } from "../../automation/mocks/runUnderMocks";
import { deterministicOutputs } from "../../automation/mocks/deterministicOutputs";
import { resolveSecrets } from "../../automation/mocks/secretValues";
import { decideStep } from "../../automation/simulated/stepDiff";

/** A mock run plus each resource's `ignoreChanges` (by name), which the mock runtime leaves out of its records. */
export interface SteppedMockRun<T> extends MockRunResult<T> {
  readonly ignoreChanges: ReadonlyMap<string, readonly string[]>;
}

/** `runUnderMocks` with deterministic outputs, recording each resource's `ignoreChanges`. */
export async function runRecordingIgnoreChanges<T>(options: Omit<MockRunOptions<T>, "newResource">): Promise<SteppedMockRun<T>> {
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
export function engineSteps<T>(before: MockRunResult<T>, after: SteppedMockRun<T>): string[] {
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
