/**
 * A failed call to the Hetzner Cloud API names the call and the cause (fetch alone says "fetch
 * failed"), never the token: no connection, a DNS failure, no answer in time, an answer cut short,
 * an answer that is not JSON, an error status.
 */
import { strict as assert } from "node:assert";
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import * as net from "node:net";
import { HcloudApiError, HcloudClient, HcloudRequestError } from "../../../automation/hcloud/hcloudClient";

const TOKEN = "t".repeat(64);

/** A server answering every request with `handle`; closed after the test. */
async function serve(
  handle: (request: http.IncomingMessage, response: http.ServerResponse) => void,
): Promise<{ baseUrl: string; close: () => Promise<void> }> {
  const server = http.createServer(handle);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function failure(call: Promise<unknown>): Promise<Error> {
  try {
    await call;
  } catch (error) {
    assert.ok(error instanceof Error);
    assert.ok(!error.message.includes(TOKEN), error.message);
    assert.doesNotMatch(error.message, /^fetch failed$/);
    return error;
  }
  throw new Error("expected the call to fail");
}

describe("Hetzner Cloud API failures", function () {
  this.timeout(20_000);
  const closers: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const close of closers.splice(0)) await close();
  });

  it("names the endpoint and the refused connection", async () => {
    const gone = net.createServer();
    await new Promise<void>((resolve) => gone.listen(0, "127.0.0.1", resolve));
    const { port } = gone.address() as AddressInfo;
    await new Promise((resolve) => gone.close(resolve));
    const error = await failure(
      new HcloudClient({ token: TOKEN, baseUrl: `http://127.0.0.1:${port}/v1` }).listServers({ labelSelector: "nodefleet.io/cluster=c1" }),
    );
    assert.ok(error instanceof HcloudRequestError);
    assert.equal(error.message, `Hetzner Cloud API GET http://127.0.0.1:${port}/v1/servers failed: connect ECONNREFUSED 127.0.0.1:${port}`);
    assert.equal(error.endpoint, `GET http://127.0.0.1:${port}/v1/servers`);
  });

  it("names a DNS failure by its code and message", async () => {
    const fetchStub = (async () => {
      throw new TypeError("fetch failed", {
        cause: Object.assign(new Error("getaddrinfo ENOTFOUND api.example.invalid"), { code: "ENOTFOUND" }),
      });
    }) as unknown as typeof fetch;
    const error = await failure(
      new HcloudClient({ token: TOKEN, baseUrl: "https://api.example.invalid/v1", fetch: fetchStub }).listServerTypes(),
    );
    assert.equal(
      error.message,
      "Hetzner Cloud API GET https://api.example.invalid/v1/server_types failed: getaddrinfo ENOTFOUND api.example.invalid",
    );
  });

  it("names a call that got no answer in time", async () => {
    const silent = await serve(() => {
      // never answers
    });
    closers.push(silent.close);
    const error = await failure(new HcloudClient({ token: TOKEN, baseUrl: silent.baseUrl, timeoutMs: 300 }).findNetwork("c1-network"));
    assert.equal(error.message, `Hetzner Cloud API GET ${silent.baseUrl}/networks failed: no answer within 0.3 s`);
  });

  it("names an answer cut short, and one that is not JSON, instead of reading it as an empty list", async () => {
    const cut = await serve((_request, response) => {
      response.writeHead(200, { "content-type": "application/json", "content-length": "1000" });
      response.write('{"servers": [');
      setTimeout(() => response.socket?.destroy(), 20);
    });
    closers.push(cut.close);
    const cutError = await failure(new HcloudClient({ token: TOKEN, baseUrl: cut.baseUrl }).listServers({}));
    assert.ok(cutError instanceof HcloudRequestError);
    assert.match(cutError.message, new RegExp(`^Hetzner Cloud API GET ${cut.baseUrl.replace(/[.]/g, "\\.")}/servers failed: \\S`));
    assert.doesNotMatch(cutError.message, /failed: fetch failed$/);

    const html = await serve((_request, response) => {
      response.writeHead(200, { "content-type": "text/html" });
      response.end("<html>maintenance</html>");
    });
    closers.push(html.close);
    const htmlError = await failure(new HcloudClient({ token: TOKEN, baseUrl: html.baseUrl }).listServers({}));
    assert.equal(
      htmlError.message,
      `Hetzner Cloud API GET ${html.baseUrl}/servers failed: HTTP 200 with an answer that is not a JSON object`,
    );
  });

  it("names the endpoint of an error answer, keeping its status and code", async () => {
    const refusing = await serve((request, response) => {
      const status = request.url!.startsWith("/v1/servers/7") ? 404 : 503;
      response.writeHead(status, { "content-type": "application/json" });
      response.end(JSON.stringify({ error: { code: status === 404 ? "not_found" : "unavailable", message: "try later" } }));
    });
    closers.push(refusing.close);
    const client = new HcloudClient({ token: TOKEN, baseUrl: refusing.baseUrl });
    const error = await failure(client.listDatacenters());
    assert.ok(error instanceof HcloudApiError);
    assert.equal(error.status, 503);
    assert.equal(error.code, "unavailable");
    assert.equal(error.message, `Hetzner Cloud API 503 unavailable: try later (GET ${refusing.baseUrl}/datacenters)`);
    // A delete of a server already gone still counts as done.
    await client.deleteServer(7);
  });

  it("leaves credentials in the base URL out of the endpoint it names", async () => {
    const fetchStub = (async () => {
      throw new TypeError("fetch failed", {
        cause: Object.assign(new Error("connect ECONNREFUSED 10.0.0.1:443"), { code: "ECONNREFUSED" }),
      });
    }) as unknown as typeof fetch;
    const error = await failure(
      new HcloudClient({ token: TOKEN, baseUrl: "https://user:secret@hcloud.example/v1", fetch: fetchStub }).listServers({}),
    );
    assert.ok(!error.message.includes("secret"), error.message);
    assert.match(error.message, /GET https:\/\/hcloud\.example\/v1\/servers failed/);
  });
});
