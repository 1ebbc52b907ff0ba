/**
 * `serve` on a port that is taken: one clear error with the way out (--port), and the data
 * directory never created (the check runs before anything is written).
 */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as net from "node:net";
import * as path from "node:path";
import { assertCanListen } from "../../../automation/cli/portCheck";
import { TOKEN, tempDataDir } from "../../support/apiHarness";
import { runNodefleet } from "../../support/nodefleetCli";

async function occupyPort(): Promise<{ port: number; release: () => Promise<void> }> {
  const holder = net.createServer();
  await new Promise<void>((resolve) => holder.listen(0, "127.0.0.1", resolve));
  return { port: (holder.address() as net.AddressInfo).port, release: () => new Promise((resolve) => holder.close(() => resolve())) };
}

describe("nodefleet serve on a taken port", function () {
  this.timeout(60_000);

  it("the check itself: a taken port is refused naming --port; a free one and port 0 pass", async () => {
    const taken = await occupyPort();
    try {
      await assert.rejects(
        assertCanListen("127.0.0.1", taken.port),
        new RegExp(`--port ${taken.port}: 127\\.0\\.0\\.1:${taken.port} is already in use.*--port <n>`),
      );
    } finally {
      await taken.release();
    }
    await assertCanListen("127.0.0.1", taken.port);
    await assertCanListen("127.0.0.1", 0);
  });

  it("exits non-zero with a hint to use --port, leaving the data directory uncreated", async () => {
    const taken = await occupyPort();
    const dataDir = path.join(tempDataDir("nodefleet-port-"), "fresh");
    try {
      const result = await runNodefleet(["serve", "--stack", "example", "--data-dir", dataDir, "--port", String(taken.port)], {
        HCLOUD_TOKEN: "",
        SCW_SECRET_KEY: "",
        NODEFLEET_API_TOKENS: `example:${TOKEN}`,
      });
      assert.notEqual(result.code, 0);
      assert.match(result.stderr, new RegExp(`already in use.*pick a free port with --port <n>`));
      assert.doesNotMatch(result.stderr, /listening on/);
      assert.ok(!fs.existsSync(dataDir), `${dataDir} was created: ${fs.existsSync(dataDir) ? fs.readdirSync(dataDir).join(", ") : ""}`);
    } finally {
      await taken.release();
    }
  });
});
