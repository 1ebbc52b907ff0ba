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

/** What the mock runtime tells `newResource`, plus the resource's `ignoreChanges` (which it leaves out). */
export type MockResourceArgsWithOptions = pulumi.runtime.MockResourceArgs & { readonly ignoreChanges?: readonly string[] };

interface RegisterRequest {
  getType(): string;
  getName(): string;
  getIgnorechangesList?(): string[];
}

/**
 * Pulumi's mock monitor does not hand `ignoreChanges` to the mocks; the simulated engine needs it to
 * step like the real engine (which keeps the state's value of an ignored input). Records it per
 * `type::name` as each registration arrives, before the mocks are asked.
 */
function recordIgnoreChanges(into: Map<string, readonly string[]>): void {
  const monitor = pulumi.runtime.getMonitor() as unknown as
    { registerResource?: (req: RegisterRequest, cb: unknown) => unknown } | undefined;
  const original = monitor?.registerResource;
  if (!monitor || typeof original !== "function") return;
  monitor.registerResource = (req: RegisterRequest, cb: unknown) => {
    const ignored = req.getIgnorechangesList?.() ?? [];
    if (ignored.length > 0) into.set(`${req.getType()}::${req.getName()}`, ignored);
    return original.call(monitor, req, cb);
  };
}

export interface MockRunOptions<T> {
  readonly project?: string;
  readonly stack: string;
  /** Full config keys (`nodefleet:cluster`) to values; objects are JSON-encoded as Pulumi does. */
  readonly config?: Readonly<Record<string, unknown>>;
  readonly secretKeys?: readonly string[];
  /** Provider behaviour; defaults to deterministic outputs, Scaleway look-up answers (scalewayLookups.ts) and echoing other calls. */
  readonly newResource?: (args: MockResourceArgsWithOptions) => { id: string | undefined; state: Record<string, unknown> };
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
  return Object.fromEntries(Object.entries(config).map(([key, value]) => [key, typeof value === "string" ? value : JSON.stringify(value)]));
}

/** Resolves an Output (or plain value) under the mock runtime. */
function resolveOutput<T>(value: pulumi.Input<T>): Promise<pulumi.Unwrap<T>> {
  return new Promise((resolve) => {
    pulumi.output(value).apply((v) => {
      resolve(v as pulumi.Unwrap<T>);
      return v;
    });
  });
}

/** Waits for the runtime's outstanding RPCs (resource registrations, invokes) to drain. */
async function waitForOutstandingRegistrations(): Promise<void> {
  // `waitForRPCs` is the runtime's own drain (used by `disconnect`); marked internal, so fall back
  // to a macrotask turn if a future SDK drops it.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const settings = require("@pulumi/pulumi/runtime/settings") as { waitForRPCs?: () => Promise<void> };
  await new Promise((resolve) => setImmediate(resolve));
  if (typeof settings.waitForRPCs === "function") await settings.waitForRPCs();
  await new Promise((resolve) => setImmediate(resolve));
}

export async function runUnderMocks<T>(options: MockRunOptions<T>): Promise<MockRunResult<T>> {
  const resources: RecordedResource[] = [];
  const calls: RecordedCall[] = [];
  const newResource = options.newResource ?? deterministicOutputs;
  const ignoreChanges = new Map<string, readonly string[]>();
  await pulumi.runtime.setMocks(
    {
      newResource(args) {
        const ignored = ignoreChanges.get(`${args.type}::${args.name}`);
        const result = newResource(ignored ? { ...args, ignoreChanges: ignored } : args);
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
  recordIgnoreChanges(ignoreChanges);
  pulumi.runtime.setAllConfig(configStrings(options.config ?? {}), [...(options.secretKeys ?? [])]);
  const returned = await options.program();
  const outputs = await resolveOutput(returned as pulumi.Input<T>);
  // Let registrations still in flight (children registered after the outputs resolved) finish:
  // the runtime counts every outstanding RPC; wait until that queue is drained.
  await waitForOutstandingRegistrations();
  return { resources, calls, outputs: outputs as pulumi.Unwrap<T> };
}
