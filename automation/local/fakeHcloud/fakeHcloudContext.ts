/**
 * What the fake Hetzner API's route files share: the API's error shape, pagination and filters,
 * request-body and id reading, and the running of actions.
 */
import type { FastifyRequest } from "fastify";
import { labelsSchema } from "../../../components/fleet/fleetSpec";
import type { FakeAction, FakeHcloudState } from "./fakeHcloudState";
import { parseLabelSelector } from "./labelSelector";

/** An answer in Hetzner's error shape: `{ error: { code, message, details } }`. */
export class HcloudError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: unknown = {},
  ) {
    super(message);
  }
}

/** `invalid_input` naming the field and the rule, as Hetzner reports validation errors. */
export function invalidInput(field: string, message: string): HcloudError {
  return new HcloudError(400, "invalid_input", `invalid input in field '${field}'`, { fields: [{ name: field, messages: [message] }] });
}

export function notFound(kind: string, id: unknown): HcloudError {
  return new HcloudError(404, "not_found", `${kind} with ID '${String(id)}' not found`);
}

export function uniquenessError(kind: string): HcloudError {
  return new HcloudError(409, "uniqueness_error", `${kind} name is already used`, {
    fields: [{ name: "name", messages: ["is already used"] }],
  });
}

/** The request body as an object (a body-less POST is `{}`). */
export function bodyOf(request: FastifyRequest): Record<string, unknown> {
  const body = request.body;
  if (body === undefined || body === null) return {};
  if (typeof body !== "object" || Array.isArray(body))
    throw new HcloudError(400, "invalid_input", "the request body must be a JSON object");
  return body as Record<string, unknown>;
}

/** The `{id}` path parameter. */
export function idParam(request: FastifyRequest): number {
  const raw = (request.params as { id: string }).id;
  if (!/^\d{1,15}$/.test(raw)) throw new HcloudError(400, "invalid_input", `invalid ID '${raw}'`);
  return Number(raw);
}

/** A query parameter's values (repeated parameters such as `id=1&id=2` give several). */
export function queryValues(request: FastifyRequest, name: string): string[] {
  const value = (request.query as Record<string, string | string[] | undefined>)[name];
  return value === undefined ? [] : Array.isArray(value) ? value : [value];
}

/** Labels from a body field, or undefined when absent; Hetzner's label syntax is Kubernetes'. */
export function labelsField(body: Record<string, unknown>): Record<string, string> | undefined {
  const labels = body.labels;
  if (labels === undefined || labels === null) return undefined;
  const parsed = labelsSchema.safeParse(labels);
  if (!parsed.success) throw invalidInput("labels", parsed.error.issues[0]?.message ?? "must be an object of string values");
  return parsed.data;
}

/** An optional boolean body field. */
export function booleanField(body: Record<string, unknown>, field: string): boolean | undefined {
  const value = body[field];
  if (value === undefined) return undefined;
  if (typeof value !== "boolean") throw invalidInput(field, "must be a boolean");
  return value;
}

/** A required integer id body field. */
export function idField(body: Record<string, unknown>, field: string): number {
  const value = body[field];
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value <= 0)
    throw invalidInput(field, "Missing data for required field, or not a positive integer.");
  return value;
}

/** One page of `items` under `key`, with Hetzner's `meta.pagination`. */
export function page<T>(request: FastifyRequest, key: string, items: readonly T[], render: (item: T) => unknown) {
  const perPage = Math.min(50, Math.max(1, Number(queryValues(request, "per_page")[0] ?? 25) || 25));
  const current = Math.max(1, Number(queryValues(request, "page")[0] ?? 1) || 1);
  const last = Math.max(1, Math.ceil(items.length / perPage));
  const slice = items.slice((current - 1) * perPage, current * perPage);
  return {
    [key]: slice.map(render),
    meta: {
      pagination: {
        page: current,
        per_page: perPage,
        previous_page: current > 1 ? current - 1 : null,
        next_page: current < last ? current + 1 : null,
        last_page: last,
        total_entries: items.length,
      },
    },
  };
}

/** `items` filtered by the `name` and `label_selector` query parameters. */
export function filtered<T extends { name: string; labels?: Record<string, string> }>(request: FastifyRequest, items: readonly T[]): T[] {
  let out = [...items];
  const [name] = queryValues(request, "name");
  if (name !== undefined) out = out.filter((i) => i.name === name);
  const [selector] = queryValues(request, "label_selector");
  if (selector !== undefined) {
    let matches;
    try {
      matches = parseLabelSelector(selector);
    } catch (error) {
      throw invalidInput("label_selector", (error as Error).message);
    }
    out = out.filter((i) => matches(i.labels ?? {}));
  }
  return out;
}

export interface FakeHcloudContext {
  readonly state: FakeHcloudState;
  /** Server types sold out everywhere (NODEFLEET_SIM_OUT_OF_STOCK). */
  readonly soldOut: ReadonlySet<string>;
  /** Server types over the project's quota, `*` for all (NODEFLEET_SIM_QUOTA_EXCEEDED); changed by setQuotaExceeded. */
  readonly quotaExceeded: { serverTypes: readonly string[] };
  /** How long an action runs. */
  readonly actionMs: number;
  /** Starts an action and answers it in the API's shape. */
  /** How long a created server takes to report `running` (NODEFLEET_SIM_BOOT_DELAY_MS). */
  readonly bootDelayMs: number;
  /**
   * How long after an attach_to_network action the machine sees the private interface
   * (NODEFLEET_SIM_PRIVATE_NIC_DELAY_MS): Hetzner hot-plugs the NIC into the running server.
   */
  readonly privateNicDelayMs: number;
  /** Whether the create of this server fails (NODEFLEET_SIM_FAIL_CREATE_RATE, seeded). */
  readonly createFails: (serverName: string, serverId: number) => boolean;
  readonly startAction: (
    command: string,
    resources: FakeAction["resources"],
    options?: { durationMs?: number } & Pick<FakeAction, "serverStatus" | "error">,
  ) => Record<string, unknown>;
}
