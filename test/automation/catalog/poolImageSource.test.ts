/**
 * The scaling API's store of autoscaled pools' image resolutions (catalog/poolImageSource.ts):
 * concurrent callers share one look-up per pool; a refresh only looks up once the last resolution
 * is `refreshMs` old; an unchanged answer keeps the same object and version (the caches keyed by
 * them stay valid); admission sees "nothing matches" while running members keep their last image.
 */
import assert from "node:assert/strict";
import { PoolImageSource } from "../../../automation/catalog/poolImageSource";
import type { HcloudArchitecture } from "../../../components/fleet/poolImages";

const pool = { name: "burst", imageSelector: "role=node", serverTypes: ["cpx21", "cax11", "cpx31"] };

describe("pool image source", function () {
  let newest: Partial<Record<HcloudArchitecture, number>>;
  let lookups: HcloudArchitecture[];
  let now: number;
  let source: PoolImageSource;

  beforeEach(() => {
    newest = { x86: 1, arm: 2 };
    lookups = [];
    now = 0;
    source = new PoolImageSource({
      now: () => now,
      refreshMs: 1000,
      newestImage: async (_selector, architecture) => {
        lookups.push(architecture);
        await new Promise((resolve) => setImmediate(resolve));
        const id = newest[architecture];
        return id === undefined ? undefined : { id };
      },
    });
  });

  it("shares one look-up per architecture between concurrent callers, and refreshes only when old", async () => {
    await Promise.all([source.refreshStale([pool]), source.refreshStale([pool]), source.resolve(pool)]);
    assert.deepEqual(lookups.sort(), ["arm", "x86"]);
    await source.refreshStale([pool]);
    assert.equal(lookups.length, 2, "younger than refreshMs: no look-up");
    now = 1000;
    await source.refreshStale([pool]);
    assert.equal(lookups.length, 4);
  });

  it("keeps the same resolution object and version while the answer is unchanged", async () => {
    await source.refreshStale([pool]);
    const first = source.last(pool);
    const version = source.version;
    now = 1000;
    await source.refreshStale([pool]);
    assert.equal(source.last(pool), first);
    assert.equal(source.version, version);
    newest = { x86: 3, arm: 2 };
    now = 2000;
    await source.refreshStale([pool]);
    assert.notEqual(source.last(pool), first);
    assert.equal(source.version, version + 1);
    assert.deepEqual(source.last(pool)!.get("x86"), { image: "3" });
  });

  it("answers admission that nothing matches, while running members keep the last image", async () => {
    await source.refreshStale([pool]);
    newest = { x86: 1 };
    const admitted = await source.resolve(pool);
    assert.ok("unavailableReason" in admitted.get("arm")!, "admission: no arm image");
    assert.deepEqual(source.last(pool)!.get("arm"), { image: "2" }, "members: the last arm image");
  });
});
