/**
 * The server-type catalog: the shipped JSON covers the example stack's types with sane figures,
 * live Hetzner data replaces it (three requests per refresh) and its availability reaches
 * `instance-types` and admission; offers include the primary IPv4 Hetzner bills with each server.
 */
import { strict as assert } from "node:assert";
import { CatalogSource } from "../../../automation/catalog/catalogSource";
import { OfferingAvailability } from "../../../automation/catalog/offeringAvailability";
import { HcloudClient } from "../../../automation/hcloud/hcloudClient";
import { shippedCatalog } from "../../../automation/catalog/serverTypes";
import { configValues, projectRoot, readStackConfigFile } from "../../../automation/stackConfigFile";
import { parseFleetSpec } from "../../../components/fleet/fleetSpec";
import { NodefleetApiError } from "../../../automation/client/nodefleetClient";
import { eventually, startTestApi } from "../../support/apiHarness";

/** One server type as Hetzner's GET /server_types lists it: the live data the tests serve. */
const CPX21_IN_HEL1 = {
  id: 1,
  name: "cpx21",
  cores: 3,
  memory: 4,
  disk: 80,
  cpu_type: "shared",
  architecture: "x86",
  deprecated: false,
  prices: [{ location: "hel1", price_hourly: { net: "0.0100" } }],
};

describe("server-type catalog", () => {
  it("ships every type the example stack uses and the common cx/cpx/cax/ccx types, priced per location", () => {
    const catalog = shippedCatalog();
    const names = new Set(catalog.serverTypes.map((t) => t.name));
    const spec = parseFleetSpec(configValues(readStackConfigFile("example", projectRoot()).config));
    for (const pool of spec.pools) if (pool.provider === "hcloud") for (const t of pool.serverTypes) assert.ok(names.has(t), t);
    for (const t of ["cx22", "cpx11", "cpx51", "cax11", "cax41", "ccx13", "ccx63"]) assert.ok(names.has(t), t);
    for (const t of catalog.serverTypes) {
      assert.ok(t.cores > 0 && t.memoryGiB > 0 && t.diskGB > 0, t.name);
      assert.ok(t.prices.length > 0, t.name);
      for (const p of t.prices) assert.ok(p.priceHourlyNet > 0 && p.priceHourlyNet < 1, `${t.name}@${p.location}`);
      if (t.name.startsWith("cax")) assert.equal(t.architecture, "arm");
    }
  });

  it("replaces the shipped catalog with live data in three requests, and takes the provider's sold-out offerings", async () => {
    const requests: string[] = [];
    const fetchStub = (async (url: string) => {
      requests.push(new URL(url).pathname);
      const body = url.includes("/server_types")
        ? {
            server_types: [CPX21_IN_HEL1],
          }
        : url.includes("/pricing")
          ? { pricing: { primary_ips: [{ type: "ipv4", prices: [{ location: "hel1", price_hourly: { net: "0.0008" } }] }] } }
          : { datacenters: [{ location: { name: "hel1" }, server_types: { supported: [1], available: [] } }] };
      return new Response(JSON.stringify({ ...body, meta: { pagination: { next_page: null } } }), { status: 200 });
    }) as unknown as typeof fetch;
    let counted = 0;
    const availability = new OfferingAvailability();
    const source = new CatalogSource({
      client: new HcloudClient({ token: "t", fetch: fetchStub, onRequest: () => counted++ }),
      availability,
    });
    await source.refresh();
    assert.equal(counted, 3);
    assert.deepEqual(
      source.current().serverTypes.map((t) => [t.name, t.prices[0]!.priceHourlyNet]),
      [["cpx21", 0.01]],
    );
    assert.equal(availability.isAvailable("cpx21", "hel1"), false);

    const api = await startTestApi({ catalog: source, availability });
    try {
      const types = await api.client.instanceTypes();
      const cpx21 = types.find((t) => t.name === "cpx21")!;
      // The server's 0.0100 and the primary IPv4's 0.0008 (GET /pricing): a pool with public IPv4 pays both.
      assert.equal(cpx21.offerings[0]!.price, 0.0108);
      assert.equal(cpx21.offerings[0]!.available, false);
      assert.ok(!types.some((t) => t.name === "cpx31"), "types the live catalog does not have are left out, not invented");
      await assert.rejects(
        api.client.createNode({ uniqueID: "x", pool: "hel1-burst" }),
        (e: unknown) => e instanceof NodefleetApiError && e.code === "InsufficientCapacity",
      );
    } finally {
      await api.close();
    }
  });

  it("keeps deprecated types, every offering unavailable, so nodes of theirs do not look drifted to Karpenter", async () => {
    const type = (id: number, name: string, deprecated: boolean) => ({
      id,
      name,
      cores: 4,
      memory: 8,
      disk: 160,
      cpu_type: "shared",
      architecture: "x86",
      deprecated,
      prices: [{ location: "hel1", price_hourly: { net: "0.0200" } }],
    });
    const fetchStub = (async (url: string) => {
      const body = url.includes("/server_types")
        ? { server_types: [type(1, "cpx21", false), type(2, "cpx31", true)] }
        : { datacenters: [{ location: { name: "hel1" }, server_types: { supported: [1, 2], available: [1, 2] } }] };
      return new Response(JSON.stringify({ ...body, meta: { pagination: { next_page: null } } }), { status: 200 });
    }) as unknown as typeof fetch;
    const availability = new OfferingAvailability();
    const source = new CatalogSource({ client: new HcloudClient({ token: "t", fetch: fetchStub }), availability });
    await source.refresh();
    const api = await startTestApi({ catalog: source, availability });
    try {
      const types = await api.client.instanceTypes();
      assert.deepEqual(
        types.map((t) => [t.name, t.offerings[0]!.available]),
        [
          ["cpx21", true],
          ["cpx31", false],
        ],
      );
      await assert.rejects(
        api.client.createNode({ uniqueID: "deprecated", pool: "hel1-burst", instanceType: "cpx31" }),
        (e: unknown) => e instanceof NodefleetApiError && e.code === "InsufficientCapacity",
      );
      assert.equal((await api.client.createNode({ uniqueID: "current", pool: "hel1-burst" })).node.instanceType, "cpx21");
    } finally {
      await api.close();
    }
  });

  it("is ready at once while Hetzner holds its first read: the shipped catalog is served, marked stale in /readyz", async () => {
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    const fetchStub = (async (url: string) => {
      await held;
      const body = url.includes("/server_types")
        ? {
            server_types: [CPX21_IN_HEL1],
          }
        : { datacenters: [{ location: { name: "hel1" }, server_types: { supported: [1], available: [] } }] };
      return new Response(JSON.stringify({ ...body, meta: { pagination: { next_page: null } } }), { status: 200 });
    }) as unknown as typeof fetch;
    const availability = new OfferingAvailability();
    const source = new CatalogSource({ client: new HcloudClient({ token: "t", fetch: fetchStub }), availability });
    const api = await startTestApi({ catalog: source, availability });
    try {
      const before = await api.client.readiness();
      assert.equal(before.status, 200);
      assert.equal(before.body.status, "ready", "readiness does not wait on Hetzner");
      const stale = (before.body.details as { catalog?: { stale: boolean; serving: string; reason: string } }).catalog;
      assert.equal(stale?.stale, true);
      assert.match(stale!.serving, /shipped catalog/);
      assert.match(stale!.reason, /first read .* has not finished/);
      assert.ok((await api.client.instanceTypes()).length > 0, "the shipped catalog answers meanwhile");
      release();
      const after = await eventually(async () => {
        const r = await api.client.readiness();
        return r.body.status === "ready" && !(r.body.details as { catalog?: unknown }).catalog ? r : undefined;
      });
      assert.equal(after.status, 200);
      assert.equal(availability.isAvailable("cpx21", "hel1"), false, "the read's availability is known once it is fresh");
    } finally {
      release();
      await api.close();
    }
  });

  it("keeps the last known catalog when Hetzner is rate limited or down, marked stale with the reason, until a read succeeds", async () => {
    let answer: "ok" | "429" | "down" = "ok";
    const fetchStub = (async (url: string) => {
      if (answer === "down")
        throw new TypeError("fetch failed", {
          cause: Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:9"), { code: "ECONNREFUSED" }),
        });
      if (answer === "429")
        return new Response(
          JSON.stringify({ error: { code: "rate_limit_exceeded", message: "limit of 3600 requests per hour reached" } }),
          { status: 429 },
        );
      const body = url.includes("/server_types")
        ? {
            server_types: [CPX21_IN_HEL1],
          }
        : { datacenters: [{ location: { name: "hel1" }, server_types: { supported: [1], available: [1] } }] };
      return new Response(JSON.stringify({ ...body, meta: { pagination: { next_page: null } } }), { status: 200 });
    }) as unknown as typeof fetch;
    const token = "hcloud-token-0123456789abcdef";
    const source = new CatalogSource({ client: new HcloudClient({ token, fetch: fetchStub }) });
    assert.equal(new CatalogSource().staleness(), undefined, "without live data the shipped catalog is the intended one");
    assert.equal(source.staleness()?.stale, true, "not read yet");
    await source.refresh();
    assert.equal(source.staleness(), undefined);
    const live = source.current();
    assert.match(live.source, /Hetzner Cloud API/);
    for (const [mode, reason] of [
      ["429", /429 rate_limit_exceeded/],
      ["down", /ECONNREFUSED/],
    ] as const) {
      answer = mode;
      await source.refresh();
      assert.equal(source.current(), live, `${mode}: the last known catalog is kept`);
      const stale = source.staleness();
      assert.equal(stale?.stale, true, mode);
      assert.match(stale!.serving, /the last read of Hetzner's server types/);
      assert.match(stale!.reason, reason);
      assert.ok(!JSON.stringify(stale).includes(token), "no token in what readiness shows");
    }
    answer = "ok";
    await source.refresh();
    assert.equal(source.staleness(), undefined, "fresh again after a read went through");
  });

  it("expires a learned sold-out mark after the configured time", () => {
    let now = 0;
    const availability = new OfferingAvailability(60_000, () => now);
    availability.markUnavailable("cpx21", "hel1", "sold out");
    assert.equal(availability.isAvailable("cpx21", "hel1"), false);
    assert.equal(availability.isAvailable("cpx21", "fsn1"), true);
    now = 60_001;
    assert.equal(availability.isAvailable("cpx21", "hel1"), true);
  });
});

describe("offer prices and the primary IPv4", () => {
  it("adds the location's primary IPv4 to a pool with public IPv4, and nothing to one without", async () => {
    const { poolInstanceTypes } = await import("../../../automation/catalog/instanceTypes");
    const catalog = shippedCatalog();
    const kubelet = parseFleetSpec(configValues(readStackConfigFile("example", projectRoot()).config)).cluster.kubelet;
    const pool = { name: "p", location: "hel1", serverTypes: ["cpx31"], image: "ubuntu-24.04" };
    const server = catalog.serverTypes.find((t) => t.name === "cpx31")!.prices.find((p) => p.location === "hel1")!.priceHourlyNet;
    const ipv4 = catalog.primaryIpv4!.find((p) => p.location === "hel1")!.priceHourlyNet;
    assert.ok(ipv4 > 0, "the shipped catalog prices a primary IPv4");
    const price = (publicIpv4?: boolean) =>
      poolInstanceTypes(catalog, { ...pool, ...(publicIpv4 === undefined ? {} : { publicIpv4 }) }, kubelet).instanceTypes[0]!.offerings[0]!
        .price;
    assert.equal(price(), Math.round((server + ipv4) * 1e6) / 1e6, "public IPv4 is the default");
    assert.equal(price(true), price());
    assert.equal(price(false), server);
  });
});

describe("offerings backed off after failed creates", () => {
  it("say until when, for an offering's or a pool's mark, and not for a type the provider does not sell", async () => {
    const { poolInstanceTypes } = await import("../../../automation/catalog/instanceTypes");
    const catalog = shippedCatalog();
    const kubelet = parseFleetSpec(configValues(readStackConfigFile("example", projectRoot()).config)).cluster.kubelet;
    const pool = { name: "burst", location: "hel1", serverTypes: ["cpx21", "cpx31"], image: "ubuntu-24.04" };
    const now = Date.parse("2026-12-04T12:00:00Z");
    const availability = new OfferingAvailability(30 * 60_000, () => now, 5 * 60_000);
    const offering = (type: string, clusterId = "c1") =>
      poolInstanceTypes(catalog, pool, kubelet, availability, undefined, undefined, clusterId).instanceTypes.find((t) => t.name === type)!
        .offerings[0]!;
    assert.equal(offering("cpx21").backoffUntil, undefined, "nothing marked yet");
    availability.markUnavailable("cpx21", "hel1", "quota exhausted", "quota");
    assert.deepEqual(
      { available: offering("cpx21").available, reason: offering("cpx21").unavailableReason, until: offering("cpx21").backoffUntil },
      { available: false, reason: "quota exhausted", until: "2026-12-04T12:05:00.000Z" },
    );
    assert.equal(offering("cpx31").backoffUntil, undefined, "another type is not marked");
    availability.markPoolUnavailable("c1", "burst", "the image cannot be used", "image");
    assert.equal(offering("cpx31").backoffUntil, "2026-12-04T12:05:00.000Z", "a pool's mark backs off every offering of the pool");
    assert.equal(offering("cpx31", "c2").backoffUntil, undefined, "in that cluster only");
    // The provider's own report is no backoff: nothing to wait for.
    availability.setProviderUnavailable([{ serverType: "cpx21", location: "hel1" }]);
    assert.equal(offering("cpx21", "c2").backoffUntil, undefined);
    assert.equal(offering("cpx21", "c2").available, false);
  });
});
