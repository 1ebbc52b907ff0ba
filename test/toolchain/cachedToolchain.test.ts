/**
 * `npm run toolchain` with every piece cached asks the network nothing: run against a module proxy
 * on 127.0.0.1 that counts what it is asked, it reports every buildable piece cached and the proxy
 * sees no request (a blocked piece is probed only with --probe).
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { REPOSITORY_ROOT } from "../support/serveProcess";
import { missingTools, skipUnlessAvailable } from "../support/toolchainRequirement";

describe("npm run toolchain when everything is cached", function () {
  this.timeout(300_000);

  it("reports each piece cached and asks the module proxy nothing", async function () {
    skipUnlessAvailable(
      this,
      missingTools(
        "pulumi",
        "pulumi-language-nodejs",
        "pulumi-resource-hcloud",
        "pulumi-resource-command",
        "pulumi-resource-kubernetes",
        "pulumi-resource-random",
        "pulumi-resource-time",
        "etcd",
        "kube-apiserver",
        "kubectl",
        "helm",
        "nodefleet-karpenter",
      ),
    );
    const asked: string[] = [];
    const proxy = createServer((request, response) => {
      asked.push(request.url ?? "");
      response.writeHead(404).end();
    });
    await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
    try {
      const url = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
      // Asynchronously: the proxy on this event loop must be able to answer (and count) while it runs.
      const run = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) =>
        execFile(
          process.execPath,
          [join(REPOSITORY_ROOT, "toolchain", "build.mjs"), "--json"],
          { cwd: REPOSITORY_ROOT, env: { ...process.env, GOPROXY: url, GOSUMDB: "off" }, timeout: 240_000 },
          (error, stdout, stderr) => resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
        ),
      );
      assert.equal(run.code, 0, run.stderr);
      const { pieces } = JSON.parse(run.stdout) as { pieces: Array<{ name: string; status: string }> };
      for (const piece of pieces) assert.ok(piece.status === "cached" || piece.status === "blocked", `${piece.name}: ${piece.status}`);
      assert.deepEqual(asked, [], "no request reached the module proxy");
    } finally {
      proxy.close();
    }
  });
});
