/**
 * The fake Scaleway API's regional networking, as far as the Elastic Metal pool reaches it: VPC v2
 * (`/vpc/v2/regions/{region}/vpcs`, one default VPC a region, and `private-networks`: list with
 * name, tags and project filters, create with IPv4 subnets, get, update, delete) and IPAM v1
 * (`/ipam/v1/regions/{region}/ips`: book from a private network's subnet, at a chosen address or
 * the lowest free one, list with the provider's filters, get, update tags, release). Shapes as
 * scaleway-sdk-go's vpc/v2 and ipam/v1 types, checked by the sdkcheck Go module.
 */
import { createHash, randomUUID } from "node:crypto";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { cidrContainsAddress, hostAddress, lowestFreeHost, parseIpv4Cidr } from "../../../components/shared/cidr";
import {
  type FakeScalewayContext,
  ScalewayError,
  bodyOf,
  invalidArgument,
  notFound,
  ordered,
  page,
  preconditionFailed,
  queryValues,
  regionParam,
  stringField,
  stringListField,
  uuidParam,
} from "./fakeScalewayContext";
import type { FakeIpamIp, FakePrivateNetwork, FakeVpc } from "./fakeScalewayState";

/** A private network's IPv6 /64 (Scaleway gives every private network one beside its IPv4 subnets). */
function ipv6Subnet(id: string): string {
  const h = createHash("sha256").update(id).digest("hex");
  return `fd${h.slice(0, 2)}:${h.slice(2, 6)}:${h.slice(6, 10)}:${h.slice(10, 14)}::/64`;
}

/** The region's default VPC, created on first use as on a fresh Scaleway project. */
function defaultVpc(ctx: FakeScalewayContext, region: string): FakeVpc {
  const existing = ctx.state.all("vpcs").find((v) => v.region === region && v.isDefault);
  if (existing) return existing;
  return ctx.state.put("vpcs", {
    id: randomUUID(),
    name: "default",
    region,
    tags: [],
    isDefault: true,
    createdAt: new Date().toISOString(),
  });
}

/** Whether a record's tags match the `tags` filter (VPC and IPAM: "one or more matching tags"). */
function anyTag(request: FastifyRequest, tags: readonly string[]): boolean {
  const wanted = queryValues(request, "tags");
  return wanted.length === 0 || wanted.some((t) => tags.includes(t));
}

function privateNetworkJson(ctx: FakeScalewayContext, pn: FakePrivateNetwork): Record<string, unknown> {
  const subnet = (s: { id: string; subnet: string; createdAt: string }) => ({
    id: s.id,
    created_at: s.createdAt,
    updated_at: s.createdAt,
    subnet: s.subnet,
    project_id: ctx.projectId,
    private_network_id: pn.id,
    vpc_id: pn.vpcId,
    region: pn.region,
  });
  return {
    id: pn.id,
    name: pn.name,
    organization_id: ctx.projectId,
    project_id: ctx.projectId,
    region: pn.region,
    tags: pn.tags,
    created_at: pn.createdAt,
    updated_at: pn.updatedAt,
    subnets: [
      ...pn.subnets.map(subnet),
      subnet({ id: pn.id.replace(/^.{8}/, "00000006"), subnet: ipv6Subnet(pn.id), createdAt: pn.createdAt }),
    ],
    vpc_id: pn.vpcId,
    dhcp_enabled: true,
    default_route_propagation_enabled: pn.defaultRoutePropagationEnabled,
    has_object_storage_private_access: false,
  };
}

function vpcJson(ctx: FakeScalewayContext, vpc: FakeVpc): Record<string, unknown> {
  return {
    id: vpc.id,
    name: vpc.name,
    organization_id: ctx.projectId,
    project_id: ctx.projectId,
    region: vpc.region,
    tags: vpc.tags,
    is_default: vpc.isDefault,
    created_at: vpc.createdAt,
    updated_at: vpc.createdAt,
    private_network_count: ctx.state.all("privateNetworks").filter((p) => p.vpcId === vpc.id).length,
    routing_enabled: true,
    custom_routes_propagation_enabled: true,
    transitivity_enabled: false,
    object_storage_private_access_enabled: false,
  };
}

function ipJson(ip: FakeIpamIp, projectId: string): Record<string, unknown> {
  return {
    id: ip.id,
    address: ip.address,
    project_id: projectId,
    is_ipv6: false,
    created_at: ip.createdAt,
    updated_at: ip.updatedAt,
    source: { subnet_id: ip.subnetId },
    resource: ip.resource
      ? { type: ip.resource.type, id: ip.resource.id, mac_address: ip.resource.macAddress, name: ip.resource.name }
      : null,
    tags: ip.tags,
    reverses: [],
    region: ip.region,
    zone: null,
  };
}

/**
 * Books an address of the private network's first IPv4 subnet: `requested` when given (refused
 * outside the subnet or when taken), else the lowest free host after the gateway (the subnet's
 * first host, which Scaleway keeps for itself).
 */
export function bookAddress(ctx: FakeScalewayContext, pn: FakePrivateNetwork, requested: string | undefined, tags: string[]): FakeIpamIp {
  const subnet = pn.subnets[0];
  if (!subnet) throw preconditionFailed("attribute_must_be_set", `private network ${pn.id} has no IPv4 subnet`);
  const range = parseIpv4Cidr(subnet.subnet)!;
  const taken = new Set(
    ctx.state
      .all("ips")
      .filter((i) => i.subnetId === subnet.id)
      .map((i) => i.address.split("/")[0]!),
  );
  taken.add(hostAddress(range, 1));
  let address = requested;
  if (address !== undefined) {
    if (!cidrContainsAddress(range, address)) throw invalidArgument("address", "constraint", `must lie within ${subnet.subnet}`);
    if (taken.has(address))
      throw new ScalewayError(409, { message: `address ${address} is already reserved`, type: "invalid_request_error", resource: "ip" });
  }
  address ??= lowestFreeHost(range, taken);
  if (!address) throw new ScalewayError(409, { message: `no address left in ${subnet.subnet}`, type: "out_of_stock", resource: "ip" });
  const now = new Date().toISOString();
  return ctx.state.put("ips", {
    id: randomUUID(),
    region: pn.region,
    address: `${address}/${range.prefix}`,
    subnetId: subnet.id,
    privateNetworkId: pn.id,
    tags,
    resource: null,
    createdAt: now,
    updatedAt: now,
  });
}

export function registerNetworks(app: FastifyInstance, ctx: FakeScalewayContext): void {
  const { state } = ctx;
  const vpcs = "/vpc/v2/regions/:region/vpcs";
  const pns = "/vpc/v2/regions/:region/private-networks";
  const findPn = (request: FastifyRequest) => {
    const region = regionParam(request);
    const id = uuidParam(request, "id");
    const pn = state.get("privateNetworks", id);
    if (!pn || pn.region !== region) throw notFound("private_network", id);
    return pn;
  };

  app.get(vpcs, async (request) => {
    const region = regionParam(request);
    defaultVpc(ctx, region);
    const list = ordered(
      request,
      state.all("vpcs").filter((v) => v.region === region),
    );
    return page(request, "vpcs", list, (v) => vpcJson(ctx, v));
  });
  app.get(`${vpcs}/:id`, async (request) => {
    const region = regionParam(request);
    const id = uuidParam(request, "id");
    const vpc = state.get("vpcs", id);
    if (!vpc || vpc.region !== region) throw notFound("vpc", id);
    return vpcJson(ctx, vpc);
  });

  app.get(pns, async (request) => {
    const region = regionParam(request);
    const [name] = queryValues(request, "name");
    const ids = queryValues(request, "private_network_ids");
    const [vpcId] = queryValues(request, "vpc_id");
    const list = state
      .all("privateNetworks")
      .filter((p) => p.region === region)
      // "Only Private Networks with names containing this string" (vpc/v2 ListPrivateNetworksRequest.Name).
      .filter((p) => name === undefined || p.name.includes(name))
      .filter((p) => anyTag(request, p.tags))
      .filter((p) => ids.length === 0 || ids.includes(p.id))
      .filter((p) => vpcId === undefined || p.vpcId === vpcId);
    return page(request, "private_networks", ordered(request, list), (p) => privateNetworkJson(ctx, p));
  });
  app.post(pns, async (request) => {
    const region = regionParam(request);
    const body = bodyOf(request);
    const name = stringField(body, "name") || `pn-${randomUUID().slice(0, 8)}`;
    const tags = stringListField(body, "tags") ?? [];
    const vpcId = stringField(body, "vpc_id");
    if (vpcId !== undefined && !state.get("vpcs", vpcId)) throw notFound("vpc", vpcId);
    const subnets = stringListField(body, "subnets") ?? [];
    const ipv4 = subnets.filter((s) => !s.includes(":"));
    for (const [i, s] of ipv4.entries()) {
      const range = parseIpv4Cidr(s);
      if (!range || range.prefix < 8 || range.prefix > 29)
        throw invalidArgument(`subnets[${i}]`, "format", "must be an IPv4 network in CIDR notation between /8 and /29");
    }
    const id = randomUUID();
    const now = new Date().toISOString();
    // Without a subnet Scaleway picks one of 172.16.0.0/12; the fake numbers them by count.
    const chosen = ipv4.length > 0 ? ipv4 : [`172.16.${(state.all("privateNetworks").length * 4) % 256}.0/22`];
    return privateNetworkJson(
      ctx,
      state.put("privateNetworks", {
        id,
        name,
        region,
        tags,
        vpcId: vpcId ?? defaultVpc(ctx, region).id,
        subnets: chosen.map((subnet) => ({ id: randomUUID(), subnet, createdAt: now })),
        createdAt: now,
        updatedAt: now,
        defaultRoutePropagationEnabled: body.default_route_propagation_enabled === true,
      }),
    );
  });
  app.get(`${pns}/:id`, async (request) => privateNetworkJson(ctx, findPn(request)));
  app.patch(`${pns}/:id`, async (request) => {
    const pn = findPn(request);
    const body = bodyOf(request);
    const name = stringField(body, "name");
    const tags = stringListField(body, "tags");
    return privateNetworkJson(
      ctx,
      state.put("privateNetworks", {
        ...pn,
        ...(name ? { name } : {}),
        ...(tags ? { tags } : {}),
        ...(typeof body.default_route_propagation_enabled === "boolean"
          ? { defaultRoutePropagationEnabled: body.default_route_propagation_enabled }
          : {}),
        updatedAt: new Date().toISOString(),
      }),
    );
  });
  app.delete(`${pns}/:id`, async (request, reply) => {
    const pn = findPn(request);
    if (state.all("serverPrivateNetworks").some((a) => a.privateNetworkId === pn.id))
      throw preconditionFailed("resource_still_in_use", `servers are still attached to private network ${pn.id}`);
    if (state.all("ips").some((i) => i.privateNetworkId === pn.id))
      throw preconditionFailed("resource_still_in_use", `IPs are still reserved in private network ${pn.id}`);
    state.remove("privateNetworks", pn.id);
    reply.status(204);
    return null;
  });

  const ips = "/ipam/v1/regions/:region/ips";
  const findIp = (request: FastifyRequest) => {
    const region = regionParam(request);
    const id = uuidParam(request, "id");
    const ip = state.get("ips", id);
    if (!ip || ip.region !== region) throw notFound("ip", id);
    return ip;
  };
  app.post(ips, async (request) => {
    regionParam(request);
    const body = bodyOf(request);
    if (body.is_ipv6 === true) throw invalidArgument("is_ipv6", "constraint", "the fake books IPv4 addresses only");
    const source = (body.source ?? {}) as Record<string, unknown>;
    const pnId = stringField(source, "private_network_id");
    const subnetId = stringField(source, "subnet_id");
    const pn =
      pnId !== undefined
        ? state.get("privateNetworks", pnId)
        : state.all("privateNetworks").find((p) => p.subnets.some((s) => s.id === subnetId));
    if (pnId === undefined && subnetId === undefined)
      throw invalidArgument("source.private_network_id", "required", "the fake books from a private network (or one of its subnets)");
    if (!pn) throw notFound(pnId !== undefined ? "private_network" : "subnet", pnId ?? subnetId ?? "");
    const address = stringField(body, "address");
    if (address !== undefined && !parseIpv4Cidr(`${address}/32`)) throw invalidArgument("address", "format", "must be an IPv4 address");
    return ipJson(bookAddress(ctx, pn, address, stringListField(body, "tags") ?? []), ctx.projectId);
  });
  app.get(ips, async (request) => {
    const region = regionParam(request);
    const one = (name: string) => queryValues(request, name)[0];
    const many = (name: string) => queryValues(request, name);
    const [attached, isIpv6] = [one("attached"), one("is_ipv6")];
    const list = state
      .all("ips")
      .filter((i) => i.region === region)
      .filter((i) => one("private_network_id") === undefined || i.privateNetworkId === one("private_network_id"))
      .filter((i) => one("subnet_id") === undefined || i.subnetId === one("subnet_id"))
      .filter((i) => one("resource_id") === undefined || i.resource?.id === one("resource_id"))
      .filter((i) => many("resource_ids").length === 0 || many("resource_ids").includes(i.resource?.id ?? ""))
      .filter((i) => [one("resource_type")].filter((t) => t && t !== "unknown_type").every((t) => i.resource?.type === t))
      .filter((i) => many("resource_types").length === 0 || many("resource_types").includes(i.resource?.type ?? ""))
      .filter((i) => one("resource_name") === undefined || (i.resource?.name ?? "").includes(one("resource_name")!))
      .filter((i) => one("mac_address") === undefined || i.resource?.macAddress.toLowerCase() === one("mac_address")!.toLowerCase())
      .filter((i) => many("ip_ids").length === 0 || many("ip_ids").includes(i.id))
      .filter((i) => attached === undefined || (attached === "true") === (i.resource !== null))
      .filter(() => isIpv6 !== "true")
      .filter((i) => anyTag(request, i.tags));
    // IPAM lists newest first unless asked otherwise (ListIPsRequest.OrderBy defaults to created_at_desc).
    return page(request, "ips", ordered(request, list, "desc"), (i) => ipJson(i, ctx.projectId));
  });
  app.get(`${ips}/:id`, async (request) => ipJson(findIp(request), ctx.projectId));
  app.patch(`${ips}/:id`, async (request) => {
    const ip = findIp(request);
    const tags = stringListField(bodyOf(request), "tags");
    return ipJson(state.put("ips", { ...ip, ...(tags ? { tags } : {}), updatedAt: new Date().toISOString() }), ctx.projectId);
  });
  app.delete(`${ips}/:id`, async (request, reply) => {
    const ip = findIp(request);
    if (ip.resource)
      throw preconditionFailed(
        "resource_still_in_use",
        `IP ${ip.id} is attached to ${ip.resource.type} ${ip.resource.id}; detach it first`,
      );
    state.remove("ips", ip.id);
    reply.status(204);
    return null;
  });
}
