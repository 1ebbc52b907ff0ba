/**
 * Runs a Pulumi program under Pulumi's mock runtime (no engine, no credentials, no cloud) and
 * records every resource it registers. `nodefleet render`, the tests and the simulated engine all
 * build on this. The mock runtime is process-global: run one program per process at a time.
 */
import * as pulumi from "@pulumi/pulumi";
import { deterministicOutputs } from "./deterministicOutputs";
import { scalewayLookup } from "./scalewayLookups";

export interface RecordedResource {
  readonly type: string;
  readonly name: string;
  /** False for component resources. */
  readonly custom: boolean;
  /** Inputs as the program passed them; secrets still wrapped (see secretValues.ts). */
  readonly inputs: Record<string, unknown>;
  readonly id?: string;
  readonly state: Record<string, unknown>;
  readonly provider?: string;
}

export interface RecordedCall {
  readonly token: string;
  readonly inputs: Record<string, unknown>;
}

export interface MockRunOptions<T> {
  readonly project?: string;
  readonly stack: string;
  /** Full config keys (`nodefleet:cluster`) to values; objects are JSON-encoded as Pulumi does. */
  readonly config?: Readonly<Record<string, unknown>>;
  readonly secretKeys?: readonly string[];
  /** Provider behaviour; defaults to deterministic outputs, Scaleway look-up answers (scalewayLookups.ts) and echoing other calls. */
  readonly newResource?: (args: pulumi.runtime.MockResourceArgs) => { id: string | undefined; state: Record<string, unknown> };
  readonly call?: (args: pulumi.runtime.MockCallArgs) => Record<string, unknown>;
  readonly program: () => T | Promise<T>;
  /** Keep every registered resource and call in the result. Default true; false saves memory for large runs. */
  readonly record?: boolean;
}

export interface MockRunResult<T> {
  readonly resources: RecordedResource[];
  readonly calls: RecordedCall[];
  /** The program's return value with every Output resolved; secrets unwrapped. */
  readonly outputs: pulumi.Unwrap<T>;
}

function configStrings(config: Readonly<Record<string, unknown>>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(config).map(([key, value]) => [key, typeof value === "string" ? value : JSON.stringify(value)]),
  );
}

/** Resolves an Output (or plain value) under the mock runtime. */
export function resolveOutput<T>(value: pulumi.Input<T>): Promise<pulumi.Unwrap<T>> {
  return new Promise((resolve) => {
    pulumi.output(value).apply((v) => {
      resolve(v as pulumi.Unwrap<T>);
      return v;
    });
  });
}

/** Waits for the runtime's outstanding RPCs (resource registrations, invokes) to drain. */
export async function waitForOutstandingRegistrations(): Promise<void> {
  // `waitForRPCs` is the runtime's own drain (used by `disconnect`); marked internal, so fall back
  // to a macrotask turn if a future SDK drops it.
  const settings = require("@pulumi/pulumi/runtime/settings") as { waitForRPCs?: () => Promise<void> };
  await new Promise((resolve) => setImmediate(resolve));
  if (typeof settings.waitForRPCs === "function") await settings.waitForRPCs();
  await new Promise((resolve) => setImmediate(resolve));
}

export async function runUnderMocks<T>(options: MockRunOptions<T>): Promise<MockRunResult<T>> {
  const resources: RecordedResource[] = [];
  const calls: RecordedCall[] = [];
  const newResource = options.newResource ?? deterministicOutputs;
  await pulumi.runtime.setMocks(
    {
      newResource(args) {
        const result = newResource(args);
        if (options.record !== false) {
          resources.push({
            type: args.type,
            name: args.name,
            custom: args.custom ?? true,
            inputs: args.inputs,
            id: result.id,
            state: result.state,
            provider: args.provider,
          });
        }
        return { id: result.id, state: result.state };
      },
      call(args) {
        if (options.record !== false) calls.push({ token: args.token, inputs: args.inputs });
        return options.call ? options.call(args) : (scalewayLookup(args) ?? args.inputs);
      },
    },
    options.project ?? "nodefleet",
    options.stack,
    false,
  );
  pulumi.runtime.setAllConfig(configStrings(options.config ?? {}), [...(options.secretKeys ?? [])]);
  const returned = await options.program();
  const outputs = await resolveOutput(returned as pulumi.Input<T>);
  // Let registrations still in flight (children registered after the outputs resolved) finish:
  // the runtime counts every outstanding RPC; wait until that queue is drained.
  await waitForOutstandingRegistrations();
  return { resources, calls, outputs: outputs as pulumi.Unwrap<T> };
}
