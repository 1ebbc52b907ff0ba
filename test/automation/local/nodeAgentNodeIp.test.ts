/**
 * The node agent's machine waits for its private address as the join script does (nodeIp.ts): no
 * join while the hot-plugged NIC is not up, and the script's failure once its wait is over. A
 * machine without public IPv4 joins only through the private network's NAT route. Without
 * a control plane: neither case gets as far as the join's first request.
 */
import assert from "node:assert/strict";
import { encodeK0sJoinToken } from "../../../components/bootstrap/k0sJoinToken";
import { renderK0sWorkerCloudConfig } from "../../../components/bootstrap/k0sWorkerCloudConfig";
import { kubeletSchema } from "../../../components/fleet/fleetSpec";
import { NodeAgent } from "../../../automation/local/nodeAgent";
import type { FakeServer } from "../../../automation/local/fakeHcloud/fakeHcloudState";

const CA = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";

/** What every machine here renders its user data from. */
const INPUTS = {
  k0sVersion: "v1.33.4+k0s.0",
  // Nothing listens there: a join that got as far as its first request would fail as transient.
  joinToken: encodeK0sJoinToken({ apiServer: "https://127.0.0.1:9", caCertificate: CA, token: "abcdef.0123456789abcdef" }),
  hostname: "c1-k0123456789ab",
  providerID: "nodefleet:///c1/k0123456789ab",
  labels: {},
  taints: [],
  kubelet: kubeletSchema.parse({}),
  nodeIp: { subnet: "10.0.1.0/24" },
};

function server(waitSeconds: number, nicUpInMs: number): FakeServer {
  const userData = renderK0sWorkerCloudConfig(INPUTS).replace(
    "NODEFLEET_NODE_IP_WAIT_SECONDS:-300",
    `NODEFLEET_NODE_IP_WAIT_SECONDS:-${waitSeconds}`,
  );
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

describe("node agent: a machine without public IPv4 (docs/networking.md)", function () {
  /** The server of `server()` without its public IPv4, its user data routing through the private network or not. */
  function privateOnly(egress: boolean): FakeServer {
    const base = server(300, -1);
    const userData = renderK0sWorkerCloudConfig({
      ...INPUTS,
      ...(egress ? { privateEgress: { gateway: "10.0.0.1", networkRange: "10.0.0.0/16" } } : {}),
    });
    return { ...base, ipv4: null, userData };
  }
  const agentWithRoutes = (s: FakeServer, routes: Array<{ destination: string; gateway: string }>) => {
    const warnings: string[] = [];
    const agent = new NodeAgent(
      () => [s],
      { info() {}, warn: (record, message) => warnings.push(`${message} ${JSON.stringify(record)}`) },
      { networkRoutes: (id) => (id === 4 ? routes : []) },
    );
    return { agent, warnings };
  };
  const NAT_ROUTE = { destination: "0.0.0.0/0", gateway: "10.0.2.2" };

  it("refuses one whose user data routes nothing through the private network: it could reach nothing", async function () {
    const { agent } = agentWithRoutes(privateOnly(false), [NAT_ROUTE]);
    await agent.tick();
    const machine = agent.machine(7);
    assert.equal(machine?.state, "refused");
    assert.match((machine as { reason: string }).reason, /no public IPv4 and its user data routes nothing through the private network/);
  });

  it("waits while its network routes no 0.0.0.0/0, and joins once it does", async function () {
    const routes: Array<{ destination: string; gateway: string }> = [];
    const { agent, warnings } = agentWithRoutes(privateOnly(true), routes);
    await agent.tick();
    assert.equal(agent.machine(7), undefined, "not refused: waiting for its way out");
    assert.deepEqual(warnings, []);
    routes.push(NAT_ROUTE);
    await agent.tick();
    // The join's first request fails (nothing listens): it got past the route check.
    assert.ok(
      warnings.some((w) => /joining failed for now.*ECONNREFUSED/.test(w)),
      warnings.join("\n"),
    );
  });
});
