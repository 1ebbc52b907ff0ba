/** `nodes create --wait-seconds` outside 0-120, or not a whole number, is refused before any request. */
import { strict as assert } from "node:assert";
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import { parseWaitSeconds } from "../../../automation/cli/waitSecondsOption";
import { runNodefleet } from "../../support/nodefleetCli";

const RULE = /--wait-seconds must be a whole number of seconds from 0 to 120/;

describe("nodes create --wait-seconds", function () {
  this.timeout(60_000);

  it("takes whole numbers of seconds from 0 to 120, written in decimal digits", () => {
    assert.deepEqual(["0", "30", "120"].map(parseWaitSeconds), [0, 30, 120]);
    for (const bad of ["121", "500", "-1", "1.5", "abc", "", " 5", "0x10", "1e2"])
      assert.throws(() => parseWaitSeconds(bad), RULE, JSON.stringify(bad));
  });

  it("is refused by the CLI, naming the option and the range, with no request sent", async () => {
    let requests = 0;
    const server = http.createServer((_request, response) => {
      requests += 1;
      response.writeHead(500).end();
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const result = await runNodefleet(
        [
          "nodes",
          "create",
          "--url",
          url,
          "--cluster",
          "example",
          "--token",
          "any-token-0123456789abcdef",
          "--unique-id",
          "claim",
          "--pool",
          "hel1-burst",
          "--wait-seconds",
          "500",
        ],
        { NODEFLEET_API_TOKEN: "" },
      );
      assert.notEqual(result.code, 0);
      assert.match(result.stderr, /option '--wait-seconds <n>' argument '500' is invalid/);
      assert.match(result.stderr, RULE);
      assert.equal(requests, 0, "nothing reached the API");
    } finally {
      server.close();
    }
  });
});
