/**
 * A fake Scaleway API for the local cloud, on the wire format scaleway-sdk-go and the Scaleway
 * provider speak: the `X-Auth-Token` secret key, Elastic Metal v1 (servers, offers, OS, options)
 * with its private-network API (v1 and v3), VPC v2 private networks and IPAM v1 IPs, Scaleway's
 * pages and error shapes, a knob that takes permission sets away from the key (403
 * `permissions_denied`), and a request counter per route. Checked against scaleway-sdk-go's own
 * types by the Go module in ./sdkcheck. The catalog is served here; servers in
 * fakeScalewayServers.ts, networks and IPs in fakeScalewayNetworks.ts, IAM SSH keys in
 * fakeScalewayIam.ts, and the installed servers' machines in fakeScalewayMachines.ts.
 */
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from "fastify";
import {
  ELASTIC_METAL_OFFERS,
  ELASTIC_METAL_OPTIONS,
  ELASTIC_METAL_OSES,
  offerById,
  offerJson,
  optionJson,
  osJson,
} from "./fakeScalewayCatalog";
import {
  type FakeScalewayContext,
  ScalewayError,
  invalidArgument,
  notFound,
  page,
  queryValues,
  uuidParam,
  zoneParam,
} from "./fakeScalewayContext";
import { registerIamSshKeys } from "./fakeScalewayIam";
import { ScalewayMachines, machinesCanRun } from "./fakeScalewayMachines";
import { registerNetworks } from "./fakeScalewayNetworks";
import { registerServers } from "./fakeScalewayServers";
import { FakeScalewayState } from "./fakeScalewayState";

export interface FakeScalewayOptions {
  /** The API key's secret key (a UUID, as Scaleway's are), sent as `X-Auth-Token`. */
  readonly secretKey: string;
  /** The project (and organization) every resource belongs to. */
  readonly projectId: string;
  /** Where the state is kept. */
  readonly stateFile: string;
  /** How long an order is delivered, and an option or private-network attachment settles. Default 300 ms. */
  readonly actionMs?: number;
  /** How long an OS install runs (NODEFLEET_SIM_SCW_INSTALL_MS). Default 2000 ms. */
  readonly installMs?: number;
  /** How long after `attached` a private-network attachment reports its VLAN (NODEFLEET_SIM_SCW_VLAN_DELAY_MS). Default 0. */
  readonly vlanDelayMs?: number;
  /** Permission sets the key lacks, e.g. `ElasticMetalFullAccess` (NODEFLEET_SIM_SCW_MISSING_PERMISSIONS). */
  readonly missingPermissions?: readonly string[];
  /** Offers whose orders fail as out of stock (NODEFLEET_SIM_OUT_OF_STOCK). */
  readonly outOfStock?: readonly string[];
  /**
   * Where installed servers' machines keep their files: given, and run as root, each server whose
   * install completes becomes a machine you SSH into on its IPv4, a loopback address
   * (fakeScalewayMachines.ts); not root, servers get documentation addresses and no machine, said once.
   */
  readonly machinesDir?: string;
  /**
   * The second octet of the machines' loopback block, 127.<n>.4.0/22 (default 0): fakes with
   * machines running at once on one host (tests in parallel) each need their own.
   */
  readonly machineBlock?: number;
  /** Where the machines' troubles are said (one line each). Default: stderr. */
  readonly log?: (message: string) => void;
}

export interface FakeScaleway {
  readonly app: FastifyInstance;
  /** Requests served, by `METHOD /path/{param}`. */
  readonly requestCounts: Map<string, number>;
  readonly state: FakeScalewayState;
  /** Replaces the missing permission sets from the next request on (`[]` grants everything again). */
  setMissingPermissions(permissionSets: readonly string[]): void;
  /** The installed servers' machines, when `machinesDir` was given and they can run here. */
  readonly machines?: ScalewayMachines;
}

/**
 * The permission sets each API needs, as Scaleway names them (`<Product>FullAccess` to change,
 * `<Product>ReadOnly` or FullAccess to read), and the resource each route is about.
 */
const PRODUCTS: ReadonlyArray<{ prefix: string; permissionSet: string; resource: (path: string) => string }> = [
  {
    prefix: "/baremetal/",
    permissionSet: "ElasticMetal",
    resource: (p) =>
      p.includes("private-network")
        ? "baremetal_private_network"
        : p.includes("/offers")
          ? "baremetal_offer"
          : p.includes("/options") && !p.includes("/servers/")
            ? "baremetal_option"
            : p.includes("/os")
              ? "baremetal_os"
              : "baremetal_server",
  },
  { prefix: "/vpc/", permissionSet: "VPC", resource: (p) => (p.includes("/vpcs") ? "vpc" : "private_network") },
  { prefix: "/ipam/", permissionSet: "IPAM", resource: () => "ip" },
];

export function buildFakeScaleway(options: FakeScalewayOptions): FakeScaleway {
  const app = Fastify({ logger: false, bodyLimit: 1024 * 1024 });
  const state = new FakeScalewayState(options.stateFile);
  const requestCounts = new Map<string, number>();
  const missing = { sets: new Set(options.missingPermissions ?? []) };
  const log = options.log ?? ((message: string) => process.stderr.write(`${message}\n`));
  const machines =
    options.machinesDir === undefined || !machinesCanRun() ? undefined : new ScalewayMachines({ state, dir: options.machinesDir, log });
  if (options.machinesDir !== undefined && !machines)
    log("the fake Scaleway API runs no Elastic Metal machines: their sandbox needs root; servers get documentation addresses");
  const ctx: FakeScalewayContext = {
    state,
    projectId: options.projectId,
    actionMs: options.actionMs ?? 300,
    installMs: options.installMs ?? 2000,
    vlanDelayMs: options.vlanDelayMs ?? 0,
    outOfStock: new Set(options.outOfStock ?? []),
    machineAddresses: machines === undefined ? false : { block: options.machineBlock ?? 0 },
  };

  // The SDK sends `{}` or nothing on body-less calls (add option, release IP); both are an empty object.
  app.removeContentTypeParser("application/json");
  app.addContentTypeParser("application/json", { parseAs: "string" }, (_request, body, done) => {
    if (String(body).trim() === "") return done(null, undefined);
    try {
      done(null, JSON.parse(String(body)));
    } catch (error) {
      done(invalidArgument("body", "format", `malformed JSON: ${(error as Error).message}`), undefined);
    }
  });

  app.addHook("onRequest", async (request: FastifyRequest) => {
    const path = request.url.split("?")[0]!;
    const route = `${request.method} ${request.routeOptions.url ?? path}`.replace(/:(\w+)/g, "{$1}");
    requestCounts.set(route, (requestCounts.get(route) ?? 0) + 1);
    const token = request.headers["x-auth-token"];
    if (typeof token !== "string" || token === "")
      throw new ScalewayError(401, {
        message: "authentication is denied",
        type: "denied_authentication",
        method: "api_key",
        reason: "invalid_argument",
      });
    if (token !== options.secretKey)
      throw new ScalewayError(401, {
        message: "authentication is denied",
        type: "denied_authentication",
        method: "api_key",
        reason: "not_found",
      });
    const product = PRODUCTS.find((p) => path.startsWith(p.prefix));
    if (!product || missing.sets.size === 0) return;
    const write = request.method !== "GET";
    const fullAccess = `${product.permissionSet}FullAccess`;
    const allowed = missing.sets.has(fullAccess) === false || (!write && !missing.sets.has(`${product.permissionSet}ReadOnly`));
    if (!allowed) {
      const lacking = write ? fullAccess : `${product.permissionSet}ReadOnly`;
      throw new ScalewayError(403, {
        message: `insufficient permissions: the API key lacks the permission set ${lacking}`,
        type: "permissions_denied",
        details: [{ resource: product.resource(path), action: write ? "write" : "read" }],
      });
    }
  });

  app.setErrorHandler((error: Error, _request, reply: FastifyReply) => {
    if (error instanceof ScalewayError) return reply.status(error.status).send(error.body);
    const status = (error as { statusCode?: number }).statusCode ?? 500;
    if (status >= 500) return reply.status(500).send({ message: "internal error of the fake Scaleway API", type: "internal_error" });
    return reply.status(400).send(invalidArgument("body", "format", error.message).body);
  });
  app.setNotFoundHandler((request, reply) =>
    reply.status(404).send(notFound("route", `${request.method} ${request.url.split("?")[0]}`).body),
  );

  const offers = "/baremetal/v1/zones/:zone/offers";
  app.get(offers, async (request) => {
    const zone = zoneParam(request);
    const [name] = queryValues(request, "name");
    const [period] = queryValues(request, "subscription_period");
    // The fake sells hourly offers only (their `monthly_offer_id` names the monthly twin).
    const list = Object.entries(ELASTIC_METAL_OFFERS)
      .filter(([n]) => name === undefined || n.toLowerCase() === name.toLowerCase())
      .filter(() => period === undefined || period === "hourly" || period === "unknown_subscription_period");
    return page(request, "offers", list, ([n, o]) => offerJson(n, o, zone, ctx.outOfStock));
  });
  app.get(`${offers}/:offer_id`, async (request) => {
    const zone = zoneParam(request);
    const id = uuidParam(request, "offer_id");
    const offer = offerById(id);
    if (!offer) throw notFound("baremetal_offer", id);
    return offerJson(offer[0], offer[1], zone, ctx.outOfStock);
  });
  const oses = "/baremetal/v1/zones/:zone/os";
  app.get(oses, async (request) => {
    const zone = zoneParam(request);
    const [offerId] = queryValues(request, "offer_id");
    if (offerId !== undefined && !offerById(offerId)) throw notFound("baremetal_offer", offerId);
    return page(request, "os", ELASTIC_METAL_OSES, (o) => osJson(o, zone));
  });
  app.get(`${oses}/:os_id`, async (request) => {
    const zone = zoneParam(request);
    const id = uuidParam(request, "os_id");
    const os = ELASTIC_METAL_OSES.find((o) => o.id === id);
    if (!os) throw notFound("baremetal_os", id);
    return osJson(os, zone);
  });
  const optionsPath = "/baremetal/v1/zones/:zone/options";
  app.get(optionsPath, async (request) => {
    zoneParam(request);
    const [name] = queryValues(request, "name");
    const [offerId] = queryValues(request, "offer_id");
    if (offerId !== undefined && !offerById(offerId)) throw notFound("baremetal_offer", offerId);
    const list = ELASTIC_METAL_OPTIONS.filter((o) => name === undefined || o.name === name).filter(
      // Every offer carries the first two options (fakeScalewayCatalog.ts).
      (o) => offerId === undefined || ELASTIC_METAL_OPTIONS.indexOf(o) < 2,
    );
    return page(request, "options", list, optionJson);
  });
  app.get(`${optionsPath}/:option_id`, async (request) => {
    zoneParam(request);
    const id = uuidParam(request, "option_id");
    const option = ELASTIC_METAL_OPTIONS.find((o) => o.id === id);
    if (!option) throw notFound("baremetal_option", id);
    return optionJson(option);
  });

  registerServers(app, ctx);
  registerNetworks(app, ctx);
  registerIamSshKeys(app, ctx);
  if (machines) {
    app.addHook("onReady", async () => machines.start());
    app.addHook("onClose", async () => machines.stop());
  }
  // A stopped fake leaves one snapshot and no journal behind.
  app.addHook("onClose", async () => state.compact());

  return {
    app,
    requestCounts,
    state,
    ...(machines ? { machines } : {}),
    setMissingPermissions: (permissionSets) => {
      missing.sets = new Set(permissionSets);
    },
  };
}
