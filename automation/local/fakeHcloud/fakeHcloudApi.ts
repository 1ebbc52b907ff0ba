/**
 * A fake Hetzner Cloud API for the local cloud, on the real wire format: bearer-token check,
 * pagination (`page`, `per_page`, `meta.pagination`), `label_selector` and `name` filters, actions
 * that progress over time, the API's error shape and codes (`uniqueness_error`,
 * `resource_unavailable` for sold-out types, `protected`, `not_found`, `rate_limit_exceeded` with
 * the RateLimit-* headers), and a request counter per endpoint. Checked against Hetzner's published
 * OpenAPI document by the tests. Servers, actions and the catalog are here; networks, firewalls,
 * placement groups and SSH keys in fakeHcloudCollections.ts.
 */
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from "fastify";
import { HCLOUD_MAX_USER_DATA_BYTES } from "../../../components/fleet/hcloudLocations";
import { registerCollections } from "./fakeHcloudCollections";
import { LabelSelectorError, parseLabelSelector } from "./labelSelector";
import { type FakeServer, FakeHcloudState, datacenterJson, imageJson, locationJson, locationNames, serverTypeJson, serverTypeNames } from "./fakeHcloudState";

export interface FakeHcloudOptions {
  /** The project's API token (Hetzner's are 64 characters). */
  readonly token: string;
  /** Where the state is kept. */
  readonly stateFile: string;
  /** Server types that fail to create as sold out (NODEFLEET_SIM_OUT_OF_STOCK). */
  readonly outOfStock?: readonly string[];
  /** How long an action runs before it succeeds. Default 300 ms. */
  readonly actionMs?: number;
  /** Requests per hour, as Hetzner's limit. Default 3600. */
  readonly rateLimitPerHour?: number;
}

export interface FakeHcloud {
  readonly app: FastifyInstance;
  /** Requests served, by `METHOD /path/{id}`. */
  readonly requestCounts: Map<string, number>;
  readonly state: FakeHcloudState;
}

class HcloudError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: unknown = {},
  ) {
    super(message);
  }
}

function page<T>(request: FastifyRequest, key: string, items: readonly T[], render: (item: T) => unknown) {
  const query = request.query as Record<string, string | undefined>;
  const perPage = Math.min(50, Math.max(1, Number(query.per_page ?? 25) || 25));
  const current = Math.max(1, Number(query.page ?? 1) || 1);
  const last = Math.max(1, Math.ceil(items.length / perPage));
  const slice = items.slice((current - 1) * perPage, current * perPage);
  return {
    [key]: slice.map(render),
    meta: { pagination: { page: current, per_page: perPage, previous_page: current > 1 ? current - 1 : null, next_page: current < last ? current + 1 : null, last_page: last, total_entries: items.length } },
  };
}

function filtered<T extends { name: string; labels?: Record<string, string> }>(request: FastifyRequest, items: readonly T[]): T[] {
  const query = request.query as Record<string, string | undefined>;
  let out = [...items];
  if (query.name) out = out.filter((i) => i.name === query.name);
  if (query.label_selector) {
    let matches;
    try {
      matches = parseLabelSelector(query.label_selector);
    } catch (error) {
      throw new HcloudError(400, "invalid_input", (error as LabelSelectorError).message, { fields: [{ name: "label_selector", messages: [(error as Error).message] }] });
    }
    out = out.filter((i) => matches(i.labels ?? {}));
  }
  return out;
}

export function buildFakeHcloud(options: FakeHcloudOptions): FakeHcloud {
  const app = Fastify({ logger: false, bodyLimit: 1024 * 1024 });
  const state = new FakeHcloudState(options.stateFile);
  const requestCounts = new Map<string, number>();
  const soldOut = new Set(options.outOfStock ?? []);
  const actionMs = options.actionMs ?? 300;
  const limit = options.rateLimitPerHour ?? 3600;
  let remaining = limit;
  let windowStart = Date.now();

  const placementGroupOf = (s: FakeServer) => {
    const group = state.objects("placement_groups").find((g) => g.id === s.placementGroup);
    return group ? { ...group, servers: state.servers.filter((x) => x.placementGroup === group.id).map((x) => x.id) } : null;
  };
  const serverJson = (s: FakeServer) => ({
    id: s.id,
    name: s.name,
    status: s.status,
    created: s.created,
    public_net: {
      ipv4: { id: s.id, ip: s.ipv4, blocked: false, dns_ptr: `static.${s.ipv4}.clients.your-server.de` },
      ipv6: null,
      floating_ips: [],
      firewalls: s.firewalls.map((id) => ({ id, status: "applied" })),
    },
    private_net: s.networks.map((network, i) => ({ network, ip: `10.0.1.${(s.id % 250) + 2 + i}`, alias_ips: [], mac_address: "86:00:00:00:00:01" })),
    server_type: serverTypeJson(s.serverType),
    datacenter: datacenterJson(s.location, soldOut),
    image: imageJson(s.image),
    iso: null,
    rescue_enabled: false,
    locked: false,
    backup_window: null,
    outgoing_traffic: 0,
    ingoing_traffic: 0,
    included_traffic: 21990232555520,
    protection: { delete: s.deleteProtection, rebuild: s.rebuildProtection },
    labels: s.labels,
    volumes: [],
    load_balancers: [],
    primary_disk_size: Number(serverTypeJson(s.serverType)?.disk ?? 40),
    placement_group: placementGroupOf(s),
  });

  const actionJson = (id: number) => {
    const action = state.action(id);
    if (!action) throw new HcloudError(404, "not_found", `action with ID '${id}' not found`);
    const total = Math.max(1, action.finishesAt - Date.parse(action.started));
    const progress = Math.min(100, Math.round(((Date.now() - Date.parse(action.started)) / total) * 100));
    const done = Date.now() >= action.finishesAt;
    return { id: action.id, command: action.command, status: done ? "success" : "running", progress: done ? 100 : progress, started: action.started, finished: done ? new Date(action.finishesAt).toISOString() : null, resources: action.resources, error: null };
  };

  app.addHook("onRequest", async (request: FastifyRequest, reply: FastifyReply) => {
    const route = `${request.method} ${request.routeOptions.url ?? request.url.split("?")[0]}`.replace(/:(\w+)/g, "{$1}");
    requestCounts.set(route, (requestCounts.get(route) ?? 0) + 1);
    if (request.headers.authorization !== `Bearer ${options.token}`) throw new HcloudError(401, "unauthorized", "unable to authenticate");
    if (Date.now() - windowStart >= 3600_000) {
      windowStart = Date.now();
      remaining = limit;
    }
    remaining = Math.max(0, remaining - 1);
    reply.header("RateLimit-Limit", String(limit));
    reply.header("RateLimit-Remaining", String(remaining));
    reply.header("RateLimit-Reset", String(Math.ceil((windowStart + 3600_000) / 1000)));
    if (remaining === 0) throw new HcloudError(429, "rate_limit_exceeded", "limit of requests per hour reached");
  });

  app.setErrorHandler((error: Error, _request, reply) => {
    if (error instanceof HcloudError) return reply.status(error.status).send({ error: { code: error.code, message: error.message, details: error.details } });
    const status = (error as { statusCode?: number }).statusCode ?? 500;
    return reply.status(status < 500 ? status : 500).send({ error: { code: status < 500 ? "invalid_input" : "server_error", message: error.message, details: {} } });
  });
  app.setNotFoundHandler((request, reply) => reply.status(404).send({ error: { code: "not_found", message: `${request.method} ${request.url} not found`, details: {} } }));

  app.get("/server_types", async (request) => page(request, "server_types", filtered(request, serverTypeNames().map((name) => ({ name }))), (t) => serverTypeJson(t.name)));
  app.get("/locations", async (request) => page(request, "locations", filtered(request, locationNames().map((name) => ({ name }))), (l) => locationJson(l.name)));
  app.get("/datacenters", async (request) => ({
    ...page(request, "datacenters", filtered(request, locationNames().map((name) => ({ name: `${name}-dc1`, location: name }))), (d) => datacenterJson(d.location, soldOut)),
    recommendation: Number(datacenterJson("fsn1", soldOut)?.id),
  }));

  app.get("/servers", async (request) => page(request, "servers", filtered(request, state.servers), serverJson));
  app.get("/servers/:id", async (request) => {
    const server = state.server(Number((request.params as { id: string }).id));
    if (!server) throw new HcloudError(404, "not_found", `server with ID '${(request.params as { id: string }).id}' not found`);
    return { server: serverJson(server) };
  });

  app.post("/servers", async (request, reply) => {
    const body = (request.body ?? {}) as Record<string, unknown>;
    const fields: Array<{ name: string; messages: string[] }> = [];
    const name = body.name;
    if (typeof name !== "string" || !/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/i.test(name)) fields.push({ name: "name", messages: ["must be a valid hostname"] });
    if (typeof body.server_type !== "string" || !serverTypeJson(body.server_type)) fields.push({ name: "server_type", messages: ["server type not found"] });
    if (typeof body.image !== "string") fields.push({ name: "image", messages: ["Missing data for required field."] });
    const location = typeof body.location === "string" ? body.location : typeof body.datacenter === "string" ? String(body.datacenter).replace(/-dc\d+$/, "") : "fsn1";
    if (!locationJson(location)) fields.push({ name: "location", messages: ["location not found"] });
    if (typeof body.user_data === "string" && Buffer.byteLength(body.user_data) > HCLOUD_MAX_USER_DATA_BYTES) fields.push({ name: "user_data", messages: ["Length must be between 0 and 32768."] });
    if (fields.length > 0) throw new HcloudError(400, "invalid_input", "invalid input in fields", { fields });
    if (state.servers.some((s) => s.name === name)) throw new HcloudError(409, "uniqueness_error", "server name is already used", { fields: [{ name: "name" }] });
    if (soldOut.has(String(body.server_type))) throw new HcloudError(412, "resource_unavailable", `server type ${String(body.server_type)} is unavailable in ${location}: error during placement`);
    const id = state.newId();
    const server: FakeServer = {
      id,
      name: name as string,
      status: "running",
      created: new Date().toISOString(),
      labels: (body.labels as Record<string, string>) ?? {},
      serverType: body.server_type as string,
      location,
      image: body.image as string,
      userData: typeof body.user_data === "string" ? body.user_data : "",
      ipv4: `203.0.113.${(id % 250) + 2}`,
      networks: Array.isArray(body.networks) ? (body.networks as number[]) : [],
      firewalls: Array.isArray(body.firewalls) ? (body.firewalls as Array<{ firewall: number }>).map((f) => f.firewall) : [],
      placementGroup: typeof body.placement_group === "number" ? body.placement_group : null,
      deleteProtection: false,
      rebuildProtection: false,
    };
    state.addServer(server);
    const action = state.addAction("create_server", [{ id, type: "server" }], actionMs);
    reply.status(201);
    return { server: serverJson(server), action: actionJson(action.id), next_actions: [], root_password: null };
  });

  app.delete("/servers/:id", async (request) => {
    const id = Number((request.params as { id: string }).id);
    const server = state.server(id);
    if (!server) throw new HcloudError(404, "not_found", `server with ID '${id}' not found`);
    if (server.deleteProtection) throw new HcloudError(403, "protected", "server is delete protected");
    state.removeServer(id);
    const action = state.addAction("delete_server", [{ id, type: "server" }], actionMs);
    return { action: actionJson(action.id) };
  });

  app.get("/actions/:id", async (request) => ({ action: actionJson(Number((request.params as { id: string }).id)) }));

  registerCollections(app, {
    state,
    error: (status, code, message, details) => new HcloudError(status, code, message, details),
    page,
    filtered,
    action: (command, resources) => actionJson(state.addAction(command, resources, actionMs).id),
  });

  return { app, requestCounts, state };
}
