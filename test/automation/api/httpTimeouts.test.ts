/** Connection timeouts over real sockets on 127.0.0.1: silent clients and stalled bodies are cut off. */
import { strict as assert } from "node:assert";
import * as net from "node:net";
import { TOKEN, startTestApi, type TestApi } from "../../support/apiHarness";

const NODES = "/api/v1/clusters/example/nodes";

/** Connects, writes `request` (if any) and resolves with what arrived once the service closed the socket. */
function untilClosed(api: TestApi, request: string | undefined, giveUpMs: number): Promise<{ closed: boolean; received: string }> {
  return new Promise((resolve) => {
    const socket = net.connect(Number(new URL(api.baseUrl).port), "127.0.0.1");
    let received = "";
    const timer = setTimeout(() => {
      socket.destroy();
      resolve({ closed: false, received });
    }, giveUpMs);
    socket.on("data", (chunk) => (received += chunk));
    socket.on("error", () => undefined);
    socket.on("close", () => {
      clearTimeout(timer);
      resolve({ closed: true, received });
    });
    socket.on("connect", () => {
      if (request !== undefined) socket.write(request);
    });
  });
}

describe("HTTP timeouts", function () {
  this.timeout(30_000);
  let api: TestApi;
  before(async () => {
    api = await startTestApi({ httpTimeouts: { headersMs: 300, requestMs: 600, keepAliveMs: 300, socketIdleMs: 5000 } });
  });
  after(async () => api.close());

  it("closes a socket that never sends a byte", async () => {
    const { closed, received } = await untilClosed(api, undefined, 4000);
    assert.ok(closed, "the service closed the silent connection");
    assert.ok(!received.includes("HTTP/1.1 2"), received);
  });

  it("closes a connection whose headers never end", async () => {
    const { closed } = await untilClosed(api, "GET /healthz HTTP/1.1\r\nHost: t\r\n", 4000);
    assert.ok(closed);
  });

  it("answers an authenticated request whose body stalls with 408 RequestTimeout in the error shape", async () => {
    const head = `POST ${NODES} HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"uniqueID":`;
    const { closed, received } = await untilClosed(api, head, 4000);
    assert.ok(closed, "the stalled request was ended");
    assert.match(received, /^HTTP\/1.1 408 /);
    const body = JSON.parse(received.slice(received.indexOf("\r\n\r\n") + 4)) as { error: { code: string } };
    assert.equal(body.error.code, "RequestTimeout");
  });

  it("closes an idle keep-alive connection after its response", async () => {
    const { closed, received } = await untilClosed(api, "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n", 4000);
    assert.match(received, /^HTTP\/1.1 200 /);
    assert.ok(closed);
  });
});
