/** `nodefleet local up` on bad ground: a busy port or a missing toolchain is named, and nothing is left running or locked. */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ControlPlaneError, startControlPlane } from "../../../automation/local/controlPlane";
import { LocalCloudError, startLocalCloud } from "../../../automation/local/localCloud";
import { BIN } from "../../support/serveProcess";
import { freePort } from "../../../automation/local/freePort";
import { missingTools, skipUnlessAvailable } from "../../support/toolchainRequirement";

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
    await assert.rejects(
      startLocalCloud({ dataDir: dir, hcloudPort: busyPort, logger: quiet }),
      (error: unknown) => error instanceof LocalCloudError && error.message.includes(`127.0.0.1:${busyPort}`),
    );
    // The failed start released the data directory: the next attempt gets past the lock (and fails on the port again).
    await assert.rejects(startLocalCloud({ dataDir: dir, hcloudPort: busyPort, logger: quiet }), LocalCloudError);
  });

  it("names a busy control-plane port kept from an earlier start, and releases its lock", async function () {
    skipUnlessAvailable(this, missingTools("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"));
    // The cluster of this data directory listened there before; now another process does.
    mkdirSync(join(dir, "local", "control-plane"), { recursive: true });
    writeFileSync(
      join(dir, "local", "control-plane", "ports.json"),
      JSON.stringify({ etcdClient: await freePort(), etcdPeer: await freePort(), api: busyPort }),
    );
    await assert.rejects(
      startLocalCloud({ dataDir: dir, hcloudPort: 0, logger: quiet }),
      (error: unknown) =>
        error instanceof ControlPlaneError && error.message.includes(`127.0.0.1:${busyPort}, the control plane's kube-apiserver's port`),
    );
    await assert.rejects(
      startLocalCloud({ dataDir: dir, hcloudPort: 0, logger: quiet }),
      ControlPlaneError,
      "the failed start released the data directory",
    );
  });

  it("says to run `npm run toolchain` when the control plane's binaries are missing", async function () {
    await assert.rejects(
      startControlPlane({ dir: join(dir, "cp"), env: { PATH: "/nonexistent", NODEFLEET_TOOLCHAIN_DIR: join(dir, "no-toolchain") } }),
      (error: unknown) =>
        error instanceof ControlPlaneError &&
        /etcd, kube-apiserver, kube-controller-manager, kube-scheduler not found: run `npm run toolchain`/.test(error.message),
    );
  });

  it("`local up` without a toolchain: one line saying to run `npm run toolchain`, a non-zero exit, and nothing started or written", function () {
    const result = spawnSync(process.execPath, [BIN, "local", "up", "--data-dir", dir, "--hcloud-port", "0", "--project-dir", dir], {
      env: { PATH: "/nonexistent", NODEFLEET_TOOLCHAIN_DIR: join(dir, "no-toolchain"), HOME: dir },
      encoding: "utf8",
      timeout: 60_000,
    });
    assert.notEqual(result.status, 0, result.stderr);
    // Progress notes start "nodefleet local:"; the error is the CLI's one "nodefleet:" line.
    const errors = result.stderr.split("\n").filter((line) => line.trim() !== "" && !line.startsWith("nodefleet local:"));
    assert.equal(errors.length, 1, result.stderr);
    assert.match(errors[0]!, /run `npm run toolchain`/);
    assert.equal(existsSync(join(dir, "local")), false, "nothing was written to the data directory");
  });
});
