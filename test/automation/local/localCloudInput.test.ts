/** `nodefleet local up` on bad ground: a busy port or a missing toolchain is named, and nothing is left running or locked. */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ControlPlaneError, startControlPlane } from "../../../automation/local/controlPlane";
import { LocalCloudError, startLocalCloud } from "../../../automation/local/localCloud";

const quiet = { info() {}, warn() {} };

describe("local cloud: bad input", function () {
  let dir: string;
  let busy: Server;
  let busyPort: number;

  beforeEach(async function () {
    dir = mkdtempSync(join(tmpdir(), "nodefleet-local-input-"));
    busy = createServer();
    await new Promise<void>((resolve) => busy.listen(0, "127.0.0.1", resolve));
    busyPort = (busy.address() as { port: number }).port;
  });

  afterEach(async function () {
    await new Promise((resolve) => busy.close(resolve));
    rmSync(dir, { recursive: true, force: true });
  });

  it("names a busy port for the fake Hetzner API, and releases its lock", async function () {
    await assert.rejects(startLocalCloud({ dataDir: dir, hcloudPort: busyPort, logger: quiet }), (error: unknown) => error instanceof LocalCloudError && error.message.includes(`127.0.0.1:${busyPort}`));
    // The failed start released the data directory: the next attempt gets past the lock (and fails on the port again).
    await assert.rejects(startLocalCloud({ dataDir: dir, hcloudPort: busyPort, logger: quiet }), LocalCloudError);
  });

  it("says to run `npm run toolchain` when the control plane's binaries are missing", async function () {
    await assert.rejects(
      startControlPlane({ dir: join(dir, "cp"), env: { PATH: "/nonexistent", NODEFLEET_TOOLCHAIN_DIR: join(dir, "no-toolchain") } }),
      (error: unknown) => error instanceof ControlPlaneError && /etcd, kube-apiserver, kube-controller-manager, kube-scheduler not found: run `npm run toolchain`/.test(error.message),
    );
  });
});
