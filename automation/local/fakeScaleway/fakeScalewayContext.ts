/**
 * What the fake Scaleway API's route files share: Scaleway's error shapes, pagination
 * (`page`, `page_size`, `total_count`), query and body reading, zones and regions, and the knobs.
 * The error shapes are the ones scaleway-sdk-go decodes by their `type` (scw/errors.go:
 * invalid_arguments, not_found, permissions_denied, transient_state, out_of_stock,
 * precondition_failed, denied_authentication), each beside the `message` every answer carries.
 */
import type { FastifyRequest } from "fastify";
import { ELASTIC_METAL_ZONES } from "../../../components/scaleway/elasticMetalZones";
import type { FakeScalewayState } from "./fakeScalewayState";

/** An answer in Scaleway's error shape: `{ message, type, ...fields of that type }`. */
export class ScalewayError extends Error {
  override readonly name = "ScalewayError";
  constructor(
    readonly status: number,
    readonly body: { message: string; type?: string } & Record<string, unknown>,
  ) {
    super(body.message);
  }
}

/** 400 `invalid_arguments`, naming the argument and the rule it breaks (`required`, `format`, `constraint`). */
export function invalidArgument(argument: string, reason: "required" | "format" | "constraint", help: string): ScalewayError {
  return new ScalewayError(400, {
    message: "invalid argument(s)",
    type: "invalid_arguments",
    details: [{ argument_name: argument, reason, help_message: help }],
  });
}

/** 404 `not_found` for a resource (Scaleway's names: `baremetal_server`, `private_network`, `ip`, ...). */
export function notFound(resource: string, id: string): ScalewayError {
  return new ScalewayError(404, { message: "resource is not found", type: "not_found", resource, resource_id: id });
}

/** 409 `transient_state`: the resource is busy (delivering, installing, rebooting, attaching). */
export function transientState(resource: string, id: string, currentState: string): ScalewayError {
  return new ScalewayError(409, {
    message: "resource is in a transient state",
    type: "transient_state",
    resource,
    resource_id: id,
    current_state: currentState,
  });
}

/** 412 `precondition_failed` (`resource_still_in_use`, `attribute_must_be_set`, ...). */
export function preconditionFailed(precondition: string, help: string): ScalewayError {
  return new ScalewayError(412, { message: "precondition failed", type: "precondition_failed", precondition, help_message: help });
}

/** The request body as an object (a body-less request is `{}`). */
export function bodyOf(request: FastifyRequest): Record<string, unknown> {
  const body = request.body;
  if (body === undefined || body === null) return {};
  if (typeof body !== "object" || Array.isArray(body)) throw invalidArgument("body", "format", "the request body must be a JSON object");
  return body as Record<string, unknown>;
}

/** A query parameter's values (`tags=a&tags=b` gives two). */
export function queryValues(request: FastifyRequest, name: string): string[] {
  const value = (request.query as Record<string, string | string[] | undefined>)[name];
  return value === undefined ? [] : Array.isArray(value) ? value : [value];
}

/** A path parameter. */
function param(request: FastifyRequest, name: string): string {
  return (request.params as Record<string, string>)[name] ?? "";
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A UUID path parameter; Scaleway refuses anything else as a malformed argument. */
export function uuidParam(request: FastifyRequest, name: string): string {
  const value = param(request, name);
  if (!UUID.test(value)) throw invalidArgument(name, "format", "must be a valid UUID");
  return value.toLowerCase();
}

/** An optional string body field. */
export function stringField(body: Record<string, unknown>, field: string): string | undefined {
  const value = body[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "string") throw invalidArgument(field, "format", "must be a string");
  return value;
}

/** An optional list-of-strings body field. */
export function stringListField(body: Record<string, unknown>, field: string): string[] | undefined {
  const value = body[field];
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value) || value.some((v) => typeof v !== "string"))
    throw invalidArgument(field, "format", "must be a list of strings");
  return value as string[];
}

/** A required UUID body field. */
export function uuidField(body: Record<string, unknown>, field: string): string {
  const value = body[field];
  if (value === undefined || value === null || value === "") throw invalidArgument(field, "required", "is required");
  if (typeof value !== "string" || !UUID.test(value)) throw invalidArgument(field, "format", "must be a valid UUID");
  return value.toLowerCase();
}

export function isUuid(value: string): boolean {
  return UUID.test(value);
}

const REGIONS = new Set(Object.values(ELASTIC_METAL_ZONES));

/** The `{zone}` path parameter, one of the Elastic Metal zones. */
export function zoneParam(request: FastifyRequest): string {
  const zone = param(request, "zone");
  if (!(zone in ELASTIC_METAL_ZONES))
    throw invalidArgument("zone", "constraint", `must be one of ${Object.keys(ELASTIC_METAL_ZONES).join(", ")}`);
  return zone;
}

/** The `{region}` path parameter. */
export function regionParam(request: FastifyRequest): string {
  const region = param(request, "region");
  if (!REGIONS.has(region)) throw invalidArgument("region", "constraint", `must be one of ${[...REGIONS].join(", ")}`);
  return region;
}

/** Scaleway's pages: `page` from 1, `page_size` up to 100 (default 50), the whole count in `total_count`. */
export function page<T>(request: FastifyRequest, key: string, items: readonly T[], render: (item: T) => unknown) {
  const size = Number(queryValues(request, "page_size")[0] ?? 50);
  if (!Number.isInteger(size) || size < 1 || size > 100) throw invalidArgument("page_size", "constraint", "must be between 1 and 100");
  const current = Number(queryValues(request, "page")[0] ?? 1);
  if (!Number.isInteger(current) || current < 1) throw invalidArgument("page", "constraint", "must be a positive integer");
  return { total_count: items.length, [key]: items.slice((current - 1) * size, current * size).map(render) };
}

/** `created_at_asc` (the default of most lists) or `created_at_desc` (`order_by`). */
export function ordered<T extends { createdAt: string }>(
  request: FastifyRequest,
  items: readonly T[],
  fallback: "asc" | "desc" = "asc",
): T[] {
  const [orderBy] = queryValues(request, "order_by");
  const direction = orderBy?.endsWith("_desc") ? "desc" : orderBy?.endsWith("_asc") ? "asc" : fallback;
  const sorted = [...items].sort((a, b) => a.createdAt.localeCompare(b.createdAt));
  return direction === "desc" ? sorted.reverse() : sorted;
}

export interface FakeScalewayContext {
  readonly state: FakeScalewayState;
  /** The project every resource belongs to (and its organization, the same id as on a fresh account). */
  readonly projectId: string;
  /** How long an order is delivered and an option or attachment settles. */
  readonly actionMs: number;
  /** How long an OS install runs (NODEFLEET_SIM_SCW_INSTALL_MS). */
  readonly installMs: number;
  /** How long after an attachment is `attached` its VLAN is reported (NODEFLEET_SIM_SCW_VLAN_DELAY_MS). */
  readonly vlanDelayMs: number;
  /** Offers whose orders fail as out of stock (NODEFLEET_SIM_OUT_OF_STOCK). */
  readonly outOfStock: ReadonlySet<string>;
  /** Servers get loopback addresses (127.<block>.4.0/22), where their machines listen (fakeScalewayMachines.ts); false: documentation addresses. */
  readonly machineAddresses: false | { readonly block: number };
}
