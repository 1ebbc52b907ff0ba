/**
 * A Robot pool in the local stack (issue #38 part 3), with the real engine: `nodefleet local up
 * --robot-machines` runs the fake Robot account's servers as machines and writes the `local` stack
 * with a pool of two of them; `pulumi up --stack local` (the real CLI, nodefleet's programs and
 * plugins, the command provider over real SSH) activates rescue with the pool's uploaded key, resets
 * each server into the rescue system, installs it with installimage (the stand-in, checked against
 * installimage's rules) pinned to the host key nodefleet generated, and runs the k0s self-join on
 * the installed system, whose kubelet joins through the node agent's TLS bootstrap: two Ready Nodes
 * with the pool's labels and taints, the join token gone from the machines, the host untouched.
 *
 * A change of image reinstalls one member a run, drained first. The order is read where it happens:
 * a hook on the fake Robot webservice looks at the cluster when a rescue activation or a reset of a
 * member's server arrives, before the fake answers it, and records whether the member's Node was
 * cordoned and which pods were still bound to it.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse } from "yaml";
import { KubeApiError, kube } from "../../../automation/local/kubeClient";
import { type LocalCloud, startLocalCloud } from "../../../automation/local/localCloud";
import { LOCAL_ROBOT_POOL, runPulumi } from "../../../automation/local/localStack";
import { type PoolNode, editLocalPool, isReady, poolNodes } from "../../support/localFleet";
import { localStackProject } from "../../support/localStackProject";
import { skipUnlessRobotMachines, stopLocalCloudLeavingNoMachine } from "../../support/localRobotMachines";
import { until } from "../../support/until";

const UP = ["up", "--stack", "local", "--yes", "--skip-preview", "--non-interactive"];

interface PodItem {
  metadata: { name: string; deletionTimestamp?: string; ownerReferences?: Array<{ kind: string }> };
  spec: { nodeName?: string };
  status: { conditions?: Array<{ type: string; status: string }> };
}

/** What the cluster showed when a rescue activation or a reset of a member's server reached the fake Robot. */
interface RescueStep {
  /** The `pulumi up` it came in (its index in the test's runs). */
  readonly run: number;
  readonly serverNumber: number;
  /** `POST /boot/{n}/rescue` or `POST /reset/{n}`. */
  readonly request: string;
  /** The member's Node: cordoned, not cordoned, or gone. */
  readonly node: "cordoned" | "schedulable" | "absent";
  /** Pods still bound to that Node, DaemonSet pods aside. */
  readonly pods: readonly string[];
}

describe("a Robot pool in the local stack: installed through rescue and joined (real engine, Robot machines)", function () {
  this.timeout(900_000);
  let dir: string;
  let project: string;
  let cloud: LocalCloud | undefined;
  const warnings: string[] = [];
  const logger = { info() {}, warn: (_fields: unknown, message: string) => void warnings.push(message) };
  /** The Node of each member's server, once known; rescue steps are recorded for these while `run` is set. */
  const nodeOfServer = new Map<number, string>();
  const rescueSteps: RescueStep[] = [];
  let run: number | undefined;

  /** At a rescue activation or reset of a member's server, before the fake answers: its Node's cordon and the pods on it. */
  const observeRescueStep = async (serverNumber: number, request: string): Promise<void> => {
    const name = nodeOfServer.get(serverNumber);
    if (run === undefined || name === undefined) return;
    const at = run;
    let node: RescueStep["node"] = "absent";
    try {
      const found = (await kube(cloud!.plane.admin, "GET", `/api/v1/nodes/${name}`)) as PoolNode;
      node = found.spec.unschedulable === true ? "cordoned" : "schedulable";
    } catch (error) {
      if (!(error instanceof KubeApiError && error.status === 404)) throw error;
    }
    const selector = encodeURIComponent(`spec.nodeName=${name}`);
    const bound = ((await kube(cloud!.plane.admin, "GET", `/api/v1/pods?fieldSelector=${selector}`)) as { items: PodItem[] }).items;
    rescueSteps.push({
      run: at,
      serverNumber,
      request,
      node,
      pods: bound.filter((p) => !(p.metadata.ownerReferences ?? []).some((o) => o.kind === "DaemonSet")).map((p) => p.metadata.name),
    });
  };

  before(async function () {
    skipUnlessRobotMachines(this);
    dir = mkdtempSync(join(tmpdir(), "nodefleet-robot-pool-"));
    project = localStackProject(join(dir, "project"));
    cloud = await startLocalCloud({
      dataDir: join(dir, "data"),
      hcloudPort: 0,
      agentIntervalMs: 300,
      logger,
      projectDir: project,
      robotMachines: true,
      onFakeRobot: (fake) =>
        fake.app.addHook("onRequest", async (request) => {
          const path = request.url.split("?")[0]!;
          const match = /^\/(?:boot\/(\d+)\/rescue|reset\/(\d+))$/.exec(path);
          if (request.method === "POST" && match)
            await observeRescueStep(Number(match[1] ?? match[2]), match[1] ? "POST /boot/{n}/rescue" : "POST /reset/{n}");
        }),
    });
  });

  after(async function () {
    await stopLocalCloudLeavingNoMachine(cloud, dir);
  });

  const robotServers = () => cloud!.robot.state.servers().slice(0, 2);

  it("writes the Robot pool into the local stack: two adopted servers and the key it uploads, no secret", function () {
    const text = readFileSync(cloud!.stackFile!, "utf8");
    assert.doesNotMatch(text, /secure:|PRIVATE KEY/);
    const pools = (parse(text) as { config: { "nodefleet:pools": Array<Record<string, any>> } }).config["nodefleet:pools"];
    const robot = pools.find((p) => p.name === LOCAL_ROBOT_POOL)!;
    assert.equal(robot.provider, "hetzner-robot");
    assert.deepEqual(
      robot.servers.map((s: { serverNumber: number }) => s.serverNumber),
      robotServers().map((s) => s.serverNumber),
    );
    assert.match(robot.sshPublicKeys[0], /^ssh-ed25519 /);
    assert.match(cloud!.env.NODEFLEET_SSH_PRIVATE_KEY ?? "", /BEGIN OPENSSH PRIVATE KEY/);
  });

  it("pulumi up installs both servers through rescue and their Nodes join Ready through the self-join", async function () {
    const started = Date.now();
    await runPulumi(UP, project, cloud!.env).catch((error: Error) => {
      throw new Error(`${error.message}\nlocal cloud warnings:\n${warnings.join("\n")}`);
    });
    const upSeconds = (Date.now() - started) / 1000;
    const nodes = (await poolNodes(cloud!, LOCAL_ROBOT_POOL)).filter(isReady);
    assert.equal(nodes.length, 2, `two Ready Robot Nodes (warnings: ${warnings.join("; ")})`);
    for (const node of nodes) {
      assert.ok(
        node.spec.taints?.some((t) => t.key === "nodefleet.io/local" && t.value === "true" && t.effect === "NoSchedule"),
        JSON.stringify(node.spec.taints),
      );
      assert.ok(node.spec.providerID, `${node.metadata.name} has a providerID`);
    }
    for (const server of robotServers()) {
      // One boot into rescue, one into the installed system (the install script's reboot).
      assert.deepEqual(
        server.boots.map((b) => `${b.cause}:${b.into}`),
        // The delivered OS lets the deposited key in: the ladder's first rung, an ssh reboot, takes.
        ["reboot:rescue", "reboot:installed"],
        `server ${server.serverNumber}`,
      );
      assert.equal(server.resets.filter((r) => r.type === "power").length, 0, "never a power reset");
      const machine = cloud!.robotMachines!.machine(server.serverNumber);
      assert.equal(machine.system, "installed");
      const records = machine.current!.records().map((r) => `${r.tool} ${r.verb}`);
      for (const expected of ["k0s install", "k0s start", "k0sworker start"]) assert.ok(records.includes(expected), records.join("; "));
      assert.equal(machine.current!.ownFile("/etc/k0s/join-token"), undefined, "the join token removed");
      assert.match(machine.current!.ownFile("/var/lib/k0s/kubelet.conf") ?? "", /client-certificate: /);
    }
    const requests = [...cloud!.robot.requestCounts.values()].reduce((a, b) => a + b, 0);
    // Said for the benchmark (seconds to Ready, Robot requests per member).
    console.log(`      pulumi up to 2 Ready Robot Nodes: ${upSeconds.toFixed(1)} s, ${requests / 2} Robot requests per member`);
  });

  it("a second pulumi up changes nothing: no reset, no reinstall", async function () {
    const boots = robotServers().map((s) => s.boots.length);
    const output = await runPulumi([...UP, "--diff"], project, cloud!.env);
    assert.deepEqual(
      robotServers().map((s) => s.boots.length),
      boots,
    );
    assert.doesNotMatch(output, /RobotRescue.*(create|replace)/);
    assert.equal((await poolNodes(cloud!, LOCAL_ROBOT_POOL)).filter(isReady).length, 2);
  });

  it("a reinstall whose reboots do not reach rescue escalates ssh reboot, sw, hw (never power), and fails clearly after the last", async function () {
    const [first, second] = robotServers().map((s) => s.serverNumber) as [number, number];
    const before = new Map(robotServers().map((s) => [s.serverNumber, { boots: s.boots.length, resets: s.resets.length }]));
    // Each member's Node (the servers in order are members m1 and m2), with a pod on it for the drain to evict.
    const nodes = await poolNodes(cloud!, LOCAL_ROBOT_POOL);
    for (const [i, serverNumber] of [first, second].entries()) {
      const node = nodes.find((n) => n.metadata.name.endsWith(`m${i + 1}`));
      assert.ok(node, `member m${i + 1}'s Node: ${nodes.map((n) => n.metadata.name).join(", ")}`);
      nodeOfServer.set(serverNumber, node.metadata.name);
      await kube(cloud!.plane.admin, "POST", "/api/v1/namespaces/default/pods", {
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: `drain-probe-m${i + 1}`, labels: { app: "drain-probe" } },
        spec: {
          terminationGracePeriodSeconds: 0,
          nodeSelector: { "kubernetes.io/hostname": node.metadata.name },
          tolerations: [{ operator: "Exists" }],
          containers: [{ name: "app", image: "registry.invalid/pause:3.9" }],
        },
      });
    }
    await until(
      "both drain probes running on their Nodes",
      async () => {
        const selector = encodeURIComponent("app=drain-probe");
        const items = (
          (await kube(cloud!.plane.admin, "GET", `/api/v1/namespaces/default/pods?labelSelector=${selector}`)) as { items: PodItem[] }
        ).items;
        const healthy = items.filter(
          (p) => !p.metadata.deletionTimestamp && p.status.conditions?.some((c) => c.type === "Ready" && c.status === "True"),
        );
        return healthy.length === 2 ? true : undefined;
      },
      60_000,
    );
    // The first server's ssh reboot and sw reset come back into the installed system, its hw reset
    // reaches rescue; none of the second server's three reboots does.
    cloud!.robotMachines!.setResetsNotTaking(first, 2);
    cloud!.robotMachines!.setResetsNotTaking(second, 3);
    editLocalPool(cloud!, LOCAL_ROBOT_POOL, (pool) => (pool.image = "ubuntu-22.04"));
    let failure: Error | undefined;
    // The rollout reinstalls one member a run (maxUnavailable 1): the first, then the second.
    let runs = 0;
    try {
      for (; runs < 4 && !failure; runs++) {
        run = runs;
        await runPulumi([...UP, "--suppress-outputs"], project, cloud!.env).catch((error: Error) => (failure = error));
      }
    } finally {
      run = undefined;
    }
    assert.ok(failure, "the second server's reinstall failed");
    // One member a run: the first server's rescue steps all in the first run, the second's in the second.
    assert.equal(runs, 2, "the first run reinstalled the first member, the second run failed on the second");
    assert.deepEqual(
      [0, 1].map((r) => [...new Set(rescueSteps.filter((step) => step.run === r).map((step) => step.serverNumber))]),
      [[first], [second]],
      `one member's rescue a run: ${JSON.stringify(rescueSteps)}`,
    );
    // Drained first: at every rescue activation and reset, the member's Node was cordoned and its pod evicted.
    for (const serverNumber of [first, second]) {
      const steps = rescueSteps.filter((step) => step.serverNumber === serverNumber);
      assert.equal(steps[0]?.request, "POST /boot/{n}/rescue", `server ${serverNumber}: the rescue activation comes first`);
      for (const step of steps) {
        assert.equal(step.node, "cordoned", `server ${serverNumber}'s Node was cordoned at its ${step.request}`);
        assert.deepEqual(step.pods, [], `server ${serverNumber}'s pods were evicted before its ${step.request}`);
      }
    }
    assert.match(
      failure.message,
      new RegExp(
        `Robot server ${second} did not boot into the rescue system after ssh-reboot, sw, hw \\(ssh-reboot: came back into the installed system; sw: came back into the installed system; hw: came back into the installed system\\)`,
      ),
    );
    for (const server of robotServers()) {
      const since = before.get(server.serverNumber)!;
      const resets = server.resets.slice(since.resets).map((r) => r.type);
      assert.ok(!resets.includes("power") && !resets.includes("power_long"), `never a power reset: ${resets.join(", ")}`);
      const boots = server.boots.slice(since.boots).map((b) => `${b.cause}:${b.into}${b.took === false ? "(did not take)" : ""}`);
      if (server.serverNumber === first)
        assert.deepEqual(boots, ["reboot:installed(did not take)", "sw:installed(did not take)", "hw:rescue", "reboot:installed"]);
      else assert.deepEqual(boots, ["reboot:installed(did not take)", "sw:installed(did not take)", "hw:installed(did not take)"]);
    }
    // The first server runs its new install, joined again: Ready and uncordoned.
    const rejoined = (await poolNodes(cloud!, LOCAL_ROBOT_POOL)).find((n) => n.metadata.name === nodeOfServer.get(first));
    assert.ok(rejoined && isReady(rejoined), `the first member's Node Ready again: ${JSON.stringify(rejoined?.status.conditions)}`);
    assert.equal(rejoined.spec.unschedulable ?? false, false, "the first member's Node uncordoned after its reinstall");
  });

  it("removing a member stops its kubelet and removes its credentials before its Node goes: the box cannot rejoin", async function () {
    const [first, second] = robotServers().map((s) => s.serverNumber) as [number, number];
    const box = cloud!.robotMachines!.machine(first).current!;
    const leaving = (await poolNodes(cloud!, LOCAL_ROBOT_POOL)).find((n) => n.metadata.name.endsWith("m1"))!;
    assert.ok(leaving, "the first server's Node is there before its removal");
    assert.ok(box.ownFile("/var/lib/k0s/kubelet.conf"), "the box holds its kubelet's kubeconfig before");
    editLocalPool(
      cloud!,
      LOCAL_ROBOT_POOL,
      (pool) => (pool.servers = (pool.servers as Array<{ serverNumber: number }>).filter((s) => s.serverNumber !== first)),
    );
    // The same run finishes the second server's reinstall, which the previous test left failed.
    const seen = rescueSteps.length;
    run = 2;
    try {
      await runPulumi([...UP, "--suppress-outputs"], project, cloud!.env);
    } finally {
      run = undefined;
    }
    for (const step of rescueSteps.slice(seen)) {
      assert.equal(step.serverNumber, second, `only the second server is reinstalled: ${JSON.stringify(step)}`);
      assert.equal(step.node, "cordoned", `the second server's Node stayed cordoned at its ${step.request}`);
      assert.deepEqual(step.pods, [], `no pod on the second server's Node at its ${step.request}`);
    }
    const records = box.records().map((r) => `${r.tool} ${r.verb} ${r.subject}`.trim());
    assert.ok(records.includes("systemctl stop k0sworker.service"), `the node agent stopped: ${records.slice(-8).join("; ")}`);
    for (const path of ["/var/lib/k0s/kubelet.conf", "/var/lib/kubelet/pki/kubelet-client-current.pem", "/etc/k0s/join-token"])
      assert.equal(box.ownFile(path), undefined, `${path} removed from the box`);
    // The box stays (a Robot server is not deleted); a restart of its node agent, as at a reboot, joins nothing.
    execFileSync(cloud!.robotMachines!.machine(first).session!, [], {
      stdio: ["ignore", "pipe", "pipe"],
      env: { PATH: "/usr/sbin:/usr/bin:/sbin:/bin", SSH_ORIGINAL_COMMAND: "systemctl start k0sworker" },
    });
    await new Promise((resolve) => setTimeout(resolve, 15_000));
    const names = (await poolNodes(cloud!, LOCAL_ROBOT_POOL)).map((n) => n.metadata.name);
    assert.ok(!names.includes(leaving.metadata.name), `the removed member's Node stays gone: ${names.join(", ")}`);
    assert.ok(
      names.some((name) => name.endsWith("m2")),
      `the other member stays: ${names.join(", ")}`,
    );
    assert.equal(cloud!.robotMachines!.machine(second).system, "installed");
    // The second member's reinstall done: its Node Ready and uncordoned.
    const kept = await until(
      "the second member's Node Ready and uncordoned",
      async () => {
        const node = (await poolNodes(cloud!, LOCAL_ROBOT_POOL)).find((n) => n.metadata.name === nodeOfServer.get(second));
        return node && isReady(node) && node.spec.unschedulable !== true ? node : undefined;
      },
      60_000,
      () => JSON.stringify(rescueSteps.slice(seen)),
    );
    assert.ok(kept);
  });
});
