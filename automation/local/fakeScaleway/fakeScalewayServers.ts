/**
 * The fake Scaleway API's Elastic Metal servers (`/baremetal/v1/zones/{zone}/servers`): create
 * (offer, install with OS, hostname and SSH key ids, options, cloud-init user data where the offer
 * has the `cloud-init` tag), get, list (name, tags, status filters, pages), update, delete, reboot,
 * install, add and remove an option; and their private networks on both paths the SDK has
 * (`/baremetal/v1/...` and `/baremetal/v3/...`, the latter with IPAM IP ids, which the provider uses).
 *
 * Progress follows what Scaleway answered terraform-provider-scaleway's recorded tests
 * (internal/services/baremetal/testdata/server-with-ipam-private-network.cassette.yaml): an order
 * is `delivering`, then `ready` while its install goes `to_install` -> `installing` -> `completed`
 * (NODEFLEET_SIM_SCW_INSTALL_MS), pinging once installing; an option is `option_status_enabling`
 * then `option_status_enable`; an attachment is `attaching` then `attached`, its VLAN tag reported
 * from the start unless NODEFLEET_SIM_SCW_VLAN_DELAY_MS holds it back after `attached`.
 */
import { createHash, randomUUID } from "node:crypto";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { AddressPool } from "../../simulated/addressPool";
import { ELASTIC_METAL_OPTIONS, ELASTIC_METAL_OSES, PRIVATE_NETWORK_OPTION_ID, offerById, offerRunsCloudInit } from "./fakeScalewayCatalog";
import { ELASTIC_METAL_ZONES } from "../../../components/scaleway/elasticMetalZones";
import {
  type FakeScalewayContext,
  ScalewayError,
  bodyOf,
  invalidArgument,
  isUuid,
  notFound,
  ordered,
  page,
  preconditionFailed,
  queryValues,
  stringField,
  stringListField,
  transientState,
  uuidField,
  uuidParam,
  zoneParam,
} from "./fakeScalewayContext";
import { machineAddress } from "./fakeScalewayMachines";
import { bookAddress } from "./fakeScalewayNetworks";
import type { FakeEmServer, FakeServerPrivateNetwork } from "./fakeScalewayState";

/** A stable UUID derived from a seed (the ids of a server's public IPs). */
function derivedUuid(seed: string): string {
  const h = createHash("sha256").update(seed).digest("hex");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** A locally administered MAC address per attachment. */
function macAddress(seed: string): string {
  const h = createHash("sha256").update(seed).digest();
  return [0x02, h[0]!, h[1]!, h[2]!, h[3]!, h[4]!].map((b) => b.toString(16).padStart(2, "0").toUpperCase()).join(":");
}

/** A VLAN tag of the range Scaleway hands out (the recorded one was 3068), stable per attachment. */
function vlanOf(seed: string): number {
  return 2 + (createHash("sha256").update(seed).digest().readUInt16BE(0) % 4093);
}

type Phase = "delivering" | "starting" | "ready";

function phase(server: FakeEmServer, now: number): Phase {
  if (now < server.deliveredAt) return "delivering";
  if (server.rebootingUntil !== undefined && now < server.rebootingUntil) return "starting";
  return "ready";
}

function installStatus(server: FakeEmServer, now: number): string | undefined {
  if (!server.install) return undefined;
  if (now < server.install.startsAt) return "to_install";
  return now < server.install.endsAt ? "installing" : "completed";
}

export function registerServers(app: FastifyInstance, ctx: FakeScalewayContext): void {
  const { state } = ctx;
  const base = "/baremetal/v1/zones/:zone/servers";

  const serverJson = (s: FakeEmServer) => {
    const now = Date.now();
    const status = phase(s, now);
    const install = installStatus(s, now);
    const up = install === "installing" || install === "completed";
    const domain = up ? `${s.id}.${s.zone}.baremetal.scw.cloud` : "";
    const ip = (address: string, version: string) => ({
      id: derivedUuid(`${s.id}/${version}`),
      address,
      reverse: `${s.id}.${s.zone}.baremetal.scw.cloud`,
      version,
      reverse_status: "active",
      reverse_status_message: "",
    });
    return {
      id: s.id,
      organization_id: ctx.projectId,
      project_id: ctx.projectId,
      name: s.name,
      description: s.description,
      updated_at: s.updatedAt,
      created_at: s.createdAt,
      status,
      offer_id: s.offerId,
      offer_name: offerById(s.offerId)?.[0] ?? "",
      tags: s.tags,
      ips: [ip(s.ipv4, "IPv4"), ip(s.ipv6, "IPv6")],
      domain,
      boot_type: "normal",
      zone: s.zone,
      install: s.install
        ? {
            os_id: s.install.osId,
            hostname: s.install.hostname,
            ssh_key_ids: s.install.sshKeyIds,
            status: install,
            user: s.install.user,
            service_user: "",
            service_url: "",
            partitioning_schema: null,
          }
        : null,
      ping_status: up ? "ping_status_up" : "ping_status_unknown",
      options: s.options.map((o) => {
        const option = ELASTIC_METAL_OPTIONS.find((x) => x.id === o.id)!;
        return {
          id: o.id,
          name: option.name,
          status: now < o.enabledAt ? "option_status_enabling" : "option_status_enable",
          manageable: true,
          expires_at: null,
          ...option.kind,
        };
      }),
      rescue_server: null,
      protected: s.protected,
      user_data: s.userData,
    };
  };

  const find = (request: FastifyRequest) => {
    const zone = zoneParam(request);
    const id = uuidParam(request, "server_id");
    const server = state.get("servers", id);
    if (!server || server.zone !== zone) throw notFound("baremetal_server", id);
    return server;
  };
  /** Refused while the server is delivering, rebooting or installing. */
  const requireIdle = (server: FakeEmServer) => {
    const now = Date.now();
    const current = phase(server, now);
    if (current !== "ready") throw transientState("baremetal_server", server.id, current);
    if (installStatus(server, now) === "installing") throw transientState("baremetal_server", server.id, "installing");
  };
  /** An install from a body (create's `install` or the install call). */
  const installOf = (body: Record<string, unknown>, prefix: string, startsAt: number): NonNullable<FakeEmServer["install"]> => {
    const osId = uuidField(body, "os_id");
    const os = ELASTIC_METAL_OSES.find((o) => o.id === osId);
    if (!os) throw invalidArgument(`${prefix}os_id`, "constraint", `OS ${osId} is not offered (GET /baremetal/v1/zones/{zone}/os)`);
    const sshKeyIds = stringListField(body, "ssh_key_ids") ?? [];
    if (sshKeyIds.length === 0)
      throw invalidArgument(`${prefix}ssh_key_ids`, "required", `${os.name} ${os.version} requires at least one SSH key`);
    const badKey = sshKeyIds.find((k) => !isUuid(k));
    if (badKey !== undefined) throw invalidArgument(`${prefix}ssh_key_ids`, "format", `SSH key id ${JSON.stringify(badKey)} is not a UUID`);
    const hostname = stringField(body, "hostname") ?? "";
    if (hostname !== "" && !/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/i.test(hostname))
      throw invalidArgument(`${prefix}hostname`, "format", "must be a valid hostname");
    return { osId, hostname, sshKeyIds, user: stringField(body, "user") ?? os.user, startsAt, endsAt: startsAt + ctx.installMs };
  };

  app.get(base, async (request) => {
    const zone = zoneParam(request);
    const [name] = queryValues(request, "name");
    const tags = queryValues(request, "tags");
    const statuses = queryValues(request, "status");
    const [optionId] = queryValues(request, "option_id");
    const now = Date.now();
    const servers = state
      .all("servers")
      .filter((s) => s.zone === zone)
      // Scaleway matches names by substring; callers that want one name compare it themselves.
      .filter((s) => name === undefined || s.name.includes(name))
      // Every given tag must be on the server.
      .filter((s) => tags.every((t) => s.tags.includes(t)))
      .filter((s) => statuses.length === 0 || statuses.includes(phase(s, now)))
      .filter((s) => optionId === undefined || s.options.some((o) => o.id === optionId));
    return page(request, "servers", ordered(request, servers), serverJson);
  });
  app.get(`${base}/:server_id`, async (request) => serverJson(find(request)));

  app.post(base, async (request) => {
    const zone = zoneParam(request);
    const body = bodyOf(request);
    const offerId = uuidField(body, "offer_id");
    const offer = offerById(offerId);
    if (!offer) throw invalidArgument("offer_id", "constraint", `offer ${offerId} is not sold (GET /baremetal/v1/zones/{zone}/offers)`);
    const name = stringField(body, "name");
    if (!name) throw invalidArgument("name", "required", "is required");
    const description = stringField(body, "description") ?? "";
    if (description.length > 255) throw invalidArgument("description", "constraint", "must be at most 255 characters");
    const tags = stringListField(body, "tags") ?? [];
    const optionIds = stringListField(body, "option_ids") ?? [];
    const unknownOption = optionIds.find((id) => !ELASTIC_METAL_OPTIONS.some((o) => o.id === id));
    if (unknownOption !== undefined) throw invalidArgument("option_ids", "constraint", `option ${unknownOption} is not offered`);
    const userData = stringField(body, "user_data") ?? null;
    if (userData !== null && !/^[A-Za-z0-9+/]*={0,2}$/.test(userData)) throw invalidArgument("user_data", "format", "must be base64");
    // As Scaleway answered terraform-provider-scaleway's server-cloud-init-not-compatible-offer test.
    if (userData !== null && !offerRunsCloudInit(offer[1]))
      throw new ScalewayError(503, { message: "cloud-init is not supported on this offer" });
    if (ctx.outOfStock.has(offer[0]))
      throw new ScalewayError(409, { message: `offer ${offer[0]} is out of stock`, type: "out_of_stock", resource: "baremetal_offer" });
    const now = Date.now();
    const deliveredAt = now + ctx.actionMs;
    const install =
      body.install === undefined || body.install === null
        ? null
        : installOf(body.install as Record<string, unknown>, "install.", deliveredAt);
    const id = randomUUID();
    const created = new Date(now).toISOString();
    const server = state.put("servers", {
      id,
      name,
      description,
      tags,
      zone,
      offerId,
      createdAt: created,
      updatedAt: created,
      deliveredAt,
      install,
      options: optionIds.map((o) => ({ id: o, enabledAt: deliveredAt })),
      protected: body.protected === true,
      userData,
      ipv4: ctx.machineAddresses
        ? machineAddress(
            state.all("servers").map((s) => s.ipv4),
            ctx.machineAddresses.block,
          )
        : new AddressPool(state.all("servers").map((s) => s.ipv4)).public(`scw/${id}`),
      ipv6: `2001:db8:5c:${parseInt(id.slice(0, 4), 16).toString(16)}::1`,
    });
    return serverJson(server);
  });

  app.patch(`${base}/:server_id`, async (request) => {
    const server = find(request);
    const body = bodyOf(request);
    const name = stringField(body, "name");
    const description = stringField(body, "description");
    const tags = stringListField(body, "tags");
    const userData = stringField(body, "user_data");
    if (userData !== undefined && !offerRunsCloudInit(offerById(server.offerId)![1]))
      throw new ScalewayError(503, { message: "cloud-init is not supported on this offer" });
    return serverJson(
      state.put("servers", {
        ...server,
        ...(name ? { name } : {}),
        ...(description !== undefined ? { description } : {}),
        ...(tags ? { tags } : {}),
        ...(userData !== undefined ? { userData } : {}),
        ...(typeof body.protected === "boolean" ? { protected: body.protected } : {}),
        updatedAt: new Date().toISOString(),
      }),
    );
  });

  app.delete(`${base}/:server_id`, async (request) => {
    const server = find(request);
    if (server.protected) throw preconditionFailed("attribute_must_be_set", `server ${server.id} is protected; unset protected first`);
    for (const attachment of state.all("serverPrivateNetworks").filter((a) => a.serverId === server.id)) detach(ctx, attachment);
    state.remove("servers", server.id);
    return { ...serverJson(server), status: "deleting" };
  });

  app.post(`${base}/:server_id/install`, async (request) => {
    const server = find(request);
    requireIdle(server);
    const install = installOf(bodyOf(request), "", Date.now());
    return serverJson(state.put("servers", { ...server, install, updatedAt: new Date().toISOString() }));
  });

  app.post(`${base}/:server_id/reboot`, async (request) => {
    const server = find(request);
    requireIdle(server);
    const bootType = stringField(bodyOf(request), "boot_type") ?? "normal";
    if (!["normal", "rescue", "unknown_boot_type"].includes(bootType))
      throw invalidArgument("boot_type", "constraint", "must be one of normal, rescue");
    return serverJson(state.put("servers", { ...server, rebootingUntil: Date.now() + ctx.actionMs, updatedAt: new Date().toISOString() }));
  });

  app.post(`${base}/:server_id/options/:option_id`, async (request) => {
    const server = find(request);
    const optionId = uuidParam(request, "option_id");
    if (!ELASTIC_METAL_OPTIONS.some((o) => o.id === optionId)) throw notFound("baremetal_option", optionId);
    if (server.options.some((o) => o.id === optionId))
      throw preconditionFailed("unknown_precondition", `option ${optionId} is already enabled on server ${server.id}`);
    const options = [...server.options, { id: optionId, enabledAt: Date.now() + ctx.actionMs }];
    return serverJson(state.put("servers", { ...server, options, updatedAt: new Date().toISOString() }));
  });
  app.delete(`${base}/:server_id/options/:option_id`, async (request) => {
    const server = find(request);
    const optionId = uuidParam(request, "option_id");
    if (!server.options.some((o) => o.id === optionId)) throw notFound("baremetal_option", optionId);
    if (optionId === PRIVATE_NETWORK_OPTION_ID && state.all("serverPrivateNetworks").some((a) => a.serverId === server.id))
      throw preconditionFailed("resource_still_in_use", `server ${server.id} is still attached to private networks`);
    const options = server.options.filter((o) => o.id !== optionId);
    return serverJson(state.put("servers", { ...server, options, updatedAt: new Date().toISOString() }));
  });

  registerServerPrivateNetworks(app, ctx, find);
}

/** `/baremetal/v{1,3}/zones/{zone}/servers/{id}/private-networks` and `/server-private-networks`. */
function registerServerPrivateNetworks(
  app: FastifyInstance,
  ctx: FakeScalewayContext,
  findServer: (request: FastifyRequest) => FakeEmServer,
): void {
  const { state } = ctx;
  const attachmentJson = (a: FakeServerPrivateNetwork, withIpam: boolean) => {
    const now = Date.now();
    return {
      id: a.id,
      project_id: ctx.projectId,
      server_id: a.serverId,
      private_network_id: a.privateNetworkId,
      vlan: now < a.vlanAt ? null : a.vlan,
      status: now < a.attachedAt ? "attaching" : "attached",
      created_at: a.createdAt,
      updated_at: a.createdAt,
      ...(withIpam ? { ipam_ip_ids: a.ipamIpIds } : {}),
    };
  };

  /** Attaches `server` to a private network with the given IPAM IPs (none: one booked for it). */
  const attach = (server: FakeEmServer, privateNetworkId: string, ipamIpIds: string[] | undefined): FakeServerPrivateNetwork => {
    const region = ELASTIC_METAL_ZONES[server.zone];
    const pn = state.get("privateNetworks", privateNetworkId);
    if (!pn || pn.region !== region) throw notFound("private_network", privateNetworkId);
    if (!server.options.some((o) => o.id === PRIVATE_NETWORK_OPTION_ID))
      throw preconditionFailed(
        "attribute_must_be_set",
        `server ${server.id} needs the Private Network option (${PRIVATE_NETWORK_OPTION_ID})`,
      );
    const id = randomUUID();
    const given = ipamIpIds ?? [];
    for (const ipId of given) {
      const ip = state.get("ips", ipId);
      if (!ip) throw notFound("ip", ipId);
      if (ip.privateNetworkId !== pn.id)
        throw invalidArgument("ipam_ip_ids", "constraint", `IP ${ipId} is not in private network ${pn.id}`);
      if (ip.resource) throw preconditionFailed("resource_still_in_use", `IP ${ipId} is attached to ${ip.resource.type} ${ip.resource.id}`);
    }
    const booked = given.length === 0 ? [bookAddress(ctx, pn, undefined, []).id] : [];
    const mac = macAddress(id);
    const now = Date.now();
    for (const ipId of [...given, ...booked]) {
      const ip = state.get("ips", ipId)!;
      state.put("ips", {
        ...ip,
        resource: { type: "baremetal_private_nic", id, macAddress: mac, name: server.name },
        updatedAt: new Date(now).toISOString(),
      });
    }
    const attachedAt = now + ctx.actionMs;
    return state.put("serverPrivateNetworks", {
      id,
      serverId: server.id,
      privateNetworkId: pn.id,
      zone: server.zone,
      ipamIpIds: [...given, ...booked],
      bookedIpIds: booked,
      vlan: vlanOf(`${server.id}/${pn.id}`),
      macAddress: mac,
      createdAt: new Date(now).toISOString(),
      attachedAt,
      // The VLAN is reported from the start, or that long after `attached` (NODEFLEET_SIM_SCW_VLAN_DELAY_MS).
      vlanAt: ctx.vlanDelayMs > 0 ? attachedAt + ctx.vlanDelayMs : now,
    });
  };
  const ipamIdsOf = (value: unknown, field: string): string[] | undefined => {
    if (value === undefined || value === null) return undefined;
    if (!Array.isArray(value) || value.some((v) => typeof v !== "string" || !isUuid(v)))
      throw invalidArgument(field, "format", "must be a list of IPAM IP UUIDs");
    return value as string[];
  };

  for (const version of ["v1", "v3"] as const) {
    const withIpam = version === "v3";
    const base = `/baremetal/${version}/zones/:zone/servers/:server_id/private-networks`;
    app.post(base, async (request) => {
      const server = findServer(request);
      const body = bodyOf(request);
      const pnId = uuidField(body, "private_network_id");
      if (state.all("serverPrivateNetworks").some((a) => a.serverId === server.id && a.privateNetworkId === pnId))
        throw preconditionFailed("unknown_precondition", `server ${server.id} is already attached to private network ${pnId}`);
      return attachmentJson(attach(server, pnId, withIpam ? ipamIdsOf(body.ipam_ip_ids, "ipam_ip_ids") : undefined), withIpam);
    });
    app.put(base, async (request) => {
      const server = findServer(request);
      const body = bodyOf(request);
      // v1 sends the ids; v3 a map of private network id -> IPAM IP ids.
      const wanted = new Map<string, string[] | undefined>();
      if (withIpam) {
        const map = body.per_private_network_ipam_ip_ids;
        if (map === null || typeof map !== "object" || Array.isArray(map))
          throw invalidArgument("per_private_network_ipam_ip_ids", "required", "must map private network ids to IPAM IP ids");
        for (const [pnId, ids] of Object.entries(map as Record<string, unknown>)) {
          if (!isUuid(pnId)) throw invalidArgument("per_private_network_ipam_ip_ids", "format", `key ${pnId} is not a UUID`);
          const list = ipamIdsOf(ids, `per_private_network_ipam_ip_ids.${pnId}`);
          wanted.set(pnId, list && list.length > 0 ? list : undefined);
        }
      } else for (const pnId of stringListField(body, "private_network_ids") ?? []) wanted.set(pnId, undefined);
      const current = state.all("serverPrivateNetworks").filter((a) => a.serverId === server.id);
      for (const a of current) if (!wanted.has(a.privateNetworkId)) detach(ctx, a);
      const result = [...wanted].map(
        ([pnId, ids]) =>
          current.find((a) => a.privateNetworkId === pnId && state.get("serverPrivateNetworks", a.id)) ?? attach(server, pnId, ids),
      );
      return { server_private_networks: result.map((a) => attachmentJson(a, withIpam)) };
    });
    app.delete(`${base}/:private_network_id`, async (request, reply) => {
      const server = findServer(request);
      const pnId = uuidParam(request, "private_network_id");
      const attachment = state.all("serverPrivateNetworks").find((a) => a.serverId === server.id && a.privateNetworkId === pnId);
      if (!attachment) throw notFound("server_private_network", pnId);
      detach(ctx, attachment);
      reply.status(204);
      return null;
    });
    app.get(`/baremetal/${version}/zones/:zone/server-private-networks`, async (request) => {
      const zone = zoneParam(request);
      const [serverId] = queryValues(request, "server_id");
      const [pnId] = queryValues(request, "private_network_id");
      const ipIds = queryValues(request, "ipam_ip_ids");
      const list = state
        .all("serverPrivateNetworks")
        .filter((a) => a.zone === zone)
        .filter((a) => serverId === undefined || a.serverId === serverId)
        .filter((a) => pnId === undefined || a.privateNetworkId === pnId)
        .filter((a) => ipIds.length === 0 || a.ipamIpIds.some((i) => ipIds.includes(i)));
      return page(request, "server_private_networks", ordered(request, list), (a) => attachmentJson(a, withIpam));
    });
  }
}

/** Ends an attachment: the addresses it booked itself are released, the user's are freed. */
function detach(ctx: FakeScalewayContext, attachment: FakeServerPrivateNetwork): void {
  for (const ipId of attachment.ipamIpIds) {
    const ip = ctx.state.get("ips", ipId);
    if (!ip) continue;
    if (attachment.bookedIpIds.includes(ipId)) ctx.state.remove("ips", ipId);
    else ctx.state.put("ips", { ...ip, resource: null, updatedAt: new Date().toISOString() });
  }
  ctx.state.remove("serverPrivateNetworks", attachment.id);
}
