import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { serviceLogger } from "../../../automation/cli/serviceLogger";

describe("the service's logger", () => {
  it("writes JSON lines at NODEFLEET_LOG_LEVEL with credentials redacted, each written when logged", () => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "nodefleet-logger-")), "service.log");
    const logger = serviceLogger({ NODEFLEET_LOG_LEVEL: "info" }, file);
    logger.debug("below the level");
    logger.info(
      { req: { headers: { authorization: "Bearer sekret-header" } }, cluster: { token: "sekret-token", kubeconfig: "sekret-kubeconfig" } },
      "request",
    );
    // Synchronous: the line is in the file as soon as info() returns.
    const lines = fs
      .readFileSync(file, "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    assert.equal(lines.length, 1, "debug is below info");
    assert.equal(lines[0]!.name, "nodefleet");
    assert.equal(lines[0]!.msg, "request");
    assert.doesNotMatch(JSON.stringify(lines[0]), /sekret/);
    assert.equal((lines[0]!.cluster as Record<string, unknown>).token, "[Redacted]");
    fs.rmSync(path.dirname(file), { recursive: true, force: true });
  });
});
