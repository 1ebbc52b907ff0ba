/**
 * Which token `nodefleet nodes` sends, and, when the API answers 401, the error naming where that
 * token came from (--token, NODEFLEET_API_TOKEN or the generated token file), never the token.
 */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as path from "node:path";
import { resolveApiToken } from "../../../automation/cli/apiTokenSource";
import { startTestApi, tempDataDir, type TestApi } from "../../support/apiHarness";
import { runNodefleet } from "../../support/nodefleetCli";

const REFUSED = "refused-token-0123456789abcdef";

describe("the API token of nodefleet nodes", function () {
  this.timeout(120_000);

  it("comes from --token, then NODEFLEET_API_TOKEN, then the token file serve generated, and says which", () => {
    const dataDir = tempDataDir("nodefleet-token-");
    const file = path.join(dataDir, "api-token");
    fs.writeFileSync(file, "from-the-file\n");
    assert.deepEqual(resolveApiToken({ token: "from-the-flag", dataDir }, { NODEFLEET_API_TOKEN: "from-the-env" }), {
      token: "from-the-flag",
      source: "--token",
    });
    assert.deepEqual(resolveApiToken({ dataDir }, { NODEFLEET_API_TOKEN: "from-the-env" }), {
      token: "from-the-env",
      source: "NODEFLEET_API_TOKEN",
    });
    assert.deepEqual(resolveApiToken({ dataDir }, {}), { token: "from-the-file", source: `the token file ${file}` });
    fs.rmSync(file);
    const stackFile = path.join(dataDir, "prod", "api-token");
    fs.mkdirSync(path.dirname(stackFile));
    fs.writeFileSync(stackFile, "from-the-stack's-file\n");
    assert.deepEqual(
      resolveApiToken({ dataDir, stack: "prod" }, {}),
      { token: "from-the-stack's-file", source: `the token file ${stackFile}` },
      "a service with several stacks keeps each one's token in <data-dir>/<stack>",
    );
    assert.throws(
      () => resolveApiToken({ dataDir }, {}),
      /no API token: pass --token, set NODEFLEET_API_TOKEN, or run serve with this --data-dir/,
    );
  });

  describe("refused by the API (401)", () => {
    let api: TestApi;
    before(async () => {
      api = await startTestApi();
    });
    after(async () => api.close());

    const list = (extra: string[], env: Record<string, string>) =>
      runNodefleet(["nodes", "list", "--url", api.baseUrl, "--cluster", "example", ...extra], env);

    function assertNamesTheSource(result: { code: number | null; stderr: string; stdout: string }, source: string): void {
      assert.equal(result.code, 1);
      assert.match(result.stderr, /401 Unauthorized/);
      assert.ok(
        result.stderr.includes(`the token came from ${source}, and the scaling API at ${api.baseUrl} does not accept it`),
        result.stderr,
      );
      assert.ok(!`${result.stderr}${result.stdout}`.includes(REFUSED), "the token itself is never printed");
    }

    it("names --token", async () => {
      assertNamesTheSource(await list(["--token", REFUSED], { NODEFLEET_API_TOKEN: "" }), "--token");
    });

    it("names NODEFLEET_API_TOKEN", async () => {
      assertNamesTheSource(await list([], { NODEFLEET_API_TOKEN: REFUSED }), "NODEFLEET_API_TOKEN");
    });

    it("names the generated token file's path", async () => {
      const dataDir = tempDataDir("nodefleet-token-");
      fs.writeFileSync(path.join(dataDir, "api-token"), `${REFUSED}\n`, { mode: 0o600 });
      assertNamesTheSource(
        await list(["--data-dir", dataDir], { NODEFLEET_API_TOKEN: "" }),
        `the token file ${path.join(dataDir, "api-token")}`,
      );
    });
  });
});
