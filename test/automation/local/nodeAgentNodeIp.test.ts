/**
 * The node agent's machine waits for its private address as the join script does (nodeIp.ts): no
 * join while the hot-plugged NIC is not up, and the script's failure once its wait is over. Without
 * a control plane: neither case gets as far as the join's first request.
 */
import assert from "node:assert/strict";
import { encodeK0sJoinToken } from "../../../components/bootstrap/k0sJoinToken";
import { renderK0sWorkerCloudConfig } from "../../../components/bootstrap/k0sWorkerCloudConfig";
import { kubeletSchema } from "../../../components/fleet/fleetSpec";
import { NodeAgent } from "../../../automation/local/nodeAgent";
import type { FakeServer } from "../../../automation/local/fakeHcloud/fakeHcloudState";

const CA = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";

function server(waitSeconds: number, nicUpInMs: number): FakeServer {
  const userData = renderK0sWorkerCloudConfig({
    k0sVersion: "v1.33.4+k0s.0",
    // Nothing listens there: a join that got as far as its first request would fail as transient.
    joinToken: encodeK0sJoinToken({ apiServer: "https://127.0.0.1:9", caCertificate: CA, token: "abcdef.0123456789abcdef" }),
    hostname: "c1-k0123456789ab",
    providerID: "nodefleet:///c1/k0123456789ab",
    labels: {},
    taints: [],
    kubelet: kubeletSchema.parse({}),
    nodeIp: { subnet: "10.0.1.0/24" },
  }).replace("NODEFLEET_NODE_IP_WAIT_SECONDS:-300", `NODEFLEET_NODE_IP_WAIT_SECONDS:-${waitSeconds}`);
  return {
    id: 7,
    name: "c1-k0123456789ab",
    status: "running",
    created: new Date().toISOString(),
    labels: {},
    serverType: "cx22",
    location: "fsn1",
    image: "ubuntu-24.04",
    userData,
    ipv4: "203.0.113.7",
    ipv6: null,
    privateNets: [{ network: 4, ip: "10.0.1.5", alias_ips: [], mac_address: "86:00:00:00:00:07" }],
    nicsUpAt: { "4": Date.now() + nicUpInMs },
    placementGroup: null,
    deleteProtection: false,
    rebuildProtection: false,
  };
}

function agentOf(s: FakeServer) {
  const warnings: string[] = [];
  const agent = new NodeAgent(() => [s], { info() {}, warn: (record, message) => warnings.push(`${message} ${JSON.stringify(record)}`) });
  return { agent, warnings };
}

describe("node agent: the private address the join script waits for", function () {
  it("does not join while the private interface is not up, and keeps waiting within the script's wait", async function () {
    const { agent, warnings } = agentOf(server(300, 60_000));
    await agent.tick();
    await agent.tick();
    assert.equal(agent.machine(7), undefined, "neither joining nor refused: still waiting");
    assert.deepEqual(warnings, []);
  });

  it("fails as the script does once its wait is over without the address", async function () {
    const { agent } = agentOf(server(0, 60_000));
    await agent.tick();
    const machine = agent.machine(7);
    assert.equal(machine?.state, "refused");
    assert.match((machine as { reason: string }).reason, /no address in the private subnet 10\.0\.1\.0\/24 after 0s/);
  });

  it("goes on to the join once the interface is up", async function () {
    const { agent, warnings } = agentOf(server(300, -1));
    await agent.tick();
    // The join's first request fails (nothing listens): it got past the wait.
    assert.equal(agent.machine(7), undefined);
    assert.ok(
      warnings.some((w) => /joining failed for now.*ECONNREFUSED/.test(w)),
      warnings.join("\n"),
    );
  });
});
