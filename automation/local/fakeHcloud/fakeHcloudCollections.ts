/**
 * The fake Hetzner API's labelled collections besides servers: networks (with subnets), firewalls
 * (rules and what they apply to), spread placement groups (at most 10 servers, Hetzner's limit) and
 * SSH keys. Each has list (filters, pages), get, create (unique names) and delete, with the API's
 * field names, plus the actions the hcloud provider uses on them.
 */
import type { FastifyInstance, FastifyRequest } from "fastify";
import { HCLOUD_MAX_SERVERS_PER_SPREAD_GROUP } from "../../../components/fleet/hcloudLocations";
import type { FakeHcloudState, FakeObject } from "./fakeHcloudState";

export interface CollectionContext {
  readonly state: FakeHcloudState;
  readonly error: (status: number, code: string, message: string, details?: unknown) => Error;
  readonly page: (request: FastifyRequest, key: string, items: readonly FakeObject[], render: (o: FakeObject) => unknown) => unknown;
  readonly filtered: (request: FastifyRequest, items: readonly FakeObject[]) => FakeObject[];
  readonly action: (command: string, resources: Array<{ id: number; type: string }>) => unknown;
}

interface CollectionSpec {
  readonly path: string;
  readonly singular: string;
  /** The object's own fields from a create body; throws for invalid input. */
  readonly create: (body: Record<string, unknown>, id: number) => Record<string, unknown>;
  /** Fields computed on every read (e.g. a placement group's servers). */
  readonly render?: (object: FakeObject) => Record<string, unknown>;
  /** Extra keys of the create answer besides the object. */
  readonly createAnswer?: (object: FakeObject) => Record<string, unknown>;
}

function registerCollection(app: FastifyInstance, ctx: CollectionContext, spec: CollectionSpec): void {
  const kind = spec.path.slice(1);
  const render = (o: FakeObject) => ({ ...o, ...(spec.render?.(o) ?? {}) });
  const find = (request: FastifyRequest) => {
    const id = Number((request.params as { id: string }).id);
    const object = ctx.state.objects(kind).find((o) => o.id === id);
    if (!object) throw ctx.error(404, "not_found", `${spec.singular} with ID '${id}' not found`);
    return object;
  };
  app.get(spec.path, async (request) => ctx.page(request, kind, ctx.filtered(request, ctx.state.objects(kind)), render));
  app.get(`${spec.path}/:id`, async (request) => ({ [spec.singular]: render(find(request)) }));
  app.post(spec.path, async (request, reply) => {
    const body = (request.body ?? {}) as Record<string, unknown>;
    if (typeof body.name !== "string" || body.name.length === 0) throw ctx.error(400, "invalid_input", "invalid input in field 'name'", { fields: [{ name: "name", messages: ["Missing data for required field."] }] });
    if (ctx.state.objects(kind).some((o) => o.name === body.name)) throw ctx.error(409, "uniqueness_error", `${spec.singular} name is already used`, { fields: [{ name: "name" }] });
    const id = ctx.state.newId();
    const object: FakeObject = { id, name: body.name, labels: (body.labels as Record<string, string>) ?? {}, created: new Date().toISOString(), ...spec.create(body, id) };
    ctx.state.putObject(kind, object);
    reply.status(201);
    return { [spec.singular]: render(object), ...(spec.createAnswer?.(object) ?? {}) };
  });
  app.delete(`${spec.path}/:id`, async (request, reply) => {
    const object = find(request);
    if ((object.protection as { delete?: boolean } | undefined)?.delete) throw ctx.error(403, "protected", `${spec.singular} is delete protected`);
    ctx.state.removeObject(kind, object.id);
    reply.status(204);
    return null;
  });
}

export function registerCollections(app: FastifyInstance, ctx: CollectionContext): void {
  const serversIn = (group: number) => ctx.state.servers.filter((s) => s.placementGroup === group).map((s) => s.id);
  registerCollection(app, ctx, {
    path: "/networks",
    singular: "network",
    create: (body) => {
      if (typeof body.ip_range !== "string") throw ctx.error(400, "invalid_input", "invalid input in field 'ip_range'", { fields: [{ name: "ip_range", messages: ["Missing data for required field."] }] });
      const subnets = Array.isArray(body.subnets) ? (body.subnets as Array<Record<string, unknown>>) : [];
      return { ip_range: body.ip_range, subnets: subnets.map((s) => ({ ...s, gateway: "10.0.0.1", vswitch_id: null })), routes: [], protection: { delete: false }, expose_routes_to_vswitch: false };
    },
    render: (o) => ({ servers: ctx.state.servers.filter((s) => s.networks.includes(o.id)).map((s) => s.id), load_balancers: [] }),
  });
  registerCollection(app, ctx, {
    path: "/firewalls",
    singular: "firewall",
    create: (body) => ({ rules: Array.isArray(body.rules) ? body.rules : [], applied_to: Array.isArray(body.apply_to) ? body.apply_to : [] }),
    createAnswer: (o) => ({ actions: [ctx.action("set_firewall_rules", [{ id: o.id, type: "firewall" }])] }),
  });
  registerCollection(app, ctx, {
    path: "/placement_groups",
    singular: "placement_group",
    create: (body) => {
      if (body.type !== "spread") throw ctx.error(400, "invalid_input", "invalid input in field 'type'", { fields: [{ name: "type", messages: ["Must be one of: spread."] }] });
      return { type: "spread" };
    },
    render: (o) => ({ servers: serversIn(o.id) }),
    createAnswer: () => ({ action: null }),
  });
  registerCollection(app, ctx, {
    path: "/ssh_keys",
    singular: "ssh_key",
    create: (body) => {
      if (typeof body.public_key !== "string" || !/^ssh-(ed25519|rsa) \S+/.test(body.public_key)) throw ctx.error(400, "invalid_input", "invalid input in field 'public_key'", { fields: [{ name: "public_key", messages: ["invalid public key"] }] });
      return { public_key: body.public_key, fingerprint: "b7:2f:30:a0:2f:6c:58:6c:21:04:58:61:ba:06:3b:2f" };
    },
  });

  app.post("/networks/:id/actions/add_subnet", async (request, reply) => {
    const id = Number((request.params as { id: string }).id);
    const network = ctx.state.objects("networks").find((n) => n.id === id);
    if (!network) throw ctx.error(404, "not_found", `network with ID '${id}' not found`);
    const body = (request.body ?? {}) as Record<string, unknown>;
    if (typeof body.type !== "string" || typeof body.network_zone !== "string") throw ctx.error(400, "invalid_input", "invalid input in fields 'type', 'network_zone'");
    const subnets = [...(network.subnets as unknown[]), { type: body.type, network_zone: body.network_zone, ip_range: body.ip_range ?? "10.0.1.0/24", gateway: "10.0.0.1", vswitch_id: null }];
    ctx.state.putObject("networks", { ...network, subnets });
    reply.status(201);
    return { action: ctx.action("add_subnet", [{ id, type: "network" }]) };
  });

  /** Hetzner refuses an 11th server in a spread group. */
  app.addHook("preHandler", async (request) => {
    if (request.method !== "POST" || request.routeOptions.url !== "/servers") return;
    const group = ((request.body ?? {}) as { placement_group?: unknown }).placement_group;
    if (typeof group !== "number") return;
    if (!ctx.state.objects("placement_groups").some((g) => g.id === group)) throw ctx.error(404, "not_found", `placement group with ID '${group}' not found`);
    if (serversIn(group).length >= HCLOUD_MAX_SERVERS_PER_SPREAD_GROUP) throw ctx.error(412, "placement_error", `placement group ${group} already holds ${HCLOUD_MAX_SERVERS_PER_SPREAD_GROUP} servers`);
  });
}
