/**
 * An autoscaled pool with `imageSelector` through the scaling API (issue #39 part 3), with the fake
 * engine and a scripted Hetzner image look-up: each member boots the newest matching snapshot of its
 * type's architecture; a newer snapshot drifts (ImageDrift) the members of its architecture only,
 * once the resolution is refreshed, and a failed look-up drifts nothing; an architecture without a
 * matching snapshot is refused at admission naming the field and the rule (no claim made) and its
 * offerings are unavailable.
 */
import { strict as assert } from "node:assert";
import { PoolImageSource } from "../../../automation/catalog/poolImageSource";
import type { HcloudArchitecture } from "../../../components/fleet/poolImages";
import { apiError, exampleConfig, startTestApi, type TestApi } from "../../support/apiHarness";

const SELECTOR = "role=k8s-node";
const REFRESH_MS = 60_000;

describe("scaling API: an autoscaled pool with imageSelector", function () {
  let api: TestApi;
  /** The newest matching snapshot per architecture, as the scripted Hetzner answers; absent: none matches. */
  let newest: Partial<Record<HcloudArchitecture, number>>;
  let failing: boolean;
  let lookups: Array<[string, HcloudArchitecture]>;
  let now: number;
  let poolIndex: number;

  beforeEach(async () => {
    newest = { x86: 4001, arm: 5001 };
    failing = false;
    lookups = [];
    now = 1_000_000;
    const config = exampleConfig();
    const pools = config["nodefleet:pools"]!.value as Array<Record<string, unknown>>;
    poolIndex = pools.findIndex((p) => p.name === "hel1-burst");
    const burst = pools[poolIndex]!;
    delete burst.image;
    Object.assign(burst, { imageSelector: SELECTOR, serverTypes: ["cpx21", "cax11"] });
    const images = new PoolImageSource({
      now: () => now,
      refreshMs: REFRESH_MS,
      newestImage: async (selector, architecture) => {
        lookups.push([selector, architecture]);
        if (failing) throw new Error("HTTP 503 from Hetzner");
        const id = newest[architecture];
        return id === undefined ? undefined : { id };
      },
    });
    api = await startTestApi({ config, images });
  });
  afterEach(async () => api.close());

  it("boots each member on the newest matching snapshot of its architecture", async () => {
    const x86 = await api.client.createNode({ uniqueID: "x86", pool: "hel1-burst", instanceType: "cpx21" });
    const arm = await api.client.createNode({ uniqueID: "arm", pool: "hel1-burst", instanceType: "cax11" });
    assert.deepEqual([x86.node.imageID, arm.node.imageID], ["4001", "5001"]);
    assert.deepEqual([x86.node.labels["kubernetes.io/arch"], arm.node.labels["kubernetes.io/arch"]], ["amd64", "arm64"]);
    assert.deepEqual([x86.node.drifted, arm.node.drifted], [false, false]);
    assert.ok(lookups.every(([selector]) => selector === SELECTOR));
  });

  it("drifts the members of the architecture that got a newer snapshot, and only once the resolution is refreshed", async () => {
    const x86 = (await api.client.createNode({ uniqueID: "x86", pool: "hel1-burst", instanceType: "cpx21" })).node.nodeID;
    const arm = (await api.client.createNode({ uniqueID: "arm", pool: "hel1-burst", instanceType: "cax11" })).node.nodeID;
    newest = { x86: 4002, arm: 5001 };
    assert.equal((await api.client.getNode(x86)).drifted, false, "the last resolution is younger than refreshMs");
    now += REFRESH_MS;
    const drifted = await api.client.getNode(x86);
    assert.equal(drifted.drifted, true);
    assert.equal(drifted.driftReason, "ImageDrift");
    assert.match(drifted.driftDetails ?? "", /image: 4001 -> 4002/);
    assert.equal(drifted.imageID, "4001", "the member keeps the image it was admitted with");
    const listed = await api.client.listNodes("hel1-burst");
    assert.deepEqual(
      listed.map((n) => [n.nodeID, n.drifted]).sort(),
      [
        [x86, true],
        [arm, false],
      ].sort(),
    );
    // A new x86 member gets the newer snapshot and is current.
    const next = await api.client.createNode({ uniqueID: "x86-next", pool: "hel1-burst", instanceType: "cpx21" });
    assert.deepEqual([next.node.imageID, next.node.drifted], ["4002", false]);
  });

  it("drifts nothing while Hetzner's image look-up fails, or a matching snapshot disappears", async () => {
    const x86 = (await api.client.createNode({ uniqueID: "x86", pool: "hel1-burst", instanceType: "cpx21" })).node.nodeID;
    failing = true;
    now += REFRESH_MS;
    assert.equal((await api.client.getNode(x86)).drifted, false);
    failing = false;
    newest = { arm: 5001 };
    now += REFRESH_MS;
    assert.equal((await api.client.getNode(x86)).drifted, false);
    // ...but a new x86 member is refused: nothing matches for x86 now.
    const error = await apiError(api.client.createNode({ uniqueID: "x86-next", pool: "hel1-burst", instanceType: "cpx21" }));
    assert.equal(error.code, "NoCompatibleInstanceType");
  });

  it("refuses at admission a type whose architecture no snapshot matches, naming the field and the rule, and makes no claim", async () => {
    newest = { x86: 4001 };
    const error = await apiError(api.client.createNode({ uniqueID: "arm", pool: "hel1-burst", instanceType: "cax11" }));
    assert.equal(error.status, 422);
    assert.equal(error.code, "NoCompatibleInstanceType");
    assert.match(
      error.message,
      new RegExp(
        `NoCompatibleInstanceType: nodefleet:pools\\[${poolIndex}\\]\\.imageSelector: every server type the request allows \\(cax11 \\(arm64\\)\\) needs an image of its architecture matching the selector: pool hel1-burst: no image matches imageSelector ${SELECTOR} for the arm architecture`,
      ),
    );
    assert.deepEqual(await api.client.listNodes("hel1-burst"), [], "nothing admitted");
    const cax11 = (await api.client.instanceTypes()).find((t) => t.pool === "hel1-burst" && t.name === "cax11")!;
    assert.deepEqual(
      cax11.offerings.map((o) => [o.available, /no image matches imageSelector/.test(o.unavailableReason ?? "")]),
      [[false, true]],
    );
    const cpx21 = (await api.client.instanceTypes()).find((t) => t.pool === "hel1-burst" && t.name === "cpx21")!;
    assert.deepEqual(
      cpx21.offerings.map((o) => o.available),
      [true],
    );
    // A request either architecture may serve gets the one with an image.
    const any = await api.client.createNode({ uniqueID: "any", pool: "hel1-burst" });
    assert.deepEqual([any.node.instanceType, any.node.imageID], ["cpx21", "4001"]);
  });
});
