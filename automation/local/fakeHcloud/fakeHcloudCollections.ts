/**
 * The fake Hetzner API's labelled collections besides servers: networks (subnets, routes, IP range,
 * protection), firewalls (rules and the servers and label selectors they apply to), spread
 * placement groups and SSH keys. Each has list (filters, pages), get, create and update (unique
 * names), delete, and the actions hcloud-go sends on them.
 */
import { createHash } from "node:crypto";
import { isIPv4 } from "node:net";
import type { FastifyInstance, FastifyRequest } from "fastify";
import {
  type Ipv4Cidr,
  cidrContains,
  cidrContainsAddress,
  cidrsOverlap,
  hostAddress,
  parseIpv4Cidr,
} from "../../../components/shared/cidr";
import { HCLOUD_MAX_SUBNETS_PER_NETWORK, HCLOUD_NETWORK_ZONES } from "../../../components/fleet/hcloudLocations";
import {
  type FakeHcloudContext,
  HcloudError,
  bodyOf,
  booleanField,
  filtered,
  idParam,
  invalidInput,
  labelsField,
  notFound,
  page,
  uniquenessError,
} from "./fakeHcloudContext";
import type { FakeHcloudState, FakeObject, FakeServer } from "./fakeHcloudState";
import { parseLabelSelector } from "./labelSelector";

/** A firewall's `applied_to` entry as stored: a server or a label selector. */
type FirewallTarget = { type: "server"; server: { id: number } } | { type: "label_selector"; label_selector: { selector: string } };

interface Subnet {
  type: string;
  ip_range: string;
  network_zone: string;
  gateway: string;
  vswitch_id: number | null;
}

/** A network route: traffic to `destination` goes to the server at `gateway` (e.g. a NAT server). */
interface Route {
  destination: string;
  gateway: string;
}

/** Hetzner's own address on every network, never a route's gateway. */
const HETZNER_RESERVED_ADDRESS = "172.31.1.1";

export function serversInPlacementGroup(state: FakeHcloudState, group: number): number[] {
  return state.servers.filter((s) => s.placementGroup === group).map((s) => s.id);
}

function targetsOf(firewall: FakeObject): FirewallTarget[] {
  return (firewall.applied_to as FirewallTarget[] | undefined) ?? [];
}

function targetMatches(target: FirewallTarget, server: FakeServer): boolean {
  return target.type === "server" ? target.server.id === server.id : parseLabelSelector(target.label_selector.selector)(server.labels);
}

/** The firewalls applied to a server, directly or through a label selector. */
export function firewallsAppliedTo(state: FakeHcloudState, server: FakeServer): number[] {
  return state
    .objects("firewalls")
    .filter((f) => targetsOf(f).some((t) => targetMatches(t, server)))
    .map((f) => f.id);
}

export function applyFirewallToServer(state: FakeHcloudState, firewallId: number, serverId: number): void {
  const firewall = state.objects("firewalls").find((f) => f.id === firewallId)!;
  if (targetsOf(firewall).some((t) => t.type === "server" && t.server.id === serverId)) return;
  state.putObject("firewalls", { ...firewall, applied_to: [...targetsOf(firewall), { type: "server", server: { id: serverId } }] });
}

/** A deleted server leaves the firewalls it was applied to. */
export function removeServerFromFirewalls(state: FakeHcloudState, serverId: number): void {
  for (const firewall of state.objects("firewalls")) {
    const kept = targetsOf(firewall).filter((t) => !(t.type === "server" && t.server.id === serverId));
    if (kept.length !== targetsOf(firewall).length) state.putObject("firewalls", { ...firewall, applied_to: kept });
  }
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
  /** Refuses a delete (besides delete protection) or cleans up after it. */
  readonly beforeDelete?: (object: FakeObject) => void;
}

function registerCollection(app: FastifyInstance, ctx: FakeHcloudContext, spec: CollectionSpec): (request: FastifyRequest) => FakeObject {
  const kind = spec.path.slice(1);
  const render = (o: FakeObject) => ({ ...o, ...(spec.render?.(o) ?? {}) });
  const find = (request: FastifyRequest) => {
    const id = idParam(request);
    const object = ctx.state.objects(kind).find((o) => o.id === id);
    if (!object) throw notFound(spec.singular, id);
    return object;
  };
  const checkName = (name: unknown, except?: number) => {
    if (typeof name !== "string" || name.length === 0 || name.length > 128)
      throw invalidInput("name", "Missing data for required field, or longer than 128 characters.");
    if (ctx.state.objects(kind).some((o) => o.name === name && o.id !== except)) throw uniquenessError(spec.singular);
  };
  app.get(spec.path, async (request) => page(request, kind, filtered(request, ctx.state.objects(kind)), render));
  app.get(`${spec.path}/:id`, async (request) => ({ [spec.singular]: render(find(request)) }));
  app.post(spec.path, async (request, reply) => {
    const body = bodyOf(request);
    checkName(body.name);
    const labels = labelsField(body) ?? {};
    const id = ctx.state.newId();
    const object: FakeObject = { id, name: body.name as string, labels, created: new Date().toISOString(), ...spec.create(body, id) };
    ctx.state.putObject(kind, object);
    reply.status(201);
    return { [spec.singular]: render(object), ...(spec.createAnswer?.(object) ?? {}) };
  });
  app.put(`${spec.path}/:id`, async (request) => {
    const object = find(request);
    const body = bodyOf(request);
    if (body.name !== undefined) checkName(body.name, object.id);
    const labels = labelsField(body);
    const updated = { ...object, ...(typeof body.name === "string" ? { name: body.name } : {}), ...(labels ? { labels } : {}) };
    ctx.state.putObject(kind, updated);
    return { [spec.singular]: render(updated) };
  });
  app.delete(`${spec.path}/:id`, async (request, reply) => {
    const object = find(request);
    if ((object.protection as { delete?: boolean } | undefined)?.delete)
      throw new HcloudError(403, "protected", `${spec.singular} ${object.id} is delete protected`);
    spec.beforeDelete?.(object);
    ctx.state.removeObject(kind, object.id);
    reply.status(204);
    return null;
  });
  return find;
}

/** A POST `/{collection}/{id}/actions/{name}` route answering 201. */
function objectAction(
  app: FastifyInstance,
  path: string,
  find: (request: FastifyRequest) => FakeObject,
  run: (object: FakeObject, body: Record<string, unknown>) => Record<string, unknown>,
): void {
  app.post(path, async (request, reply) => {
    const object = find(request);
    const answer = run(object, bodyOf(request));
    reply.status(201);
    return answer;
  });
}

function ipRangeField(body: Record<string, unknown>, field: string): Ipv4Cidr {
  const range = typeof body[field] === "string" ? parseIpv4Cidr(body[field]) : undefined;
  if (!range || range.prefix > 30)
    throw invalidInput(field, "must be an IPv4 network in CIDR notation with a prefix of at most /30, e.g. 10.0.0.0/16");
  return range;
}

function registerNetworks(app: FastifyInstance, ctx: FakeHcloudContext): void {
  const { state } = ctx;
  /** A subnet from a body, checked against the network's range and its other subnets. */
  const subnet = (networkRange: Ipv4Cidr, existing: readonly Subnet[], body: Record<string, unknown>, field = ""): Subnet => {
    if (body.type !== "cloud" && body.type !== "server" && body.type !== "vswitch")
      throw invalidInput(`${field}type`, "Must be one of: cloud, server, vswitch.");
    if (typeof body.network_zone !== "string" || !(HCLOUD_NETWORK_ZONES as readonly string[]).includes(body.network_zone))
      throw invalidInput(`${field}network_zone`, `Must be one of: ${HCLOUD_NETWORK_ZONES.join(", ")}.`);
    const range = ipRangeField(body, "ip_range");
    if (!cidrContains(networkRange, range)) throw invalidInput(`${field}ip_range`, "must lie within the network's ip_range");
    if (existing.some((s) => cidrsOverlap(parseIpv4Cidr(s.ip_range)!, range)))
      throw new HcloudError(409, "networks_overlap", `subnet ${String(body.ip_range)} overlaps another subnet of the network`);
    return {
      type: body.type,
      ip_range: String(body.ip_range),
      network_zone: body.network_zone,
      gateway: hostAddress(networkRange, 1),
      vswitch_id: typeof body.vswitch_id === "number" ? body.vswitch_id : null,
    };
  };
  /**
   * A route from a body, as Hetzner's API documents add_route: destination an IPv4 CIDR, gateway an
   * address inside the network's range that is neither its first address (Hetzner's gateway) nor
   * 172.31.1.1; a destination is routed once.
   */
  const route = (networkRange: Ipv4Cidr, existing: readonly Route[], body: Record<string, unknown>, field = ""): Route => {
    const destination = typeof body.destination === "string" ? parseIpv4Cidr(body.destination) : undefined;
    if (!destination) throw invalidInput(`${field}destination`, "must be an IPv4 network in CIDR notation, e.g. 0.0.0.0/0");
    const gateway = body.gateway;
    if (typeof gateway !== "string" || !isIPv4(gateway) || !cidrContainsAddress(networkRange, gateway))
      throw invalidInput(`${field}gateway`, "must be an IPv4 address inside the network's ip_range");
    if (gateway === hostAddress(networkRange, 1) || gateway === HETZNER_RESERVED_ADDRESS)
      throw invalidInput(`${field}gateway`, "cannot be the first IP of the network's ip_range or 172.31.1.1");
    if (existing.some((r) => r.destination === body.destination))
      throw invalidInput(`${field}destination`, `the network already has a route to ${String(body.destination)}`);
    return { destination: String(body.destination), gateway };
  };
  const find = registerCollection(app, ctx, {
    path: "/networks",
    singular: "network",
    create: (body) => {
      const range = ipRangeField(body, "ip_range");
      const given = body.subnets ?? [];
      if (!Array.isArray(given)) throw invalidInput("subnets", "must be a list");
      const subnets = given.reduce<Subnet[]>((out, s: Record<string, unknown>) => [...out, subnet(range, out, s ?? {}, "subnets.")], []);
      const givenRoutes = body.routes ?? [];
      if (!Array.isArray(givenRoutes)) throw invalidInput("routes", "must be a list");
      const routes = givenRoutes.reduce<Route[]>((out, r: Record<string, unknown>) => [...out, route(range, out, r ?? {}, "routes.")], []);
      return {
        ip_range: body.ip_range,
        subnets,
        routes,
        protection: { delete: false },
        expose_routes_to_vswitch: booleanField(body, "expose_routes_to_vswitch") ?? false,
      };
    },
    render: (o) => ({
      servers: state.servers.filter((s) => s.privateNets.some((p) => p.network === o.id)).map((s) => s.id),
      load_balancers: [],
    }),
    beforeDelete: (network) => {
      // Hetzner detaches the servers of a deleted network.
      for (const server of state.servers.filter((s) => s.privateNets.some((p) => p.network === network.id)))
        state.updateServer(server.id, { privateNets: server.privateNets.filter((p) => p.network !== network.id) });
    },
  });
  const action = (network: FakeObject, command: string) => ({ action: ctx.startAction(command, [{ id: network.id, type: "network" }]) });
  objectAction(app, "/networks/:id/actions/add_subnet", find, (network, body) => {
    if ((network.subnets as Subnet[]).length >= HCLOUD_MAX_SUBNETS_PER_NETWORK)
      throw new HcloudError(403, "resource_limit_exceeded", `network ${network.id} already has ${HCLOUD_MAX_SUBNETS_PER_NETWORK} subnets`);
    const added = subnet(parseIpv4Cidr(String(network.ip_range))!, network.subnets as Subnet[], body);
    state.putObject("networks", { ...network, subnets: [...(network.subnets as Subnet[]), added] });
    return action(network, "add_subnet");
  });
  objectAction(app, "/networks/:id/actions/delete_subnet", find, (network, body) => {
    const subnets = network.subnets as Subnet[];
    if (!subnets.some((s) => s.ip_range === body.ip_range)) throw invalidInput("ip_range", "no subnet of the network has this ip_range");
    const range = parseIpv4Cidr(String(body.ip_range))!;
    if (state.servers.some((s) => s.privateNets.some((p) => p.network === network.id && cidrContainsAddress(range, p.ip))))
      // Hetzner's answer here is a service_error whose message says servers are attached (what
      // terraform-provider-hcloud matches on to retry), not resource_in_use.
      throw new HcloudError(500, "service_error", `cannot remove subnet ${String(body.ip_range)} because servers are attached to it`);
    state.putObject("networks", { ...network, subnets: subnets.filter((s) => s.ip_range !== body.ip_range) });
    return action(network, "delete_subnet");
  });
  objectAction(app, "/networks/:id/actions/add_route", find, (network, body) => {
    const added = route(parseIpv4Cidr(String(network.ip_range))!, network.routes as Route[], body);
    state.putObject("networks", { ...network, routes: [...(network.routes as Route[]), added] });
    return action(network, "add_route");
  });
  objectAction(app, "/networks/:id/actions/delete_route", find, (network, body) => {
    const routes = network.routes as Route[];
    if (!routes.some((r) => r.destination === body.destination && r.gateway === body.gateway))
      throw new HcloudError(
        404,
        "not_found",
        `network ${network.id} has no route to ${String(body.destination)} via ${String(body.gateway)}`,
      );
    state.putObject("networks", {
      ...network,
      routes: routes.filter((r) => r.destination !== body.destination || r.gateway !== body.gateway),
    });
    return action(network, "delete_route");
  });
  objectAction(app, "/networks/:id/actions/change_protection", find, (network, body) => {
    const del = booleanField(body, "delete");
    state.putObject("networks", { ...network, protection: { delete: del ?? (network.protection as { delete: boolean }).delete } });
    return action(network, "change_protection");
  });
  objectAction(app, "/networks/:id/actions/change_ip_range", find, (network, body) => {
    const range = ipRangeField(body, "ip_range");
    // Hetzner only lets a network's range grow.
    if (!cidrContains(range, parseIpv4Cidr(String(network.ip_range))!))
      throw invalidInput("ip_range", "the new ip_range must contain the current one (a network can only be enlarged)");
    state.putObject("networks", {
      ...network,
      ip_range: body.ip_range,
      subnets: (network.subnets as Subnet[]).map((s) => ({ ...s, gateway: hostAddress(range, 1) })),
    });
    return action(network, "change_ip_range");
  });
}

function registerFirewalls(app: FastifyInstance, ctx: FakeHcloudContext): void {
  const { state } = ctx;
  const rules = (body: Record<string, unknown>): unknown[] => {
    const given = body.rules ?? [];
    if (!Array.isArray(given)) throw invalidInput("rules", "must be a list");
    return given.map((rule: Record<string, unknown>, i) => {
      if (rule?.direction !== "in" && rule?.direction !== "out") throw invalidInput(`rules[${i}].direction`, "Must be one of: in, out.");
      if (!["tcp", "udp", "icmp", "esp", "gre"].includes(String(rule.protocol)))
        throw invalidInput(`rules[${i}].protocol`, "Must be one of: tcp, udp, icmp, esp, gre.");
      if ((rule.protocol === "tcp" || rule.protocol === "udp") && typeof rule.port !== "string")
        throw invalidInput(`rules[${i}].port`, "is required for tcp and udp");
      const ips = rule.direction === "in" ? "source_ips" : "destination_ips";
      if (!Array.isArray(rule[ips]) || (rule[ips] as unknown[]).length === 0)
        throw invalidInput(`rules[${i}].${ips}`, `is required for direction ${rule.direction}`);
      // A rule without a port (icmp, esp, gre) has none in the answer either.
      return {
        direction: rule.direction,
        protocol: rule.protocol,
        ...(typeof rule.port === "string" ? { port: rule.port } : {}),
        source_ips: rule.source_ips ?? [],
        destination_ips: rule.destination_ips ?? [],
        description: rule.description ?? null,
      };
    });
  };
  const targets = (body: Record<string, unknown>, field: string): FirewallTarget[] => {
    const given = body[field] ?? [];
    if (!Array.isArray(given)) throw invalidInput(field, "must be a list");
    return given.map((t: Record<string, unknown>) => {
      if (t?.type === "server") {
        const id = (t.server as { id?: unknown } | undefined)?.id;
        if (typeof id !== "number") throw invalidInput(`${field}.server.id`, "Missing data for required field.");
        if (!state.server(id)) throw new HcloudError(404, "firewall_resource_not_found", `server ${id} not found`);
        return { type: "server", server: { id } };
      }
      if (t?.type === "label_selector") {
        const selector = (t.label_selector as { selector?: unknown } | undefined)?.selector;
        if (typeof selector !== "string") throw invalidInput(`${field}.label_selector.selector`, "Missing data for required field.");
        try {
          parseLabelSelector(selector);
        } catch (error) {
          throw invalidInput(`${field}.label_selector.selector`, (error as Error).message);
        }
        return { type: "label_selector", label_selector: { selector } };
      }
      throw invalidInput(`${field}.type`, "Must be one of: server, label_selector.");
    });
  };
  const sameTarget = (a: FirewallTarget, b: FirewallTarget) =>
    a.type === "server"
      ? b.type === "server" && a.server.id === b.server.id
      : b.type === "label_selector" && a.label_selector.selector === b.label_selector.selector;
  const applyActions = (firewall: FakeObject, applied: FirewallTarget[], command: string) =>
    applied.map((t) =>
      ctx.startAction(command, [
        { id: firewall.id, type: "firewall" },
        ...(t.type === "server" ? [{ id: t.server.id, type: "server" }] : []),
      ]),
    );
  const find = registerCollection(app, ctx, {
    path: "/firewalls",
    singular: "firewall",
    create: (body) => ({ rules: rules(body), applied_to: targets(body, "apply_to") }),
    render: (o) => ({
      applied_to: targetsOf(o).map((t) =>
        t.type === "server"
          ? t
          : {
              ...t,
              applied_to_resources: state.servers.filter((s) => targetMatches(t, s)).map((s) => ({ type: "server", server: { id: s.id } })),
            },
      ),
    }),
    createAnswer: (o) => ({
      actions: [
        ctx.startAction("set_firewall_rules", [{ id: o.id, type: "firewall" }]),
        ...applyActions(o, targetsOf(o), "apply_firewall"),
      ],
    }),
    beforeDelete: (firewall) => {
      if (state.servers.some((s) => targetsOf(firewall).some((t) => targetMatches(t, s))))
        throw new HcloudError(409, "resource_in_use", `firewall ${firewall.id} is still applied to servers`);
    },
  });
  objectAction(app, "/firewalls/:id/actions/set_rules", find, (firewall, body) => {
    if (body.rules === undefined) throw invalidInput("rules", "Missing data for required field.");
    state.putObject("firewalls", { ...firewall, rules: rules(body) });
    return { actions: [ctx.startAction("set_firewall_rules", [{ id: firewall.id, type: "firewall" }])] };
  });
  objectAction(app, "/firewalls/:id/actions/apply_to_resources", find, (firewall, body) => {
    if (body.apply_to === undefined) throw invalidInput("apply_to", "Missing data for required field.");
    const added = targets(body, "apply_to");
    const already = added.find((t) => targetsOf(firewall).some((e) => sameTarget(e, t)));
    if (already)
      throw new HcloudError(
        409,
        "firewall_already_applied",
        `firewall ${firewall.id} is already applied to this ${already.type === "server" ? `server ${already.server.id}` : "label selector"}`,
      );
    state.putObject("firewalls", { ...firewall, applied_to: [...targetsOf(firewall), ...added] });
    return { actions: applyActions(firewall, added, "apply_firewall") };
  });
  objectAction(app, "/firewalls/:id/actions/remove_from_resources", find, (firewall, body) => {
    if (body.remove_from === undefined) throw invalidInput("remove_from", "Missing data for required field.");
    const removed = targets(body, "remove_from");
    const absent = removed.find((t) => !targetsOf(firewall).some((e) => sameTarget(e, t)));
    if (absent)
      throw new HcloudError(
        409,
        "firewall_already_removed",
        `firewall ${firewall.id} is not applied to this ${absent.type === "server" ? `server ${absent.server.id}` : "label selector"}`,
      );
    state.putObject("firewalls", { ...firewall, applied_to: targetsOf(firewall).filter((e) => !removed.some((t) => sameTarget(e, t))) });
    return { actions: applyActions(firewall, removed, "remove_firewall") };
  });
}

export function registerCollections(app: FastifyInstance, ctx: FakeHcloudContext): void {
  registerNetworks(app, ctx);
  registerFirewalls(app, ctx);
  registerCollection(app, ctx, {
    path: "/placement_groups",
    singular: "placement_group",
    create: (body) => {
      if (body.type !== "spread") throw invalidInput("type", "Must be one of: spread.");
      return { type: "spread" };
    },
    render: (o) => ({ servers: serversInPlacementGroup(ctx.state, o.id) }),
    createAnswer: () => ({ action: null }),
  });
  registerCollection(app, ctx, {
    path: "/ssh_keys",
    singular: "ssh_key",
    create: (body) => {
      if (
        typeof body.public_key !== "string" ||
        !/^(ssh-(ed25519|rsa)|ecdsa-sha2-nistp(256|384|521)) [A-Za-z0-9+/=]+/.test(body.public_key)
      )
        throw invalidInput("public_key", "must be an OpenSSH public key");
      const fingerprint = sshFingerprint(body.public_key);
      // Hetzner keeps one entry per key, too.
      if (ctx.state.objects("ssh_keys").some((k) => k.fingerprint === fingerprint))
        throw new HcloudError(409, "uniqueness_error", "SSH key with the same fingerprint already exists", {
          fields: [{ name: "public_key", messages: ["is already used"] }],
        });
      return { public_key: body.public_key, fingerprint };
    },
  });
}

/** The key's MD5 fingerprint, as Hetzner shows it. */
function sshFingerprint(publicKey: string): string {
  const blob = Buffer.from(publicKey.split(" ")[1] ?? "", "base64");
  return createHash("md5").update(blob).digest("hex").match(/../g)!.join(":");
}
