/**
 * `serve`'s log format: readable lines when its log (stderr) is a terminal, JSON lines otherwise,
 * --log-format / NODEFLEET_LOG_FORMAT overriding; both formats synchronous and redacted.
 */
import { strict as assert } from "node:assert";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { chooseLogFormat } from "../../../automation/cli/logFormat";
import { serviceLogger } from "../../../automation/cli/serviceLogger";
import { tempDataDir } from "../../support/apiHarness";
import { runNodefleet } from "../../support/nodefleetCli";
import { REPOSITORY_ROOT } from "../../support/serveProcess";

const LOGGER_MODULE = path.join(REPOSITORY_ROOT, "dist", "automation", "cli", "serviceLogger.js");
/** Logs one entry carrying a credential through the service's logger on stderr, as serve does. */
const LOG_ONE_ENTRY = `require(${JSON.stringify(LOGGER_MODULE)}).serviceLogger(process.env).info({ cluster: { token: "sekret-token" } }, "hello from the service")`;

function hasScript(): boolean {
  return spawnSync("script", ["--version"], { stdio: "ignore" }).status === 0;
}

describe("the service's log format", function () {
  this.timeout(60_000);

  it("is chosen by the flag, then NODEFLEET_LOG_FORMAT, then whether the log goes to a terminal", () => {
    assert.equal(chooseLogFormat({ flag: "json", env: { NODEFLEET_LOG_FORMAT: "pretty" }, toTerminal: true }), "json");
    assert.equal(chooseLogFormat({ env: { NODEFLEET_LOG_FORMAT: "json" }, toTerminal: true }), "json");
    assert.equal(chooseLogFormat({ env: { NODEFLEET_LOG_FORMAT: "pretty" }, toTerminal: false }), "pretty");
    assert.equal(chooseLogFormat({ env: {}, toTerminal: true }), "pretty");
    assert.equal(chooseLogFormat({ env: { NODEFLEET_LOG_FORMAT: "" }, toTerminal: false }), "json");
    assert.throws(
      () => chooseLogFormat({ env: { NODEFLEET_LOG_FORMAT: "text" }, toTerminal: false }),
      /NODEFLEET_LOG_FORMAT must be one of json, pretty \(got "text"\)/,
    );
  });

  it("writes readable lines, redacted and synchronous, when pretty is asked for", () => {
    const file = path.join(tempDataDir("nodefleet-pretty-"), "service.log");
    const logger = serviceLogger({ NODEFLEET_LOG_LEVEL: "info" }, file, { format: "pretty" });
    logger.debug("below the level");
    logger.info(
      { req: { headers: { authorization: "Bearer sekret-header" } }, cluster: { token: "sekret-token" } },
      "nodefleet scaling API listening",
    );
    // In the file as soon as info() returns.
    const text = fs.readFileSync(file, "utf8");
    const lines = text.trim().split("\n");
    assert.equal(lines.length, 1, text);
    assert.match(lines[0]!, /INFO.*: nodefleet scaling API listening/);
    assert.throws(() => JSON.parse(lines[0]!), "not a JSON document");
    assert.match(lines[0]!, /\[Redacted\]/);
    assert.doesNotMatch(text, /sekret/);
  });

  it("writes JSON lines when stderr is not a terminal, and readable lines when it is", function () {
    const piped = spawnSync(process.execPath, ["-e", LOG_ONE_ENTRY], {
      encoding: "utf8",
      env: { ...process.env, NODEFLEET_LOG_FORMAT: "" },
    });
    const entry = JSON.parse(piped.stderr.trim()) as { msg: string; cluster: { token: string } };
    assert.equal(entry.msg, "hello from the service");
    assert.equal(entry.cluster.token, "[Redacted]");

    if (!hasScript()) this.skip();
    // script(1) runs the command on a pseudo-terminal: stderr is a terminal there, as in a shell.
    const command = `${JSON.stringify(process.execPath)} -e ${JSON.stringify(LOG_ONE_ENTRY).replace(/\$/g, "\\$")}`;
    const atTerminal = spawnSync("script", ["-qec", command, "/dev/null"], {
      encoding: "utf8",
      env: { ...process.env, NODEFLEET_LOG_FORMAT: "", NO_COLOR: "1" },
    });
    const shown = atTerminal.stdout.replace(/\r/g, "").trim();
    assert.match(shown, /INFO.*: hello from the service/, shown);
    assert.ok(!shown.startsWith("{"), `a readable line, not JSON: ${shown}`);
    assert.doesNotMatch(shown, /sekret/);
    // eslint-disable-next-line no-control-regex -- ESC is the start of a colour code
    assert.doesNotMatch(shown, /\x1b\[/, "NO_COLOR: no colour codes");
  });

  it("`serve --log-format` accepts only json or pretty, naming the option", async () => {
    const result = await runNodefleet(["serve", "--stack", "example", "--log-format", "text"]);
    assert.notEqual(result.code, 0);
    assert.match(result.stderr, /--log-format/);
    assert.match(result.stderr, /json, pretty/);
  });
});
