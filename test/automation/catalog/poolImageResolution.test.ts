/**
 * An autoscaled pool's `imageSelector` resolved per architecture: the pure resolution (every needed
 * architecture answered once, an image exactly when the look-up found one, a reason naming the pool,
 * selector and architecture otherwise), and the Hetzner client's look-up against the fake Hetzner
 * API, where a newer matching snapshot becomes the answer.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { resolvePoolImages } from "../../../automation/catalog/poolImageResolution";
import { HcloudClient } from "../../../automation/hcloud/hcloudClient";
import { type FakeHcloud, buildFakeHcloud } from "../../../automation/local/fakeHcloud/fakeHcloudApi";
import type { HcloudArchitecture } from "../../../components/fleet/poolImages";

const TOKEN = "r".repeat(64);
const pool = { name: "workers", imageSelector: "role=node" };

describe("autoscaled pool image resolution", function () {
  it("answers every needed architecture once: the look-up's image, or a reason naming pool, selector and architecture", async function () {
    const architecture = fc.constantFrom<HcloudArchitecture>("x86", "arm");
    await fc.assert(
      fc.asyncProperty(
        fc.array(architecture, { maxLength: 4 }),
        fc.record({ x86: fc.option(fc.nat(), { nil: undefined }), arm: fc.option(fc.nat(), { nil: undefined }) }),
        fc.constantFrom<HcloudArchitecture | "none">("x86", "arm", "none"),
        async (needed, newest, failing) => {
          const asked: HcloudArchitecture[] = [];
          const resolved = await resolvePoolImages({
            pool,
            architectures: needed,
            newestImage: async (selector, arch) => {
              assert.equal(selector, pool.imageSelector);
              asked.push(arch);
              if (arch === failing) throw new Error("HTTP 503");
              return newest[arch] === undefined ? undefined : { id: newest[arch] };
            },
          });
          assert.deepEqual([...resolved.keys()].sort(), [...new Set(needed)].sort());
          assert.deepEqual(asked.sort(), [...new Set(needed)].sort(), "one look-up per architecture");
          for (const [arch, answer] of resolved) {
            if (arch === failing) {
              assert.ok("unavailableReason" in answer && /could not be looked up for .*HTTP 503/.test(answer.unavailableReason));
            } else if (newest[arch] !== undefined) {
              assert.deepEqual(answer, { image: String(newest[arch]) });
            } else {
              assert.ok("unavailableReason" in answer);
              assert.match(
                answer.unavailableReason,
                new RegExp(`pool workers: no image matches imageSelector role=node for the ${arch} architecture`),
              );
            }
          }
        },
      ),
    );
  });

  describe("through the Hetzner client on the fake Hetzner API", function () {
    let dir: string;
    let fake: FakeHcloud;
    let client: HcloudClient;

    before(async function () {
      dir = mkdtempSync(join(tmpdir(), "nodefleet-pool-images-"));
      fake = buildFakeHcloud({ token: TOKEN, stateFile: join(dir, "hcloud.json"), actionMs: 0 });
      const baseUrl = await fake.app.listen({ port: 0, host: "127.0.0.1" });
      client = new HcloudClient({ token: TOKEN, baseUrl });
    });
    after(async function () {
      await fake.app.close();
      rmSync(dir, { recursive: true, force: true });
    });

    const post = async (path: string, body: unknown) => {
      const response = await fake.app.inject({
        method: "POST",
        url: path,
        headers: { authorization: `Bearer ${TOKEN}` },
        payload: body as object,
      });
      assert.ok(response.statusCode < 300, `${path}: ${response.statusCode} ${response.body}`);
      return response.json() as Record<string, any>;
    };
    const snapshotOf = async (serverId: number, labels: Record<string, string>) =>
      (await post(`/servers/${serverId}/actions/create_image`, { type: "snapshot", labels })).image.id as number;

    it("resolves the newest matching snapshot per architecture, a newer one replacing it, and none for an architecture without one", async function () {
      const x86 = (await post("/servers", { name: "snap-x86", server_type: "cpx11", image: "ubuntu-24.04", location: "fsn1" })).server.id;
      const arm = (await post("/servers", { name: "snap-arm", server_type: "cax11", image: "ubuntu-24.04", location: "fsn1" })).server.id;
      const firstX86 = await snapshotOf(x86, { role: "node" });
      await snapshotOf(x86, { role: "other" });
      const resolve = () =>
        resolvePoolImages({ pool, architectures: ["x86", "arm"], newestImage: (selector, arch) => client.newestImage(selector, arch) });
      const before = await resolve();
      assert.deepEqual(before.get("x86"), { image: String(firstX86) });
      assert.match(
        (before.get("arm") as { unavailableReason: string }).unavailableReason,
        /no image matches imageSelector role=node for the arm/,
      );
      const newerX86 = await snapshotOf(x86, { role: "node" });
      const armImage = await snapshotOf(arm, { role: "node" });
      const after = await resolve();
      assert.deepEqual(after.get("x86"), { image: String(newerX86) }, "the newer snapshot is the answer");
      assert.deepEqual(after.get("arm"), { image: String(armImage) });
    });
  });
});
