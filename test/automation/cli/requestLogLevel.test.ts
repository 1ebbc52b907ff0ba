/**
 * Fastify's per-request lines ("incoming request", "request completed") are written at debug: at
 * the default info level the service's log holds what the service says, not one line per request.
 */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as path from "node:path";
import { serviceLogger } from "../../../automation/cli/serviceLogger";
import { startTestApi, tempDataDir } from "../../support/apiHarness";

async function requestLines(level: string): Promise<Array<{ msg: string; level: number; res?: { statusCode?: number } }>> {
  const file = path.join(tempDataDir("nodefleet-request-log-"), "service.log");
  const api = await startTestApi({ logger: serviceLogger({ NODEFLEET_LOG_LEVEL: level }, file, { format: "json" }) });
  try {
    await api.client.listNodes();
    await api.client.listNodes("hel1-burst");
  } finally {
    await api.close();
  }
  return fs
    .readFileSync(file, "utf8")
    .trim()
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line) as { msg: string; level: number; res?: { statusCode?: number } })
    .filter((entry) => entry.msg === "incoming request" || entry.msg === "request completed");
}

describe("request logs", function () {
  this.timeout(60_000);

  it("are not written at info", async () => {
    assert.deepEqual(await requestLines("info"), []);
  });

  it("are written at debug (pino level 20), with the response's status", async () => {
    const lines = await requestLines("debug");
    assert.equal(lines.filter((l) => l.msg === "incoming request").length, 2);
    const completed = lines.filter((l) => l.msg === "request completed");
    assert.equal(completed.length, 2);
    assert.ok(
      lines.every((l) => l.level === 20),
      JSON.stringify(lines),
    );
    assert.deepEqual(completed.map((l) => l.res?.statusCode).sort(), [200, 200]);
  });
});
