/**
 * The preview guard runs only when something that could move existing members changed (its
 * fingerprint, reconciler/guardFingerprint.ts), on the fake engine with a stored state: an
 * unchanged run goes straight to the up (no preview operation, no preview call), a change of the
 * stack config, the program or the state outside the service brings the guard back and it still
 * refuses a replacement, a deleting run refreshes what it deletes from the stored state, and an up
 * that dies before its outcome is recorded leaves the next run guarded; with the fingerprints and
 * operations in SQLite and in PostgreSQL.
 */
import { strict as assert } from "node:assert";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import type { NodeView } from "../../../automation/client/nodefleetClient";
import { FakeStackEngine } from "../../support/fakeStackEngine";
import { eventually, tempDataDir, type TestApi } from "../../support/apiHarness";
import { storeBackends } from "../../support/storeBackends";

for (const backend of storeBackends())
  describe(`preview guard only when needed (fake engine with a stored state) (${backend.name})`, function () {
    backend.hooks();
    this.timeout(60_000);
    let api: TestApi | undefined;
    let engine: FakeStackEngine;
    const dirs: string[] = [];

    afterEach(async () => {
      await api?.close();
      api = undefined;
      for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
    });

    const running = async (uniqueID: string): Promise<NodeView> => {
      const { node } = await api!.client.createNode({ uniqueID, pool: "hel1-burst" });
      return eventually(async () => {
        const current = await api!.client.getNode(node.nodeID);
        return current.status === "RUNNING" ? current : undefined;
      });
    };
    /** The operations' kinds, oldest first. */
    const kinds = async () => (await api!.client.operations()).map((o) => o.kind).reverse();

    /** A change outside the fingerprint's reach would pass unguarded, so the refusals below all follow a fingerprint change. */
    const assertRefusedReplacing = async (victim: NodeView, blockedId: string) => {
      const degraded = await eventually(async () => {
        const ready = await api!.client.readiness();
        return ready.body.status === "degraded" ? ready : undefined;
      });
      assert.match(
        JSON.stringify(degraded.body.details),
        new RegExp(`preview guard refused the run: it would replace pool-server-${victim.nodeID}`),
      );
      assert.equal(engine.servers.get(victim.nodeID)!.serverId, victim.instanceID, "not replaced");
      assert.notEqual((await api!.client.getNode(blockedId)).status, "RUNNING");
      engine.forceReplace.clear();
      await eventually(async () => ((await api!.client.getNode(blockedId)).status === "RUNNING" ? true : undefined));
    };

    it("skips the preview when nothing changed, and guards again after a stack config change, refusing a replacement", async () => {
      engine = new FakeStackEngine().keepsState();
      api = await backend.startApi({ engine });
      const first = await running("first");
      assert.equal(engine.previews, 1, "the first run has no fingerprint to compare: guarded");
      await running("second");
      await running("third");
      assert.equal(engine.previews, 1, "nothing changed: no preview");
      assert.deepEqual(await kinds(), ["preview", "up", "up", "up"]);

      (api.config["nodefleet:cluster"]!.value as Record<string, unknown>).k0sVersion = "v1.34.1+k0s.0";
      engine.forceReplace.add(first.nodeID);
      const blocked = await api.client.createNode({ uniqueID: "blocked", pool: "hel1-burst" });
      await assertRefusedReplacing(first, blocked.node.nodeID);
      assert.ok(engine.previews >= 3, "the refused run and the one after it were previewed");
      const previews = engine.previews;
      await running("fourth");
      assert.equal(engine.previews, previews, "the new config was fingerprinted after its first up: unguarded again");
    });

    it("guards again after the state was written outside the service, and refuses a replacement", async () => {
      engine = new FakeStackEngine().keepsState();
      api = await backend.startApi({ engine });
      const first = await running("first");
      await running("second");
      assert.equal(engine.previews, 1);
      engine.editStateOutside();
      engine.forceReplace.add(first.nodeID);
      const blocked = await api.client.createNode({ uniqueID: "blocked", pool: "hel1-burst" });
      await assertRefusedReplacing(first, blocked.node.nodeID);
    });

    it("guards again after the program's files or its package version changed, and refuses a replacement", async () => {
      const dir = mkdtempSync(path.join(tmpdir(), "nodefleet-guard-program-"));
      dirs.push(dir);
      writeFileSync(path.join(dir, "package.json"), JSON.stringify({ name: "guard-program", version: "1.0.0" }));
      writeFileSync(path.join(dir, "part.js"), "exports.part = 1;\n");
      writeFileSync(path.join(dir, "program.js"), 'require("./part.js");\nexports.runProgram = async () => ({});\n');
      engine = new FakeStackEngine().keepsState();
      api = await backend.startApi({ engine, programModule: path.join(dir, "program.js") });
      const first = await running("first");
      await running("second");
      assert.equal(engine.previews, 1);

      writeFileSync(path.join(dir, "part.js"), "exports.part = 2;\n");
      engine.forceReplace.add(first.nodeID);
      const blocked = await api.client.createNode({ uniqueID: "blocked", pool: "hel1-burst" });
      await assertRefusedReplacing(first, blocked.node.nodeID);

      writeFileSync(path.join(dir, "package.json"), JSON.stringify({ name: "guard-program", version: "1.0.1" }));
      engine.forceReplace.add(first.nodeID);
      const again = await api.client.createNode({ uniqueID: "again", pool: "hel1-burst" });
      await assertRefusedReplacing(first, again.node.nodeID);
    });

    for (const previewGuard of [true, false])
      it(`refreshes what an unchanged deleting run deletes from the stored state, without a preview (guard ${previewGuard ? "on" : "off"})`, async () => {
        engine = new FakeStackEngine().keepsState();
        api = await backend.startApi({ engine, previewGuard });
        const kept = await running("kept");
        const lost = await running("lost");
        const previews = engine.previews;
        engine.vanished.add(lost.nodeID);
        assert.equal((await api.client.deleteNode(lost.nodeID)).status, "TERMINATING");
        await eventually(async () => ((await api!.client.getNode(lost.nodeID).catch(() => undefined)) === undefined ? true : undefined));
        assert.equal(engine.previews, previews, "no preview for the delete");
        assert.deepEqual([...engine.servers.keys()], [kept.nodeID]);
        assert.deepEqual(
          engine.refreshTargets[0]!.map((urn) => urn.split("::").at(-1)),
          [`pool-server-${lost.nodeID}`, `pool-server-${lost.nodeID}-pg`],
          "the server the run deletes and its placement group, nothing of the member that stays",
        );
        assert.ok((await api.client.operations()).every((o) => o.result === "succeeded"));
      });

    it("an up that dies before its outcome is recorded leaves the next run guarded; a restart keeps the fingerprint", async () => {
      engine = new FakeStackEngine().keepsState();
      const dataDir = tempDataDir();
      api = await backend.startApi({ engine, dataDir });
      await running("first");
      assert.equal(engine.previews, 1);
      engine.dieAfterUp = "the service was killed during the up";
      await running("second");
      const operations = (await api.client.operations()).reverse();
      assert.deepEqual(
        operations.map((o) => [o.kind, o.result]),
        [
          ["preview", "succeeded"],
          ["up", "succeeded"],
          ["up", "failed"],
          ["preview", "succeeded"],
          ["up", "succeeded"],
        ],
        "the died up skipped the preview; the state it wrote no longer matches: its retry is guarded",
      );
      await api.close();
      api = await backend.startApi({ engine, dataDir }, api);
      await running("third");
      assert.equal(engine.previews, 2, "the fingerprint stored before the restart still matches: no preview");
    });
  });
