/**
 * Pools past the private network's 100 servers (`network: public`): what the spec refuses and
 * accepts, which pools count against the network, and the firewall ports a CNI's WireGuard gets.
 */
import { strict as assert } from "node:assert";
import fc from "fast-check";
import { parseFleetSpec, type PoolSpec } from "../../components/fleet/fleetSpec";
import { clusterFirewallRules } from "../../components/fleet/firewallRules";
import { firewallSchema } from "../../components/fleet/fleetSpec";
import { serversOutsidePool, staticServersOnNetwork } from "../../components/fleet/networkOccupancy";
import { isNonPublicIpv4 } from "../../components/fleet/publicNetwork";
import { planRollout } from "../../components/fleet/rolloutPlan";
import { membersAwaitingNewGeneration } from "../support/rolloutFixture";
import { hcloudAutoscaledPoolConfig, hcloudStaticPoolConfig, rawFleetConfig, specProblems } from "../support/fleetConfigFixture";

const PUBLIC_CLUSTER = { nodeAddress: "public", cniEncryption: "cilium-wireguard" };

function assertProblem(problems: string[], pathText: string, fragment: RegExp): void {
  const match = problems.find((p) => p.startsWith(`${pathText}: `) && fragment.test(p));
  assert.ok(match, `expected a problem at ${pathText} matching ${fragment}, got:\n${problems.join("\n")}`);
}

/** A fleet of one static and one autoscaled hcloud pool of the given sizes and networks. */
function fleet(options: {
  staticReplicas: number;
  staticNetwork?: string;
  maxNodes: number;
  autoscaledNetwork?: string;
  cluster?: Record<string, unknown>;
}) {
  return rawFleetConfig({
    cluster: options.cluster ?? {},
    pools: [
      hcloudStaticPoolConfig({ replicas: options.staticReplicas, ...(options.staticNetwork ? { network: options.staticNetwork } : {}) }),
      hcloudAutoscaledPoolConfig({
        limits: { maxNodes: options.maxNodes },
        ...(options.autoscaledNetwork ? { network: options.autoscaledNetwork } : {}),
      }),
    ],
  });
}

describe("pools on public addresses (network: public)", () => {
  describe("the spec", () => {
    it("refuses pools on the private network past 100 servers, naming them and pointing to network: public", () => {
      const problems = specProblems(fleet({ staticReplicas: 30, maxNodes: 80 }));
      assertProblem(problems, "nodefleet:pools", /\(hel1-burst 80 \(maxNodes\), hel1-general 30\) can hold 110 servers/);
      assertProblem(problems, "nodefleet:pools", /set network: public on the largest pools/);
      assertProblem(problems, "nodefleet:pools", /docs\.hetzner\.com\/cloud\/networks\/overview/);
    });

    it("refuses one private pool of 101 even alone", () => {
      const problems = specProblems(rawFleetConfig({ pools: [hcloudAutoscaledPoolConfig({ limits: { maxNodes: 101 } })] }));
      assertProblem(problems, "nodefleet:pools", /hel1-burst 101 \(maxNodes\)\) can hold 101 servers, more than the 100/);
    });

    it("accepts a public autoscaled pool of 400 beside 100 on the network, and defaults pools to private", () => {
      const spec = parseFleetSpec(fleet({ staticReplicas: 100, maxNodes: 400, autoscaledNetwork: "public", cluster: PUBLIC_CLUSTER }));
      const [general, burst] = spec.pools as Array<PoolSpec & { network: string }>;
      assert.equal(general!.network, "private");
      assert.equal(burst!.network, "public");
      assert.equal(spec.cluster.cniEncryption, "cilium-wireguard");
    });

    it("still holds a public pool to its own limit of 1000", () => {
      const problems = specProblems(
        rawFleetConfig({
          cluster: PUBLIC_CLUSTER,
          pools: [hcloudAutoscaledPoolConfig({ network: "public", limits: { maxNodes: 1001 } })],
        }),
      );
      assertProblem(problems, "nodefleet:pools[0].limits.maxNodes", /at most 1000/);
    });

    it("requires nodeAddress public and a CNI encryption for a public pool, naming the pool", () => {
      const problems = specProblems(fleet({ staticReplicas: 3, maxNodes: 200, autoscaledNetwork: "public" }));
      assertProblem(problems, "nodefleet:cluster.nodeAddress", /must be public when pool hel1-burst uses network: public/);
      assertProblem(problems, "nodefleet:cluster.cniEncryption", /is required when pool hel1-burst uses network: public.*WireGuard/);
    });

    it("refuses an unknown CNI encryption", () => {
      const problems = specProblems(fleet({ staticReplicas: 3, maxNodes: 10, cluster: { cniEncryption: "calico-ipsec" } }));
      assertProblem(problems, "nodefleet:cluster.cniEncryption", /must be one of cilium-wireguard, flannel-wireguard/);
    });

    it("requires the control plane's public address and a reachable API server for a public pool", () => {
      const problems = specProblems(
        fleet({
          staticReplicas: 3,
          maxNodes: 10,
          staticNetwork: "public",
          cluster: { ...PUBLIC_CLUSTER, controlPlaneAddresses: ["10.0.0.0/24"], apiServer: "https://10.0.0.2:6443" },
        }),
      );
      assertProblem(
        problems,
        "nodefleet:cluster.controlPlaneAddresses",
        /needs the control plane.s public address .*\(none of 10\.0\.0\.0\/24 is public\)/,
      );
      assertProblem(problems, "nodefleet:cluster.apiServer", /10\.0\.0\.2 is a private address/);
    });

    it("asks nothing of a cluster whose pools are all on the private network", () => {
      const config = fleet({ staticReplicas: 3, maxNodes: 10, cluster: { controlPlaneAddresses: ["10.0.0.0/24"] } });
      assert.deepEqual(specProblems(config), []);
    });

    it("refuses pools needing more than the project's 50 spread placement groups", () => {
      const problems = specProblems(fleet({ staticReplicas: 100, maxNodes: 410, autoscaledNetwork: "public", cluster: PUBLIC_CLUSTER }));
      assertProblem(problems, "nodefleet:pools", /at least 51 spread placement groups .* more than the 50 .* set placement: none/);
      assert.deepEqual(
        specProblems(
          rawFleetConfig({
            cluster: PUBLIC_CLUSTER,
            pools: [
              hcloudStaticPoolConfig({ replicas: 100 }),
              hcloudAutoscaledPoolConfig({ network: "public", placement: "none", limits: { maxNodes: 410 } }),
            ],
          }),
        ),
        [],
      );
    });

    it("accepts 1000 nodes: 100 on the network in spread groups, 900 on public addresses without placement groups", () => {
      const spec = parseFleetSpec(
        rawFleetConfig({
          cluster: PUBLIC_CLUSTER,
          pools: [
            hcloudStaticPoolConfig({ replicas: 100 }),
            hcloudStaticPoolConfig({ name: "hel1-wide", replicas: 400, network: "public", placement: "none", labels: {} }),
            hcloudAutoscaledPoolConfig({ network: "public", placement: "none", limits: { maxNodes: 500 } }),
          ],
        }),
      );
      assert.deepEqual(
        spec.pools.map((p) => [p.name, (p as { placement?: string }).placement]),
        [
          ["hel1-general", "spread"],
          ["hel1-wide", "none"],
          ["hel1-burst", "none"],
        ],
      );
    });

    it("accepts exactly when the private pools fit the network and the spread pools fit the placement groups", () => {
      fc.assert(
        fc.property(
          fc.array(
            fc.record({
              servers: fc.integer({ min: 0, max: 300 }),
              isPublic: fc.boolean(),
              autoscaled: fc.boolean(),
              spread: fc.boolean(),
            }),
            {
              minLength: 1,
              maxLength: 5,
            },
          ),
          (pools) => {
            const config = rawFleetConfig({
              cluster: PUBLIC_CLUSTER,
              pools: pools.map((p, i) =>
                p.autoscaled
                  ? hcloudAutoscaledPoolConfig({
                      name: `pool-${i}`,
                      network: p.isPublic ? "public" : "private",
                      placement: p.spread ? "spread" : "none",
                      limits: { maxNodes: Math.max(1, p.servers) },
                    })
                  : hcloudStaticPoolConfig({
                      name: `pool-${i}`,
                      network: p.isPublic ? "public" : "private",
                      placement: p.spread ? "spread" : "none",
                      replicas: p.servers,
                    }),
              ),
            });
            const size = (p: (typeof pools)[number]) => (p.autoscaled ? Math.max(1, p.servers) : p.servers);
            const onNetwork = pools.filter((p) => !p.isPublic).reduce((n, p) => n + size(p), 0);
            const groups = pools.filter((p) => p.spread).reduce((n, p) => n + Math.ceil(size(p) / 10), 0);
            const problems = specProblems(config);
            assert.equal(problems.length === 0, onNetwork <= 100 && groups <= 50, problems.join("\n"));
          },
        ),
        { numRuns: 200 },
      );
    });
  });

  describe("network occupancy", () => {
    const pool = (name: string, mode: string, network: string, extra: Record<string, unknown> = {}) =>
      ({ name, provider: "hcloud", mode, network, ...extra }) as unknown as PoolSpec;

    it("counts only the pools on the private network", () => {
      const pools = [
        pool("a", "static", "private", { replicas: 20 }),
        pool("b", "static", "public", { replicas: 300 }),
        pool("burst", "autoscaled", "private", { limits: { maxNodes: 30 } }),
        pool("wide", "autoscaled", "public", { limits: { maxNodes: 500 } }),
      ];
      const servers = (n: number) => Array.from({ length: n }, (_, i) => i);
      assert.equal(serversOutsidePool(pools, { a: servers(20), b: servers(300) }, "a"), 30);
      assert.equal(serversOutsidePool(pools, { a: servers(20), b: servers(300) }, "b"), 20 + 30);
      assert.equal(staticServersOnNetwork(pools), 20);
    });

    it("lets a private pool surge beside hundreds of public servers", () => {
      const pools = [pool("a", "static", "private", { replicas: 60 }), pool("b", "static", "public", { replicas: 900 })];
      const { desired, current } = membersAwaitingNewGeneration(60);
      const others = Array.from({ length: 900 }, (_, i) => i);
      const plan = planRollout(
        desired,
        current,
        { maxSurge: 2, maxUnavailable: 0 },
        {
          serversOutsidePool: serversOutsidePool(pools, { a: current, b: others }, "a"),
        },
      );
      assert.equal(plan.servers.filter((s) => s.action === "create").length, 2);
    });
  });

  describe("firewall", () => {
    const cluster = { controlPlaneAddresses: ["203.0.113.10/32"] };

    it("opens flannel's WireGuard ports to every address when named, and Cilium's once", () => {
      const flannel = clusterFirewallRules({ ...cluster, cniEncryption: "flannel-wireguard" }, firewallSchema.parse({}));
      const udp = flannel.filter((r) => r.protocol === "udp").map((r) => [r.port, r.sourceIps]);
      assert.deepEqual(udp, [
        ["51871", ["0.0.0.0/0", "::/0"]],
        ["51820", ["0.0.0.0/0", "::/0"]],
        ["51821", ["0.0.0.0/0", "::/0"]],
      ]);
      const cilium = clusterFirewallRules({ ...cluster, cniEncryption: "cilium-wireguard" }, firewallSchema.parse({}));
      assert.deepEqual(cilium, clusterFirewallRules(cluster, firewallSchema.parse({})), "Cilium's port is there for every cluster");
    });

    it("never opens the kubelet beyond the control plane", () => {
      const rules = clusterFirewallRules({ ...cluster, cniEncryption: "flannel-wireguard" }, firewallSchema.parse({}));
      assert.deepEqual(
        rules.filter((r) => r.protocol === "tcp").map((r) => [r.port, r.sourceIps]),
        [["10250", ["203.0.113.10/32"]]],
      );
    });
  });

  it("tells private addresses from public ones", () => {
    for (const text of ["10.0.0.0/8", "10.1.2.3", "172.31.0.0/16", "192.168.1.0/24", "100.64.0.0/10", "127.0.0.1"])
      assert.equal(isNonPublicIpv4(text), true, text);
    for (const text of ["203.0.113.10/32", "0.0.0.0/0", "172.32.0.0/16", "8.8.8.8", "10.0.0.0/7"])
      assert.equal(isNonPublicIpv4(text), false, text);
  });
});
