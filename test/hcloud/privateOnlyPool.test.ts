/**
 * Hetzner Cloud pools without public IPv4 (`publicIpv4: false`, docs/networking.md): what the spec
 * refuses, naming the field and the rule; and under Pulumi's mock runtime, the network route to the
 * named NAT gateway, the servers' public nets, their user data routing the default through the
 * private network before the join, and generations (unchanged for the default, new for a change).
 */
import { strict as assert } from "node:assert";
import { spawnSync } from "node:child_process";
import { parse as parseYaml } from "yaml";
import type { RecordedResource } from "../../automation/mocks/runUnderMocks";
import { resolveSecrets } from "../../automation/mocks/secretValues";
import { readK0sWorkerUserData } from "../../automation/local/workerUserDataReader";
import { PRIVATE_EGRESS_SCRIPT_PATH, PRIVATE_EGRESS_UNIT } from "../../components/bootstrap/privateEgressRoute";
import { networkGateway } from "../../components/fleet/privateEgress";
import {
  hcloudAutoscaledPoolConfig,
  hcloudStaticPoolConfig,
  rawFleetConfig,
  runFleetProgramUnderMocks,
  specProblems,
} from "../support/fleetConfigFixture";

const SERVER = "hcloud:index/server:Server";
const ROUTE = "hcloud:index/networkRoute:NetworkRoute";
const ofType = (resources: RecordedResource[], type: string) => resources.filter((r) => r.type === type);
const userDataOf = (server: RecordedResource) => (resolveSecrets({ u: server.inputs.userData }, true) as { u: string }).u;

const NAT = "10.0.2.2";

function fleet(
  pool: Record<string, unknown>,
  network: Record<string, unknown> = { natGateway: NAT },
  cluster: Record<string, unknown> = {},
) {
  return rawFleetConfig({
    cluster,
    network,
    pools: [hcloudStaticPoolConfig({ replicas: 2, sshKeys: ["ops"], ...pool })],
  });
}

function assertProblem(problems: string[], pathText: string, fragment: RegExp): void {
  const match = problems.find((p) => p.startsWith(`${pathText}: `) && fragment.test(p));
  assert.ok(match, `expected a problem at ${pathText} matching ${fragment}, got:\n${problems.join("\n")}`);
}

describe("pools without public IPv4", function () {
  this.timeout(120_000);

  describe("the spec", () => {
    it("refuses publicIpv4 false without a NAT gateway, even with public IPv6, naming the field and the rule", () => {
      for (const publicIpv6 of [true, false]) {
        const problems = specProblems(fleet({ publicIpv4: false, publicIpv6 }, {}));
        assertProblem(problems, "nodefleet:pools[0].publicIpv4", /needs a way out .* set nodefleet:network\.natGateway/);
        assertProblem(problems, "nodefleet:pools[0].publicIpv4", /Public IPv6 alone is not one/);
      }
    });

    it("refuses publicIpv4 false off the private network, or with nodeAddress public", () => {
      assertProblem(
        specProblems(
          fleet(
            { publicIpv4: false, network: "public" },
            { natGateway: NAT },
            { nodeAddress: "public", cniEncryption: "cilium-wireguard" },
          ),
        ),
        "nodefleet:pools[0].publicIpv4",
        /needs network: private/,
      );
      assertProblem(
        specProblems(fleet({ publicIpv4: false }, { natGateway: NAT }, { nodeAddress: "public" })),
        "nodefleet:pools[0].publicIpv4",
        /needs cluster\.nodeAddress: private/,
      );
    });

    it("refuses a natGateway outside the range, the network's own gateway, Hetzner's 172.31.1.1, and a non-address", () => {
      assertProblem(
        specProblems(fleet({}, { natGateway: "10.9.0.2" })),
        "nodefleet:network.natGateway",
        /must lie inside ipRange 10\.0\.0\.0\/16/,
      );
      assertProblem(specProblems(fleet({}, { natGateway: "10.0.0.1" })), "nodefleet:network.natGateway", /Hetzner's own gateway/);
      assertProblem(
        specProblems(fleet({}, { ipRange: "172.16.0.0/12", subnet: "172.16.1.0/24", natGateway: "172.31.1.1" })),
        "nodefleet:network.natGateway",
        /Hetzner's own gateway/,
      );
      assertProblem(specProblems(fleet({}, { natGateway: "nat.example" })), "nodefleet:network.natGateway", /must be an IPv4 address/);
    });

    it("holds an autoscaled pool to the same rules: a gateway, the private network, nodeAddress private", () => {
      const autoscaled = (network: Record<string, unknown>, overrides: Record<string, unknown> = {}) =>
        specProblems(
          rawFleetConfig({ network, pools: [hcloudAutoscaledPoolConfig({ publicIpv4: false, publicIpv6: false, ...overrides })] }),
        );
      assert.deepEqual(autoscaled({ natGateway: NAT }), []);
      assertProblem(autoscaled({}), "nodefleet:pools[0].publicIpv4", /needs a way out to the IPv4 internet/);
    });

    it("accepts a private-only static pool with a gateway, and an IPv4-only pool with none", () => {
      assert.deepEqual(specProblems(fleet({ publicIpv4: false, publicIpv6: false })), []);
      assert.deepEqual(specProblems(fleet({ publicIpv6: false }, {})), []);
    });
  });

  describe("the program under mocks", () => {
    it("routes the network's 0.0.0.0/0 to the NAT gateway, and declares no route without one", async () => {
      const { resources } = await runFleetProgramUnderMocks(fleet({ publicIpv4: false }));
      const routes = ofType(resources, ROUTE);
      assert.equal(routes.length, 1);
      assert.equal(routes[0]!.inputs.destination, "0.0.0.0/0");
      assert.equal(routes[0]!.inputs.gateway, NAT);
      const none = await runFleetProgramUnderMocks(fleet({}, {}));
      assert.equal(ofType(none.resources, ROUTE).length, 0, "no natGateway, no route");
    });

    it("asks Hetzner for no public IPv4 and routes the node's default through the network's gateway before the join", async () => {
      const { resources } = await runFleetProgramUnderMocks(fleet({ publicIpv4: false, publicIpv6: false }));
      const servers = ofType(resources, SERVER);
      assert.equal(servers.length, 2);
      for (const server of servers) {
        assert.deepEqual(server.inputs.publicNets, [{ ipv4Enabled: false, ipv6Enabled: false }]);
        assert.equal((server.inputs.networks as unknown[]).length, 1, `${server.name} is on the private network`);
        const text = userDataOf(server);
        const config = parseYaml(text) as { write_files: Array<{ path: string; content: string }>; runcmd: string[][] };
        const script = config.write_files.find((f) => f.path === PRIVATE_EGRESS_SCRIPT_PATH)?.content ?? "";
        assert.match(script, new RegExp(`^gateway=${networkGateway("10.0.0.0/16").replace(/\./g, "\\.")}$`, "m"));
        assert.match(script, /ip -4 route replace default via "\$gateway"/);
        assert.equal(spawnSync("bash", ["-n"], { input: script }).status, 0, "the egress script is valid bash");
        assert.deepEqual(config.runcmd[1], ["systemctl", "enable", "--now", PRIVATE_EGRESS_UNIT], "the route before the join");
        assert.match(text, /--node-ip/, "the kubelet registers its private address");
        assert.deepEqual(readK0sWorkerUserData(text).privateEgress, { gateway: "10.0.0.1" }, "what the node agent reads");
      }
    });

    it("keeps the default pool's servers, user data and generation as they were, and rolls a pool that turns IPv4 off", async () => {
      const names = async (config: Record<string, unknown>) =>
        ofType((await runFleetProgramUnderMocks(config)).resources, SERVER)
          .map((s) => s.name)
          .sort();
      const before = await names(fleet({}, {}));
      assert.deepEqual(
        await names(fleet({ publicIpv4: true, publicIpv6: true }, { natGateway: NAT })),
        before,
        "defaults and a gateway change nothing",
      );
      const off = await names(fleet({ publicIpv4: false }));
      const v6off = await names(fleet({ publicIpv6: false }, {}));
      for (let i = 0; i < before.length; i++) {
        assert.notEqual(off[i], before[i], "IPv4 off is a new generation");
        assert.notEqual(v6off[i], before[i], "IPv6 off is a new generation");
        assert.equal(off[i]!.slice(0, -7), before[i]!.slice(0, -7), "same member");
      }
      const { resources } = await runFleetProgramUnderMocks(fleet({}, {}));
      for (const server of ofType(resources, SERVER)) {
        assert.deepEqual(server.inputs.publicNets, [{ ipv4Enabled: true, ipv6Enabled: true }]);
        assert.doesNotMatch(userDataOf(server), /nodefleet-private-egress/);
      }
    });
  });
});
