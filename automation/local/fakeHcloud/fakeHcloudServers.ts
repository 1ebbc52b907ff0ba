/**
 * The fake Hetzner API's servers: list, get, create (user data, networks with private IPs from
 * their subnets, firewalls, placement group, public IPs, labels), update, delete (refused while
 * delete-protected), and the server actions hcloud-go sends. While an action runs on a server the
 * server is `locked` and further actions are refused with `locked`, as Hetzner does.
 */
import type { FastifyInstance, FastifyRequest } from "fastify";
import { cidrContainsAddress, hostAddress, lowestFreeHost, parseIpv4Cidr } from "../../../components/shared/cidr";
import { AddressPool } from "../../simulated/addressPool";
import {
  HCLOUD_LOCATION_ZONES,
  HCLOUD_MAX_SERVERS_PER_NETWORK,
  HCLOUD_MAX_SERVERS_PER_SPREAD_GROUP,
  HCLOUD_MAX_USER_DATA_BYTES,
} from "../../../components/fleet/hcloudLocations";
import {
  datacenterJson,
  soldOutIn,
  type Architecture,
  locationJson,
  locationName,
  serverTypeJson,
  serverTypeName,
} from "./fakeHcloudCatalog";
import { bootImage, bootImageJson, snapshotJson, takeSnapshot } from "./fakeHcloudImages";
import { applyFirewallToServer, firewallsAppliedTo, removeServerFromFirewalls, serversInPlacementGroup } from "./fakeHcloudCollections";
import {
  type FakeHcloudContext,
  HcloudError,
  bodyOf,
  booleanField,
  filtered,
  idField,
  idParam,
  invalidInput,
  labelsField,
  notFound,
  page,
  queryValues,
  uniquenessError,
} from "./fakeHcloudContext";
import { type FakePrivateNet, type FakeServer, type FakeServerStatus, macAddress } from "./fakeHcloudState";
import { overQuota } from "../../simulated/simulationKnobs";

const HOSTNAME = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/i;

function serverTypeArchitecture(name: string): Architecture {
  return serverTypeJson(name)?.architecture === "arm" ? "arm" : "x86";
}

/**
 * A private-network attachment for `server`: the requested IP, or the lowest free one of a subnet
 * in the server's network zone. `keepIp` re-checks an existing attachment (new alias IPs, same IP).
 */
function attachment(
  ctx: FakeHcloudContext,
  server: Pick<FakeServer, "id" | "location">,
  networkId: number,
  index: number,
  requested: { ip?: unknown; aliasIps?: unknown; keepIp?: string },
): FakePrivateNet {
  const network = ctx.state.objects("networks").find((n) => n.id === networkId);
  if (!network) throw notFound("network", networkId);
  const others = ctx.state.servers.filter((s) => s.id !== server.id && s.privateNets.some((p) => p.network === networkId));
  if (requested.keepIp === undefined && others.length >= HCLOUD_MAX_SERVERS_PER_NETWORK)
    throw new HcloudError(403, "resource_limit_exceeded", `network ${networkId} already holds ${HCLOUD_MAX_SERVERS_PER_NETWORK} servers`);
  const zone = HCLOUD_LOCATION_ZONES[server.location];
  const subnets = (network.subnets as Array<{ ip_range: string; network_zone: string; type: string }>).filter(
    (s) => s.network_zone === zone && s.type !== "vswitch",
  );
  const taken = new Set(others.flatMap((s) => s.privateNets.filter((p) => p.network === networkId).flatMap((p) => [p.ip, ...p.alias_ips])));
  // The network's first address and each subnet's are gateways (Hetzner's network architecture).
  for (const range of [String(network.ip_range), ...subnets.map((s) => s.ip_range)]) taken.add(hostAddress(parseIpv4Cidr(range)!, 1));
  if (requested.keepIp !== undefined) taken.add(requested.keepIp);
  const aliasIps = requested.aliasIps === undefined ? [] : requested.aliasIps;
  if (!Array.isArray(aliasIps) || aliasIps.some((a) => typeof a !== "string"))
    throw invalidInput("alias_ips", "must be a list of IP addresses");
  const inSubnet = (address: string) => subnets.some((s) => cidrContainsAddress(parseIpv4Cidr(s.ip_range)!, address));
  const wanted = [...(requested.ip === undefined ? [] : [requested.ip]), ...aliasIps];
  for (const [i, address] of wanted.entries()) {
    if (typeof address !== "string" || !inSubnet(address) || taken.has(address) || wanted.indexOf(address) !== i)
      throw new HcloudError(409, "ip_not_available", `IP ${String(address)} is not available in network ${networkId}`);
  }
  let ip = requested.keepIp ?? (requested.ip as string | undefined);
  for (const subnet of subnets) {
    ip ??= lowestFreeHost(parseIpv4Cidr(subnet.ip_range)!, new Set([...taken, ...(aliasIps as string[])]));
  }
  if (!ip) throw new HcloudError(412, "no_subnet_available", `network ${networkId} has no subnet with a free IP in network zone ${zone}`);
  return { network: networkId, ip, alias_ips: aliasIps as string[], mac_address: macAddress(server.id, index) };
}

export function registerServers(app: FastifyInstance, ctx: FakeHcloudContext): void {
  const { state } = ctx;

  const placementGroupJson = (s: FakeServer) => {
    const group = state.objects("placement_groups").find((g) => g.id === s.placementGroup);
    return group ? { ...group, servers: serversInPlacementGroup(state, group.id) } : null;
  };
  const serverJson = (s: FakeServer) => {
    const type = serverTypeJson(s.serverType);
    const image = bootImageJson(state, s.image, serverTypeArchitecture(s.serverType));
    return {
      id: s.id,
      name: s.name,
      status: s.status,
      created: s.created,
      public_net: {
        ipv4: s.ipv4 === null ? null : { id: s.id, ip: s.ipv4, blocked: false, dns_ptr: `static.${s.ipv4}.clients.your-server.de` },
        ipv6: s.ipv6 === null ? null : { id: s.id + 1, ip: s.ipv6, blocked: false, dns_ptr: [] },
        floating_ips: [],
        firewalls: firewallsAppliedTo(state, s).map((id) => ({ id, status: "applied" })),
      },
      private_net: s.privateNets,
      server_type: type,
      datacenter: datacenterJson(s.location, ctx.soldOut),
      location: locationJson(s.location),
      image,
      iso: null,
      rescue_enabled: false,
      locked: state.runningActionsOn("server", s.id).length > 0,
      backup_window: null,
      outgoing_traffic: 0,
      ingoing_traffic: 0,
      included_traffic: 21990232555520,
      protection: { delete: s.deleteProtection, rebuild: s.rebuildProtection },
      labels: s.labels,
      volumes: [],
      load_balancers: [],
      primary_disk_size: Number(type?.disk ?? 40),
      placement_group: placementGroupJson(s),
    };
  };
  const find = (request: FastifyRequest) => {
    const id = idParam(request);
    const server = state.server(id);
    if (!server) throw notFound("server", id);
    return server;
  };
  const checkName = (name: unknown, except?: number) => {
    if (typeof name !== "string" || !HOSTNAME.test(name)) throw invalidInput("name", "must be a valid hostname");
    const named = state.serverByName(name);
    if (named && named.id !== except) throw uniquenessError("server");
  };
  const checkPlacementRoom = (group: number) => {
    if (!state.objects("placement_groups").some((g) => g.id === group)) throw notFound("placement group", group);
    if (serversInPlacementGroup(state, group).length >= HCLOUD_MAX_SERVERS_PER_SPREAD_GROUP)
      throw new HcloudError(
        412,
        "placement_error",
        `placement group ${group} already holds ${HCLOUD_MAX_SERVERS_PER_SPREAD_GROUP} servers`,
      );
  };

  app.get("/servers", async (request) => {
    const statuses = queryValues(request, "status");
    // A look-up by name is an index read (the provider looks servers up by name).
    const [name] = queryValues(request, "name");
    const candidates = name === undefined ? state.servers : [state.serverByName(name) ?? []].flat();
    const servers = filtered(request, candidates).filter((s) => statuses.length === 0 || statuses.includes(s.status));
    return page(request, "servers", servers, serverJson);
  });
  app.get("/servers/:id", async (request) => ({ server: serverJson(find(request)) }));

  app.post("/servers", async (request, reply) => {
    const body = bodyOf(request);
    checkName(body.name);
    const serverType = serverTypeName(body.server_type);
    if (!serverType) throw invalidInput("server_type", "server type not found");
    const image = bootImage(state, body.image, serverTypeArchitecture(serverType));
    if (!image) throw invalidInput("image", `image not found for architecture ${serverTypeArchitecture(serverType)}`);
    const location =
      body.location !== undefined
        ? locationName(body.location)
        : typeof body.datacenter === "string"
          ? locationName(body.datacenter.replace(/-dc\d+$/, ""))
          : "fsn1";
    if (!location) throw invalidInput(body.location !== undefined ? "location" : "datacenter", "location not found");
    if (body.user_data !== undefined && typeof body.user_data !== "string") throw invalidInput("user_data", "must be a string");
    if (typeof body.user_data === "string" && Buffer.byteLength(body.user_data) > HCLOUD_MAX_USER_DATA_BYTES)
      throw invalidInput("user_data", `Length must be between 0 and ${HCLOUD_MAX_USER_DATA_BYTES}.`);
    const labels = labelsField(body) ?? {};
    const networks = body.networks ?? [];
    if (!Array.isArray(networks) || networks.some((n, i) => typeof n !== "number" || networks.indexOf(n) !== i))
      throw invalidInput("networks", "must be a list of distinct network IDs");
    const firewalls = body.firewalls ?? [];
    if (!Array.isArray(firewalls) || firewalls.some((f) => typeof (f as { firewall?: unknown })?.firewall !== "number"))
      throw invalidInput("firewalls", "must be a list of {firewall: ID}");
    const firewallIds = (firewalls as Array<{ firewall: number }>).map((f) => f.firewall);
    const missingFirewall = firewallIds.find((id) => !state.objects("firewalls").some((f) => f.id === id));
    if (missingFirewall !== undefined) throw notFound("firewall", missingFirewall);
    const sshKeys = body.ssh_keys ?? [];
    if (!Array.isArray(sshKeys)) throw invalidInput("ssh_keys", "must be a list of SSH key IDs or names");
    const unknownKey = sshKeys.find(
      (k) => !state.objects("ssh_keys").some((key) => key.id === k || key.name === k || String(key.id) === k),
    );
    if (unknownKey !== undefined) throw invalidInput("ssh_keys", `SSH key ${JSON.stringify(unknownKey)} not found`);
    const publicNet = (body.public_net ?? {}) as { enable_ipv4?: unknown; enable_ipv6?: unknown };
    const placementGroup = body.placement_group === undefined || body.placement_group === null ? null : idField(body, "placement_group");
    if (placementGroup !== null) checkPlacementRoom(placementGroup);
    const startAfterCreate = booleanField(body, "start_after_create") ?? true;
    if (soldOutIn(ctx.soldOut, serverType, location))
      throw new HcloudError(412, "resource_unavailable", `server type ${serverType} is unavailable in ${location}: error during placement`);
    if (overQuota(ctx.quotaExceeded.serverTypes, serverType))
      throw new HcloudError(403, "resource_limit_exceeded", "server limit exceeded for this project");
    const id = state.newId();
    const privateNets = (networks as number[]).map((network, i) => attachment(ctx, { id, location }, network, i, {}));
    const server: FakeServer = {
      id,
      name: body.name as string,
      status: "initializing",
      created: new Date().toISOString(),
      labels,
      serverType,
      location,
      image: image.name,
      userData: typeof body.user_data === "string" ? body.user_data : "",
      ipv4: publicNet.enable_ipv4 === false ? null : new AddressPool(state.servers.map((s) => s.ipv4 ?? "")).public(body.name as string),
      ipv6: publicNet.enable_ipv6 === false ? null : `2001:db8:${(id % 65536).toString(16)}::/64`,
      privateNets,
      placementGroup,
      deleteProtection: false,
      rebuildProtection: false,
    };
    state.addServer(server);
    const created = [{ id, type: "server" }];
    // The boot delay is the time to `running`; creating takes part of it.
    const createMs = Math.min(ctx.actionMs, ctx.bootDelayMs);
    if (ctx.createFails(server.name, id)) {
      const error = { code: "action_failed", message: "create_server action failed (NODEFLEET_SIM_FAIL_CREATE_RATE)" };
      reply.status(201);
      return {
        server: serverJson(server),
        action: ctx.startAction("create_server", created, { durationMs: createMs, serverStatus: { server: id, status: "removed" }, error }),
        next_actions: [],
        root_password: null,
      };
    }
    for (const firewall of firewallIds) applyFirewallToServer(state, firewall, id);
    const action = ctx.startAction("create_server", created, { durationMs: createMs, serverStatus: { server: id, status: "off" } });
    const nextActions = startAfterCreate
      ? [ctx.startAction("start_server", created, { durationMs: ctx.bootDelayMs, serverStatus: { server: id, status: "running" } })]
      : [];
    reply.status(201);
    return { server: serverJson(server), action, next_actions: nextActions, root_password: null };
  });

  app.put("/servers/:id", async (request) => {
    const server = find(request);
    const body = bodyOf(request);
    if (body.name !== undefined) checkName(body.name, server.id);
    const labels = labelsField(body);
    return {
      server: serverJson(
        state.updateServer(server.id, { ...(typeof body.name === "string" ? { name: body.name } : {}), ...(labels ? { labels } : {}) }),
      ),
    };
  });

  app.delete("/servers/:id", async (request) => {
    const server = find(request);
    if (server.deleteProtection) throw new HcloudError(403, "protected", `server ${server.id} is delete protected`);
    removeServerFromFirewalls(state, server.id);
    state.removeServer(server.id);
    return { action: ctx.startAction("delete_server", [{ id: server.id, type: "server" }]) };
  });

  /** A server action: refused while another runs on the server; `run` checks, changes and answers. */
  const serverAction = (name: string, run: (server: FakeServer, body: Record<string, unknown>) => Record<string, unknown>) =>
    app.post(`/servers/:id/actions/${name}`, async (request, reply) => {
      const server = find(request);
      const body = bodyOf(request);
      if (state.runningActionsOn("server", server.id).length > 0)
        throw new HcloudError(423, "locked", `server ${server.id} is locked: another action is running on it`);
      const answer = run(server, body);
      reply.status(201);
      return answer;
    });
  const transition = (
    server: FakeServer,
    command: string,
    during: FakeServerStatus,
    after: FakeServerStatus,
    extra: Array<{ id: number; type: string }> = [],
  ) => {
    state.updateServer(server.id, { status: during });
    return {
      action: ctx.startAction(command, [{ id: server.id, type: "server" }, ...extra], {
        serverStatus: { server: server.id, status: after },
      }),
    };
  };
  const requireStopped = (server: FakeServer) => {
    if (server.status !== "off")
      throw new HcloudError(412, "server_not_stopped", `server ${server.id} must be powered off for this action`);
  };

  serverAction("poweron", (s) => transition(s, "start_server", s.status === "running" ? "running" : "starting", "running"));
  serverAction("poweroff", (s) => transition(s, "stop_server", s.status === "off" ? "off" : "stopping", "off"));
  serverAction("shutdown", (s) => transition(s, "shutdown_server", s.status === "off" ? "off" : "stopping", "off"));
  serverAction("reboot", (s) => transition(s, "reboot_server", s.status, "running"));
  serverAction("reset", (s) => transition(s, "reset_server", s.status, "running"));
  serverAction("change_protection", (s, body) => {
    const del = booleanField(body, "delete");
    const rebuild = booleanField(body, "rebuild");
    if (del !== undefined && rebuild !== undefined && del !== rebuild)
      throw invalidInput("rebuild", "delete and rebuild protection must have the same value");
    state.updateServer(s.id, {
      ...(del !== undefined ? { deleteProtection: del } : {}),
      ...(rebuild !== undefined ? { rebuildProtection: rebuild } : {}),
    });
    return { action: ctx.startAction("change_protection", [{ id: s.id, type: "server" }]) };
  });
  serverAction("change_type", (s, body) => {
    const serverType = serverTypeName(body.server_type);
    if (!serverType) throw invalidInput("server_type", "server type not found");
    if (booleanField(body, "upgrade_disk") === undefined) throw invalidInput("upgrade_disk", "Missing data for required field.");
    requireStopped(s);
    if (serverTypeArchitecture(serverType) !== serverTypeArchitecture(s.serverType))
      throw new HcloudError(412, "invalid_server_type", `server type ${serverType} has another architecture than ${s.serverType}`);
    if (soldOutIn(ctx.soldOut, serverType, s.location))
      throw new HcloudError(412, "resource_unavailable", `server type ${serverType} is unavailable in ${s.location}`);
    state.updateServer(s.id, { serverType });
    return transition(s, "change_server_type", "migrating", "off");
  });
  serverAction("rebuild", (s, body) => {
    if (s.rebuildProtection) throw new HcloudError(403, "protected", `server ${s.id} is rebuild protected`);
    const image = bootImage(state, body.image, serverTypeArchitecture(s.serverType));
    if (!image) throw invalidInput("image", "image not found");
    if (body.user_data !== undefined && typeof body.user_data !== "string") throw invalidInput("user_data", "must be a string");
    state.updateServer(s.id, { image: image.name, ...(typeof body.user_data === "string" ? { userData: body.user_data } : {}) });
    return { ...transition(s, "rebuild_server", "rebuilding", "running"), root_password: null };
  });
  serverAction("create_image", (s, body) => {
    const image = takeSnapshot(state, s, serverTypeArchitecture(s.serverType), body);
    return {
      image: snapshotJson(image),
      action: ctx.startAction("create_image", [
        { id: s.id, type: "server" },
        { id: image.id, type: "image" },
      ]),
    };
  });
  serverAction("attach_to_network", (s, body) => {
    const network = idField(body, "network");
    if (s.privateNets.some((p) => p.network === network))
      throw new HcloudError(412, "server_already_attached", `server ${s.id} is already attached to network ${network}`);
    const attached = attachment(ctx, s, network, s.privateNets.length, { ip: body.ip, aliasIps: body.alias_ips });
    // The machine sees the hot-plugged NIC once the action is done and the guest brought it up.
    const upAt = Date.now() + ctx.actionMs + ctx.privateNicDelayMs;
    state.updateServer(s.id, { privateNets: [...s.privateNets, attached], nicsUpAt: { ...s.nicsUpAt, [network]: upAt } });
    return {
      action: ctx.startAction("attach_to_network", [
        { id: s.id, type: "server" },
        { id: network, type: "network" },
      ]),
    };
  });
  serverAction("change_alias_ips", (s, body) => {
    const network = idField(body, "network");
    const current = s.privateNets.find((p) => p.network === network);
    if (!current) throw new HcloudError(404, "not_found", `server ${s.id} is not attached to network ${network}`);
    const changed = attachment(ctx, s, network, 0, { aliasIps: body.alias_ips ?? [], keepIp: current.ip });
    state.updateServer(s.id, {
      privateNets: s.privateNets.map((p) => (p.network === network ? { ...p, alias_ips: changed.alias_ips } : p)),
    });
    return {
      action: ctx.startAction("change_alias_ips", [
        { id: s.id, type: "server" },
        { id: network, type: "network" },
      ]),
    };
  });
  serverAction("detach_from_network", (s, body) => {
    const network = idField(body, "network");
    if (!s.privateNets.some((p) => p.network === network))
      throw new HcloudError(404, "not_found", `server ${s.id} is not attached to network ${network}`);
    const { [network]: _detached, ...nicsUpAt } = s.nicsUpAt ?? {};
    state.updateServer(s.id, { privateNets: s.privateNets.filter((p) => p.network !== network), nicsUpAt });
    return {
      action: ctx.startAction("detach_from_network", [
        { id: s.id, type: "server" },
        { id: network, type: "network" },
      ]),
    };
  });
  serverAction("add_to_placement_group", (s, body) => {
    const group = idField(body, "placement_group");
    if (s.placementGroup !== null)
      throw new HcloudError(412, "server_already_added", `server ${s.id} is already in placement group ${s.placementGroup}`);
    requireStopped(s);
    checkPlacementRoom(group);
    state.updateServer(s.id, { placementGroup: group });
    return {
      action: ctx.startAction("add_to_placement_group", [
        { id: s.id, type: "server" },
        { id: group, type: "placement_group" },
      ]),
    };
  });
  serverAction("remove_from_placement_group", (s) => {
    if (s.placementGroup === null) throw new HcloudError(404, "not_found", `server ${s.id} is in no placement group`);
    const group = s.placementGroup;
    state.updateServer(s.id, { placementGroup: null });
    return {
      action: ctx.startAction("remove_from_placement_group", [
        { id: s.id, type: "server" },
        { id: group, type: "placement_group" },
      ]),
    };
  });
}
