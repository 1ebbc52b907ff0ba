/**
 * The `nodefleet-karpenter` child process, with a stand-in script for the binary: the settings it
 * gets (kubeconfig, namespace, no leader election unless asked for, free metrics and health ports), the pid file
 * while it runs, a stop that leaves nothing behind, a leftover of a run killed outright stopped by
 * the next start, a second start beside a live one refused, and the missing binary named with the
 * command that builds it.
 */
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  KarpenterControllerError,
  karpenterControllerBinary,
  startKarpenterController,
  takeOverPidFile,
} from "../../../automation/local/karpenterController";
import { until } from "../../support/until";

/** Writes its environment to `<dir>/env-<pid>`, then waits; exits 0 on SIGTERM. */
const STAND_IN = `#!/bin/sh
env > "$(dirname "$0")/env-$$"
echo "controller started"
trap 'exit 0' TERM
while :; do sleep 0.1; done
`;

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return !readFileSync(`/proc/${pid}/stat`, "utf8").includes(") Z ");
  } catch {
    return false;
  }
};

describe("the nodefleet-karpenter process", function () {
  let dir: string;
  let bin: string;
  let env: NodeJS.ProcessEnv;
  const others: ChildProcess[] = [];

  beforeEach(function () {
    dir = mkdtempSync(join(tmpdir(), "nodefleet-karpenter-controller-"));
    bin = join(dir, "bin");
    mkdirSync(bin);
    writeFileSync(join(bin, "nodefleet-karpenter"), STAND_IN);
    chmodSync(join(bin, "nodefleet-karpenter"), 0o755);
    env = { PATH: `${bin}:/usr/bin:/bin`, NODEFLEET_TOOLCHAIN_DIR: join(dir, "no-toolchain") };
  });

  /** The environment the stand-in of process `pid` wrote, once complete; `output` is shown if it never comes. */
  const standInEnvironment = (pid: number, output: () => string) =>
    until(
      "the stand-in's environment",
      () => {
        const file = join(bin, `env-${pid}`);
        return existsSync(file) && readFileSync(file, "utf8").includes("HEALTH_PROBE_PORT") ? readFileSync(file, "utf8") : undefined;
      },
      10_000,
      output,
      50,
    );

  afterEach(function () {
    for (const child of others.splice(0)) child.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  });

  it("runs with the admin kubeconfig, its namespace, no leader election and free ports; stop() leaves no process or pid file", async function () {
    const pidFile = join(dir, "karpenter.json");
    let output = "";
    const controller = await startKarpenterController({
      kubeconfig: "/tmp/admin.kubeconfig",
      env,
      pidFile,
      onOutput: (c) => (output += c.toString()),
    });
    const pid = controller.child.pid!;
    const settings = await standInEnvironment(pid, () => output);
    assert.match(settings, /^KUBECONFIG=\/tmp\/admin\.kubeconfig$/m);
    assert.match(settings, /^SYSTEM_NAMESPACE=karpenter$/m);
    assert.match(settings, /^DISABLE_LEADER_ELECTION=true$/m);
    assert.match(settings, /^LOG_LEVEL=info$/m);
    assert.match(settings, new RegExp(`^METRICS_PORT=${controller.metricsPort}$`, "m"));
    assert.match(settings, new RegExp(`^HEALTH_PROBE_PORT=${controller.healthPort}$`, "m"));
    assert.notEqual(controller.metricsPort, controller.healthPort);
    assert.ok(![8080, 8081].includes(controller.metricsPort), "not Karpenter's default, the scaling API's port");
    await until(
      "its output",
      () => (controller.log().includes("controller started") ? true : undefined),
      10_000,
      () => output,
      50,
    );
    assert.ok(output.includes("controller started"), "onOutput sees what it writes");
    assert.deepEqual(JSON.parse(readFileSync(pidFile, "utf8")), { pid, binary: join(bin, "nodefleet-karpenter"), owner: process.pid });

    await controller.stop();
    assert.equal(await controller.exited, 0);
    assert.ok(!alive(pid), "the controller is gone");
    assert.ok(!existsSync(pidFile), "the pid file is gone");
  });

  it("runs with leader election on, on the Lease it is given, when asked (a replica of the chart's Deployment)", async function () {
    const controller = await startKarpenterController({
      kubeconfig: "/tmp/replica.kubeconfig",
      env: { ...env, DISABLE_LEADER_ELECTION: "true" },
      leaderElection: { name: "nodefleet-karpenter-leader-election", namespace: "karpenter" },
    });
    try {
      const pid = controller.child.pid!;
      const settings = await standInEnvironment(pid, () => controller.log());
      assert.match(settings, /^DISABLE_LEADER_ELECTION=false$/m, "the option wins over the environment");
      assert.match(settings, /^LEADER_ELECTION_NAME=nodefleet-karpenter-leader-election$/m);
      assert.match(settings, /^LEADER_ELECTION_NAMESPACE=karpenter$/m);
    } finally {
      await controller.stop();
    }
  });

  it("stops a controller left by a run that was killed outright, and refuses to start beside a live one", async function () {
    const pidFile = join(dir, "karpenter.json");
    const binary = join(bin, "nodefleet-karpenter");
    const leftover = spawn(binary, [], { stdio: "ignore", env });
    others.push(leftover);
    // Its owner: a process that has exited.
    const owner = spawn("/bin/true");
    await new Promise((resolve) => owner.once("exit", resolve));
    writeFileSync(pidFile, JSON.stringify({ pid: leftover.pid, binary, owner: owner.pid }));
    const controller = await startKarpenterController({ kubeconfig: "/tmp/admin.kubeconfig", env, pidFile });
    await until(
      "the leftover killed",
      () => (alive(leftover.pid!) ? undefined : true),
      10_000,
      () => "",
      50,
    );

    // Now another live process owns the running controller: a second start is refused.
    const liveOwner = spawn("/bin/sleep", ["30"]);
    others.push(liveOwner);
    writeFileSync(pidFile, JSON.stringify({ pid: controller.child.pid, binary, owner: liveOwner.pid }));
    assert.throws(
      () => takeOverPidFile(pidFile),
      (error: unknown) =>
        error instanceof KarpenterControllerError && /already runs here \(pid \d+, started by pid \d+\)/.test(error.message),
    );
    await assert.rejects(startKarpenterController({ kubeconfig: "/tmp/admin.kubeconfig", env, pidFile }), KarpenterControllerError);
    assert.ok(alive(controller.child.pid!), "the live controller is left alone");
    await controller.stop();
  });

  it("names the missing binary and the command that builds it", function () {
    assert.throws(
      () => karpenterControllerBinary({ PATH: "/usr/bin:/bin", NODEFLEET_TOOLCHAIN_DIR: join(dir, "none") }),
      /nodefleet-karpenter is not on PATH or in the toolchain cache: run `npm run toolchain`/,
    );
    assert.equal(karpenterControllerBinary(env), join(bin, "nodefleet-karpenter"));
  });
});
