/** Credentials in a request's query string never reach the log in clear. */
import { strict as assert } from "node:assert";
import pino from "pino";
import { REDACTED, redactedUrl } from "../../../automation/api/redactedUrl";
import { TOKEN, startTestApi } from "../../support/apiHarness";

describe("logged request URLs", () => {
  it("keep the API's own query values and replace every other one", () => {
    assert.equal(redactedUrl("/api/v1/clusters/example/nodes"), "/api/v1/clusters/example/nodes");
    assert.equal(redactedUrl("/n?pool=hel1-burst&token=abc"), `/n?pool=hel1-burst&token=${REDACTED}`);
    assert.equal(redactedUrl("/n?access_token=abc&waitSeconds=5&x"), `/n?access_token=${REDACTED}&waitSeconds=5&${REDACTED}`);
    // A bare parameter may be the token itself; the API's own names stay (a bare one is only an empty value).
    assert.equal(redactedUrl(`/n?${TOKEN}`), `/n?${REDACTED}`);
    assert.equal(redactedUrl("/n?pool&&waitSeconds"), "/n?pool&&waitSeconds");
    assert.equal(redactedUrl("/n?%74oken=abc&%zz=1"), `/n?%74oken=${REDACTED}&%zz=${REDACTED}`);
  });

  it("a token sent in the query string is not logged in clear", async () => {
    let logged = "";
    // Request lines are written at debug (requestLogController.ts).
    const logger = pino({ level: "debug" }, { write: (line: string) => void (logged += line) });
    const api = await startTestApi({ logger });
    try {
      await api.clientWith(undefined).raw("GET", `/api/v1/clusters/example/nodes?pool=hel1-burst&token=${TOKEN}`);
      await api.clientWith(undefined).raw("GET", `/api/v1/clusters/example?access_token=${TOKEN}`);
      await api.clientWith(undefined).raw("GET", `/api/v1/clusters/example?${TOKEN}`);
    } finally {
      await api.close();
    }
    assert.match(logged, /incoming request/, "requests are logged at all");
    assert.ok(logged.includes(`pool=hel1-burst&token=${REDACTED}`), logged);
    assert.ok(!logged.includes(TOKEN), "the token does not appear in the log");
  });
});
