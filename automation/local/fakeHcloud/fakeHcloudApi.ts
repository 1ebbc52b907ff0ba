/**
 * A fake Hetzner Cloud API for the local cloud, on the real wire format as hcloud-go and the
 * Hetzner provider speak it: bearer-token check, pagination (`page`, `per_page`,
 * `meta.pagination`), `label_selector` and `name` filters, actions that progress over time and
 * are polled through `GET /actions?id=…`, the API's error shape and codes, rate limiting with
 * the RateLimit-* headers and 429, and a request counter per endpoint. Checked against Hetzner's
 * published OpenAPI document by the tests. The catalog and actions are served here; servers in
 * fakeHcloudServers.ts, the other collections in fakeHcloudCollections.ts.
 */
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from "fastify";
import { hashNumber } from "../../mocks/seededValues";
import { datacenterJson, locationJson, locationNames, pricingJson, serverTypeJson, serverTypeNames } from "./fakeHcloudCatalog";
import { registerCollections } from "./fakeHcloudCollections";
import { type FakeHcloudContext, HcloudError, filtered, idParam, notFound, page, queryValues } from "./fakeHcloudContext";
import { registerServers } from "./fakeHcloudServers";
import { registerImages } from "./fakeHcloudImages";
import { FAKE_METADATA_PREFIX, registerMetadata } from "./fakeHcloudMetadata";
import { type FakeAction, FakeHcloudState } from "./fakeHcloudState";

export interface FakeHcloudOptions {
  /** The project's API token (Hetzner's are 64 characters). */
  readonly token: string;
  /** Where the state is kept. */
  readonly stateFile: string;
  /** Server types that fail to create as sold out (NODEFLEET_SIM_OUT_OF_STOCK). */
  readonly outOfStock?: readonly string[];
  /** Server types whose creates fail as over the project's quota, `*` for all (NODEFLEET_SIM_QUOTA_EXCEEDED). */
  readonly quotaExceeded?: readonly string[];
  /** How long an action runs before it succeeds. Default 300 ms. */
  readonly actionMs?: number;
  /** Requests per hour, as Hetzner's limit (the budget refills continuously). Default 3600. */
  readonly rateLimitPerHour?: number;
  /** How long a created server takes to report `running` (NODEFLEET_SIM_BOOT_DELAY_MS). Default twice `actionMs`. */
  readonly bootDelayMs?: number;
  /** How long after an attach the machine sees its private interface (NODEFLEET_SIM_PRIVATE_NIC_DELAY_MS). Default 0. */
  readonly privateNicDelayMs?: number;
  /** Probability (0..1) that a server create's action fails (NODEFLEET_SIM_FAIL_CREATE_RATE). Default 0. */
  readonly failCreateRate?: number;
  /** Seed of the create-failure draw (NODEFLEET_SIM_SEED). Default "nodefleet". */
  readonly seed?: string;
}

export interface FakeHcloud {
  readonly app: FastifyInstance;
  /** Requests served, by `METHOD /path/{id}`. */
  readonly requestCounts: Map<string, number>;
  readonly state: FakeHcloudState;
  /** Replaces the NODEFLEET_SIM_QUOTA_EXCEEDED list from the next create on (`[]` lifts the quota). */
  setQuotaExceeded(serverTypes: readonly string[]): void;
}

const HOUR_MS = 3600_000;

/** `sort=field[:asc|:desc]` for actions, several applied in order. */
function actionOrder(sorts: readonly string[]): (a: Record<string, unknown>, b: Record<string, unknown>) => number {
  return (a, b) => {
    for (const sort of sorts) {
      const [field, direction] = sort.split(":");
      const x = a[field!] as string | number | null;
      const y = b[field!] as string | number | null;
      if (x === y) continue;
      const order = x === null ? 1 : y === null ? -1 : x < y ? -1 : 1;
      return direction === "desc" ? -order : order;
    }
    return 0;
  };
}

export function buildFakeHcloud(options: FakeHcloudOptions): FakeHcloud {
  const app = Fastify({ logger: false, bodyLimit: 1024 * 1024 });
  const state = new FakeHcloudState(options.stateFile);
  const requestCounts = new Map<string, number>();
  const soldOut = new Set(options.outOfStock ?? []);
  const actionMs = options.actionMs ?? 300;
  const limit = options.rateLimitPerHour ?? 3600;
  let budget = limit;
  let budgetAt = Date.now();

  const actionJson = (action: FakeAction) => {
    const now = Date.now();
    const started = Date.parse(action.started);
    const done = now >= action.finishesAt;
    const progress = Math.min(99, Math.floor(((now - started) / Math.max(1, action.finishesAt - started)) * 100));
    const status = !done ? "running" : action.error ? "error" : "success";
    return {
      id: action.id,
      command: action.command,
      status,
      progress: done ? 100 : progress,
      started: action.started,
      finished: done ? new Date(action.finishesAt).toISOString() : null,
      resources: action.resources,
      error: done && action.error ? action.error : null,
    };
  };
  const failCreateRate = options.failCreateRate ?? 0;
  const seed = options.seed ?? "nodefleet";
  const quotaExceeded = { serverTypes: options.quotaExceeded ?? [] };
  const ctx: FakeHcloudContext = {
    state,
    soldOut,
    quotaExceeded,
    actionMs,
    bootDelayMs: options.bootDelayMs ?? 2 * actionMs,
    privateNicDelayMs: options.privateNicDelayMs ?? 0,
    createFails: (name, id) => failCreateRate > 0 && hashNumber(`${seed}/${name}/${id}`, 1_000_000) < failCreateRate * 1_000_000,
    startAction: (command, resources, { durationMs, ...outcome } = {}) =>
      actionJson(state.addAction(command, resources, durationMs ?? actionMs, outcome)),
  };

  app.addHook("onRequest", async (request: FastifyRequest, reply: FastifyReply) => {
    const route = `${request.method} ${request.routeOptions.url ?? request.url.split("?")[0]}`.replace(/:(\w+)/g, "{$1}");
    requestCounts.set(route, (requestCounts.get(route) ?? 0) + 1);
    if (request.url.startsWith(FAKE_METADATA_PREFIX)) return;
    if (request.headers.authorization !== `Bearer ${options.token}`) throw new HcloudError(401, "unauthorized", "unable to authenticate");
    // Hetzner's budget refills continuously (the hourly limit spread over the hour).
    const now = Date.now();
    budget = Math.min(limit, budget + ((now - budgetAt) / HOUR_MS) * limit);
    budgetAt = now;
    const allowed = budget >= 1;
    if (allowed) budget -= 1;
    reply.header("RateLimit-Limit", String(limit));
    reply.header("RateLimit-Remaining", String(Math.floor(budget)));
    reply.header("RateLimit-Reset", String(Math.ceil((now + ((limit - budget) / limit) * HOUR_MS) / 1000)));
    if (!allowed) throw new HcloudError(429, "rate_limit_exceeded", "limit of requests per hour reached");
  });

  app.setErrorHandler((error: Error, _request, reply) => {
    if (error instanceof HcloudError)
      return reply.status(error.status).send({ error: { code: error.code, message: error.message, details: error.details } });
    const status = (error as { statusCode?: number }).statusCode ?? 500;
    if (status >= 500)
      return reply.status(500).send({ error: { code: "server_error", message: "internal error of the fake Hetzner API", details: {} } });
    const code = (error as { code?: string }).code?.startsWith("FST_ERR_CTP") ? "json_error" : "invalid_input";
    return reply.status(status).send({ error: { code, message: error.message, details: {} } });
  });
  app.setNotFoundHandler((request, reply) =>
    reply
      .status(404)
      .send({ error: { code: "not_found", message: `${request.method} ${request.url.split("?")[0]} not found`, details: {} } }),
  );

  app.get("/server_types", async (request) =>
    page(
      request,
      "server_types",
      filtered(
        request,
        serverTypeNames().map((name) => ({ name })),
      ),
      (t) => serverTypeJson(t.name),
    ),
  );
  app.get("/server_types/:id", async (request) => {
    const id = idParam(request);
    const name = serverTypeNames()[id - 1];
    if (!name) throw notFound("server type", id);
    return { server_type: serverTypeJson(name) };
  });
  app.get("/locations", async (request) =>
    page(
      request,
      "locations",
      filtered(
        request,
        locationNames().map((name) => ({ name })),
      ),
      (l) => locationJson(l.name),
    ),
  );
  app.get("/locations/:id", async (request) => {
    const id = idParam(request);
    const name = locationNames()[id - 1];
    if (!name) throw notFound("location", id);
    return { location: locationJson(name) };
  });
  app.get("/datacenters/:id", async (request) => {
    const id = idParam(request);
    const name = locationNames()[id - 1];
    if (!name) throw notFound("datacenter", id);
    return { datacenter: datacenterJson(name, soldOut) };
  });
  app.get("/datacenters", async (request) => ({
    ...page(
      request,
      "datacenters",
      filtered(
        request,
        locationNames().map((name) => ({ name: `${name}-dc1`, location: name })),
      ),
      (d) => datacenterJson(d.location, soldOut),
    ),
    recommendation: Number(datacenterJson("fsn1", soldOut)?.id),
  }));
  registerImages(app, state);
  app.get("/pricing", async () => ({ pricing: pricingJson() }));

  /** A page of the actions `touches` selects, filtered by `id` and `status` and sorted by `sort`. */
  const listActions = (
    request: FastifyRequest,
    touches: (action: FakeAction) => boolean,
    among: () => readonly FakeAction[] = () => state.actions,
  ) => {
    const ids = queryValues(request, "id").map(Number);
    const statuses = queryValues(request, "status");
    // hcloud-go polls running actions by id: looked up, not searched for among the kept thousands.
    const candidates = ids.length > 0 ? [...new Set(ids)].flatMap((id) => state.action(id) ?? []) : among();
    const actions = candidates
      .filter(touches)
      .map(actionJson)
      .filter((a) => statuses.length === 0 || statuses.includes(a.status))
      .sort(actionOrder([...queryValues(request, "sort"), "id"]));
    return page(request, "actions", actions, (a) => a);
  };
  const getAction = (id: number, touches: (action: FakeAction) => boolean) => {
    const action = state.action(id);
    if (!action || !touches(action)) throw notFound("action", id);
    return { action: actionJson(action) };
  };
  app.get("/actions", async (request) => listActions(request, () => true));
  app.get("/actions/:id", async (request) => getAction(idParam(request), () => true));
  // hcloud-go's per-resource action clients: `/{kind}/actions[/{id}]` and `/{kind}/{id}/actions[/{action_id}]`.
  for (const [kind, type] of [
    ["servers", "server"],
    ["networks", "network"],
    ["firewalls", "firewall"],
    ["images", "image"],
  ] as const) {
    const ofType = (a: FakeAction) => a.resources.some((r) => r.type === type);
    const ofResource = (id: number) => (a: FakeAction) => a.resources.some((r) => r.type === type && r.id === id);
    app.get(`/${kind}/actions`, async (request) => listActions(request, ofType));
    app.get(`/${kind}/actions/:id`, async (request) => getAction(idParam(request), ofType));
    app.get(`/${kind}/:id/actions`, async (request) => {
      const id = idParam(request);
      return listActions(request, ofResource(id), () => state.actionsOn(type, id));
    });
    app.get(`/${kind}/:id/actions/:action_id`, async (request) => {
      const actionId = (request.params as { action_id: string }).action_id;
      if (!/^\d{1,15}$/.test(actionId)) throw new HcloudError(400, "invalid_input", `invalid ID '${actionId}'`);
      return getAction(Number(actionId), ofResource(idParam(request)));
    });
  }

  registerServers(app, ctx);
  registerMetadata(app, state);
  registerCollections(app, ctx);
  // A stopped fake leaves one snapshot and no journal behind.
  app.addHook("onClose", async () => state.compact());

  return {
    app,
    requestCounts,
    state,
    setQuotaExceeded: (serverTypes) => {
      quotaExceeded.serverTypes = [...serverTypes];
    },
  };
}
