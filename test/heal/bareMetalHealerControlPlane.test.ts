/**
 * Issue 38 part 5, as `serve` wires it (heal/serviceHealer.ts): the stack's Robot pool, its Nodes in
 * the local control plane's real kube-apiserver, the local cloud's fake Robot webservice. A NotReady
 * Node is reset and its step written beside kubelet's conditions; the pool's other NotReady Node
 * waits its turn until the first is Ready again. No kubelet runs: the test sets the Nodes' status.
 */
import { strict as assert } from "node:assert";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ControlPlane, startControlPlane } from "../../automation/local/controlPlane";
import { type FakeRobot, buildFakeRobot } from "../../automation/local/fakeRobot/fakeRobotApi";
import { kube } from "../../automation/local/kubeClient";
import { serviceHealer } from "../../automation/heal/serviceHealer";
import type { BareMetalHealer } from "../../automation/heal/bareMetalHealer";
import { kubeconfigCredentials, kubernetesApiRequest } from "../../components/kubernetes/kubernetesApiClient";
import { parseFleetSpec } from "../../components/fleet/fleetSpec";
import { rawFleetConfig } from "../support/fleetConfigFixture";
import { missingTools, skipUnlessAvailable } from "../support/toolchainRequirement";
import { until } from "../support/until";

const USER = "#ws+healer";
const PASSWORD = "healer-control-plane-password";

interface NodeCondition {
  type: string;
  status: string;
  reason?: string;
}

describe("bare-metal healing on the local control plane", function () {
  this.timeout(300_000);
  let dir: string;
  let plane: ControlPlane;
  let robot: FakeRobot;
  let healer: BareMetalHealer | undefined;

  // Polled every 200 ms for a minute: the healer checks every 200 ms here.
  const waitFor = <T>(what: string, probe: () => Promise<T | undefined>) => until(what, probe, 60_000, () => "", 200);
  const conditions = async (name: string) =>
    ((await kube(plane.admin, "GET", `/api/v1/nodes/${name}`)) as { status: { conditions: NodeCondition[] } }).status.conditions;
  const remediation = async (name: string) => (await conditions(name)).find((c) => c.type === "NodefleetRemediation");
  const resets = (serverNumber: number) =>
    robot.state
      .servers()
      .find((s) => s.serverNumber === serverNumber)!
      .resets.map((r) => r.type);
  async function setReady(name: string, ready: boolean, since: Date) {
    await kube(plane.admin, "PATCH", `/api/v1/nodes/${name}/status`, {
      status: {
        conditions: [
          {
            type: "Ready",
            status: ready ? "True" : "False",
            reason: ready ? "KubeletReady" : "KubeletNotReady",
            message: "set by the test",
            lastHeartbeatTime: since.toISOString(),
            lastTransitionTime: since.toISOString(),
          },
        ],
      },
    });
  }

  before(async function () {
    skipUnlessAvailable(this, missingTools("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"));
    dir = mkdtempSync(join(tmpdir(), "nodefleet-heal-"));
    plane = await startControlPlane({ dir: join(dir, "control-plane") });
    robot = buildFakeRobot({ user: USER, password: PASSWORD, stateFile: join(dir, "robot.json"), servers: 2 });
  });
  after(async function () {
    await healer?.stop();
    await robot?.app.close();
    await plane?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("resets the first NotReady Node of the pool, records it on the Node, and takes the next once it is Ready", async function () {
    const robotUrl = await robot.app.listen({ port: 0, host: "127.0.0.1" });
    const [first, second] = robot.state.servers().map((s) => s.serverNumber) as [number, number];
    const pool = {
      name: "metal",
      provider: "hetzner-robot",
      mode: "static",
      servers: [
        { serverNumber: first, name: "a" },
        { serverNumber: second, name: "b" },
      ],
      sshKeyFingerprints: ["15:28:b0:03:95:f0:77:b3:10:56:15:6b:77:22:a5:bb"],
    };
    const fleet = parseFleetSpec(rawFleetConfig({ pools: [pool] }));
    const clusterId = fleet.cluster.id;
    const [nodeA, nodeB] = [`${clusterId}-metal-a`, `${clusterId}-metal-b`];
    const longAgo = new Date(Date.now() - 10 * 60_000);
    for (const name of [nodeA, nodeB]) {
      await kube(plane.admin, "POST", "/api/v1/nodes", { metadata: { name, labels: { "nodefleet.io/cluster": clusterId } } });
      await setReady(name, false, longAgo);
    }
    const kubeconfig = readFileSync(plane.adminKubeconfig, "utf8");
    const counted: string[] = [];
    healer = serviceHealer({
      settings: { mode: "on", notReadyForMs: 60_000, intervalMs: 200 },
      fleet: () => fleet,
      kubeconfig: () => kubeconfig,
      listNodes: () =>
        kubernetesApiRequest(kubeconfigCredentials(kubeconfig), "GET", `/api/v1/nodes?labelSelector=nodefleet.io%2Fcluster%3D${clusterId}`),
      env: { HROBOT_USER: USER, HROBOT_PASSWORD: PASSWORD, HROBOT_URL: robotUrl },
      metrics: { remediation: (_c, p, action) => counted.push(`${p}:${action}`), cloudRequest: () => undefined },
      logger: { info: () => undefined, warn: () => undefined, error: () => undefined } as never,
    });
    assert.ok(healer, "a stack with a Robot pool gets a healer");
    healer.start();

    const onLadder = await waitFor("the first Node's remediation condition", () => remediation(nodeA));
    assert.equal(onLadder.status, "True");
    assert.equal(onLadder.reason, "SoftwareReset");
    assert.deepEqual(resets(first), ["sw"]);
    assert.ok(
      (await conditions(nodeA)).some((c) => c.type === "Ready"),
      "kubelet's Ready condition is kept beside it",
    );
    await new Promise((resolve) => setTimeout(resolve, 1000));
    assert.equal(await remediation(nodeB), undefined, "the pool's second NotReady Node waits");
    assert.deepEqual(resets(second), []);

    await setReady(nodeA, true, new Date());
    const healed = await waitFor("the first Node's recovery", async () => {
      const condition = await remediation(nodeA);
      return condition?.status === "False" ? condition : undefined;
    });
    assert.equal(healed.reason, "Healthy");
    const next = await waitFor("the second Node's turn", () => remediation(nodeB));
    assert.equal(next.reason, "SoftwareReset");
    assert.deepEqual(resets(second), ["sw"]);
    assert.deepEqual(counted, ["metal:sw-reset", "metal:recovered", "metal:sw-reset"]);
  });
});
