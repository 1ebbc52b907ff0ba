/**
 * HTTPS with certificate files: the scaling API (fake engine, 127.0.0.1) serves the pair it was
 * given, serves a renewed pair (another CA's) once the files are replaced, keeps the old pair when
 * the new files do not match, and refuses a start with an unreadable certificate, naming the file.
 */
import { strict as assert } from "node:assert";
import { copyFileSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import * as https from "node:https";
import { join } from "node:path";
import { ensurePki, type ClusterPki } from "../../../automation/local/pki";
import { TlsFilesError, readTlsFiles } from "../../../automation/api/tlsFiles";
import { TOKEN, eventually, startTestApi, tempDataDir, type TestApi } from "../../support/apiHarness";

/** GET /api/v1/clusters/example over HTTPS trusting only `caFile`; the status, or the TLS error's code. */
function getWithCa(port: number, caFile: string): Promise<number | string> {
  return new Promise((resolve) => {
    const request = https.request(
      {
        host: "127.0.0.1",
        port,
        path: "/api/v1/clusters/example",
        ca: readFileSync(caFile),
        agent: false,
        headers: { authorization: `Bearer ${TOKEN}` },
      },
      (response) => {
        response.resume();
        resolve(response.statusCode ?? 0);
      },
    );
    request.on("error", (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
    request.end();
  });
}

describe("HTTPS with certificate files reloaded on change", function () {
  let first: ClusterPki;
  let second: ClusterPki;
  let dir: string;
  let api: TestApi | undefined;
  const files = () => ({ certFile: join(dir, "tls.crt"), keyFile: join(dir, "tls.key") });
  /** Replaces a file as a Secret volume does: a new file renamed over the old. */
  const replace = (from: string, to: string) => {
    copyFileSync(from, `${to}.next`);
    renameSync(`${to}.next`, to);
  };

  before(() => {
    const root = tempDataDir("nodefleet-tls-");
    first = ensurePki(join(root, "first"));
    second = ensurePki(join(root, "second"));
  });
  beforeEach(() => {
    dir = tempDataDir("nodefleet-tls-files-");
    copyFileSync(first.apiserverCert, files().certFile);
    copyFileSync(first.apiserverKey, files().keyFile);
  });
  afterEach(async () => api?.close());

  it("serves the renewed certificate once the files change, and keeps the old one for a mismatched pair", async () => {
    api = await startTestApi({ tls: { ...files(), reloadIntervalMs: 50 } });
    const port = (api.app.server.address() as { port: number }).port;
    assert.equal(await getWithCa(port, first.caCert), 200);
    assert.notEqual(await getWithCa(port, second.caCert), 200, "the second CA does not know the first certificate");

    // A certificate without its key: refused, the first pair stays.
    replace(second.apiserverCert, files().certFile);
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(await getWithCa(port, first.caCert), 200, "a mismatched pair is not applied");

    replace(second.apiserverKey, files().keyFile);
    await eventually(async () => ((await getWithCa(port, second.caCert)) === 200 ? true : undefined));
    assert.notEqual(await getWithCa(port, first.caCert), 200, "the first certificate is no longer served");

    const metrics = (await api.app.inject({ method: "GET", url: "/metrics" })).body;
    const count = (result: string) =>
      Number(new RegExp(`^nodefleet_tls_reloads_total\\{result="${result}"\\} (\\d+)$`, "m").exec(metrics)?.[1] ?? 0);
    assert.ok(count("refused") >= 1, `the mismatched pair is counted as refused:\n${metrics}`);
    assert.ok(count("reloaded") >= 1, "the renewed pair is counted as reloaded");
  });

  it("refuses an unreadable or mismatched pair naming the variable and the file, never the content", () => {
    assert.throws(
      () => readTlsFiles({ certFile: join(dir, "absent.crt"), keyFile: files().keyFile }),
      (error: unknown) => {
        assert.ok(error instanceof TlsFilesError);
        assert.match(error.message, /NODEFLEET_TLS_CERT_FILE .*absent\.crt cannot be read \(ENOENT\)/);
        return true;
      },
    );
    writeFileSync(files().keyFile, readFileSync(second.apiserverKey));
    assert.throws(
      () => readTlsFiles(files()),
      (error: unknown) =>
        error instanceof TlsFilesError &&
        /must be a PEM certificate and its private key/.test(error.message) &&
        !error.message.includes("PRIVATE KEY"),
    );
  });
});
