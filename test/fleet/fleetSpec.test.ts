import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as path from "node:path";
import { parse } from "yaml";
import { FleetSpecError, parseFleetSpec } from "../../components/fleet/fleetSpec";

const REPO = path.resolve(__dirname, "..", "..", "..");

function exampleConfig(): Record<string, any> {
  const doc = parse(fs.readFileSync(path.join(REPO, "stacks", "Pulumi.example.yaml"), "utf8"));
  return structuredClone(doc.config);
}

function problemsOf(config: Record<string, unknown>): string[] {
  try {
    parseFleetSpec(config);
  } catch (error) {
    assert.ok(error instanceof FleetSpecError, `expected FleetSpecError, got ${String(error)}`);
    return error.problems;
  }
  assert.fail("expected the config to be rejected");
}

function assertProblem(problems: string[], pathText: string, fragment: RegExp): void {
  const match = problems.find((p) => p.startsWith(`${pathText}: `) && fragment.test(p));
  assert.ok(match, `expected a problem at ${pathText} matching ${fragment}, got:\n${problems.join("\n")}`);
}

describe("fleet spec", () => {
  it("accepts the example stack and applies defaults", () => {
    const spec = parseFleetSpec(exampleConfig());
    assert.equal(spec.cluster.id, "example");
    assert.equal(spec.cluster.bootstrapTokenTtlMinutes, 60);
    assert.equal(spec.cluster.kubelet.maxPods, 110);
    assert.deepEqual(
      spec.pools.map((p) => [p.name, p.provider, p.mode]),
      [
        ["hel1-general", "hcloud", "static"],
        ["hel1-burst", "hcloud", "autoscaled"],
        ["kura-scw-fr-par", "scaleway-elastic-metal", "static"],
      ],
    );
  });

  it("example stack: no secure values, one static hcloud pool, one Elastic Metal pool, an autoscaled hcloud pool first among autoscaled with >= 80 nodes and >= 2 types", () => {
    const text = fs.readFileSync(path.join(REPO, "stacks", "Pulumi.example.yaml"), "utf8");
    assert.doesNotMatch(text, /secure:/);
    const spec = parseFleetSpec(exampleConfig());
    assert.ok(spec.pools.some((p) => p.provider === "hcloud" && p.mode === "static"));
    assert.ok(spec.pools.some((p) => p.provider === "scaleway-elastic-metal"));
    const firstAutoscaled = spec.pools.find((p) => p.mode === "autoscaled");
    assert.ok(firstAutoscaled && firstAutoscaled.provider === "hcloud");
    assert.ok(firstAutoscaled.mode === "autoscaled" && firstAutoscaled.limits.maxNodes >= 80);
    assert.ok(firstAutoscaled.serverTypes.length >= 2);
  });

  it("reports missing required fields by path", () => {
    const config = exampleConfig();
    delete config["nodefleet:cluster"].id;
    delete config["nodefleet:network"].subnet;
    delete config["nodefleet:pools"][0].location;
    const problems = problemsOf(config);
    assertProblem(problems, "nodefleet:cluster.id", /id is required/);
    assertProblem(problems, "nodefleet:network.subnet", /subnet/);
    assertProblem(problems, "nodefleet:pools[0].location", /location/);
  });

  it("rejects a bad CIDR and a subnet outside the ip range", () => {
    const config = exampleConfig();
    config["nodefleet:network"].ipRange = "10.0.0.0/33";
    config["nodefleet:cluster"].controlPlaneAddresses = ["203.0.113.10"];
    assertProblem(problemsOf(config), "nodefleet:network.ipRange", /IPv4 CIDR/);
    assertProblem(problemsOf(config), "nodefleet:cluster.controlPlaneAddresses[0]", /IPv4 CIDR/);
    const outside = exampleConfig();
    outside["nodefleet:network"].subnet = "192.168.1.0/24";
    assertProblem(problemsOf(outside), "nodefleet:network.subnet", /must lie inside ipRange 10\.0\.0\.0\/16/);
  });

  it("rejects host bits in a CIDR", () => {
    const config = exampleConfig();
    config["nodefleet:network"].subnet = "10.0.1.7/24";
    assertProblem(problemsOf(config), "nodefleet:network.subnet", /host bits cleared/);
  });

  it("rejects a pool name clash", () => {
    const config = exampleConfig();
    config["nodefleet:pools"][1].name = "hel1-general";
    assertProblem(problemsOf(config), "nodefleet:pools[1].name", /already used by nodefleet:pools\[0\]; pool names must be unique/);
  });

  it("rejects a location outside the network zone", () => {
    const config = exampleConfig();
    config["nodefleet:pools"][0].location = "ash";
    assertProblem(problemsOf(config), "nodefleet:pools[0].location", /us-east, outside the network's zone eu-central/);
  });

  it("rejects an unknown location", () => {
    const config = exampleConfig();
    config["nodefleet:pools"][0].location = "mars1";
    assertProblem(problemsOf(config), "nodefleet:pools[0].location", /must be a Hetzner Cloud location/);
  });

  it("rejects more than 100 servers on one Hetzner network", () => {
    const config = exampleConfig();
    config["nodefleet:pools"][0].replicas = 11; // 11 static + 90 autoscaled
    assertProblem(
      problemsOf(config),
      "nodefleet:pools",
      /on the private network \(hel1-burst 90 \(maxNodes\), hel1-general 11\) can hold 101 servers, more than the 100/,
    );
  });

  it("accepts exactly 100 servers on one network", () => {
    const config = exampleConfig();
    config["nodefleet:pools"][0].replicas = 10;
    assert.doesNotThrow(() => parseFleetSpec(config));
  });

  it("rejects autoscaled pools for non-hcloud providers", () => {
    const config = exampleConfig();
    config["nodefleet:pools"][2].mode = "autoscaled";
    assertProblem(problemsOf(config), "nodefleet:pools[2].mode", /only supported for provider hcloud/);
  });

  it("rejects labels the kubelet refuses, accepts the allowed namespaces", () => {
    const config = exampleConfig();
    config["nodefleet:pools"][0].labels = {
      "node-role.kubernetes.io/worker": "",
      "node.kubernetes.io/pool": "ok",
      "kubelet.kubernetes.io/x": "ok",
      "karpenter.sh/capacity-type": "on-demand",
      "example.com/team": "a",
      "k8s.io/foo": "no",
    };
    const problems = problemsOf(config);
    assertProblem(problems, 'nodefleet:pools[0].labels["node-role.kubernetes.io/worker"]', /is reserved: .*the kubelet refuses them/);
    assertProblem(problems, 'nodefleet:pools[0].labels["k8s.io/foo"]', /is reserved: .*the kubelet refuses them/);
    assert.equal(problems.length, 2, problems.join("\n"));
  });

  it("rejects the labels a create request may not set either (kubernetes.io/hostname, nodefleet.io/), in each pool of the example (static and autoscaled Hetzner Cloud, Elastic Metal)", () => {
    const config = exampleConfig();
    const reserved = {
      "kubernetes.io/hostname": "evil",
      "nodefleet.io/pool": "other",
      "foo.kubernetes.io/x": "a",
      "kubernetes.io/arch": "amd64",
    };
    for (const pool of config["nodefleet:pools"])
      pool.labels = { ...reserved, "karpenter.nodefleet.io/nodefleetnodeclass": "ok", "topology.kubernetes.io/zone": "hel1" };
    const problems = problemsOf(config);
    for (const index of [0, 1, 2]) {
      assertProblem(
        problems,
        `nodefleet:pools[${index}].labels["kubernetes.io/hostname"]`,
        /label kubernetes\.io\/hostname is reserved: .*Karpenter refuses it/,
      );
      assertProblem(
        problems,
        `nodefleet:pools[${index}].labels["nodefleet.io/pool"]`,
        /label nodefleet\.io\/pool is reserved: nodefleet\.io\/ labels are set by nodefleet/,
      );
      assertProblem(problems, `nodefleet:pools[${index}].labels["foo.kubernetes.io/x"]`, /label foo\.kubernetes\.io\/x is reserved/);
    }
    assert.equal(problems.length, 9, problems.join("\n"));
  });

  it("rejects an unknown provider, naming the known ones", () => {
    const config = exampleConfig();
    config["nodefleet:pools"][0].provider = "aws";
    assertProblem(
      problemsOf(config),
      "nodefleet:pools[0].provider",
      /"aws" is not known; use one of hcloud, scaleway-elastic-metal, hetzner-robot/,
    );
  });

  it("rejects bad taints", () => {
    const config = exampleConfig();
    config["nodefleet:pools"][1].taints = [
      { key: "a b", effect: "NoSchedule" },
      { key: "ok", effect: "Sometimes" },
    ];
    const problems = problemsOf(config);
    assertProblem(problems, "nodefleet:pools[1].taints[0].key", /qualified name/);
    assertProblem(problems, "nodefleet:pools[1].taints[1].effect", /NoSchedule, PreferNoSchedule, NoExecute/);
  });

  it("rejects bad versions and requires the version of the cluster kind", () => {
    const config = exampleConfig();
    config["nodefleet:cluster"].k0sVersion = "1.33";
    assertProblem(problemsOf(config), "nodefleet:cluster.k0sVersion", /v1\.33\.4\+k0s\.0/);
    const kubeadm = exampleConfig();
    kubeadm["nodefleet:cluster"].kind = "kubeadm";
    assertProblem(problemsOf(kubeadm), "nodefleet:cluster.kubernetesVersion", /required when kind is kubeadm/);
    kubeadm["nodefleet:cluster"].kubernetesVersion = "1.33.4";
    assertProblem(problemsOf(kubeadm), "nodefleet:cluster.kubernetesVersion", /v1\.33\.4/);
  });

  it("rejects unknown fields and a static pool without members", () => {
    const config = exampleConfig();
    config["nodefleet:pools"][0].replica = 3;
    delete config["nodefleet:pools"][0].replicas;
    const problems = problemsOf(config);
    assertProblem(problems, "nodefleet:pools[0]", /unknown key replica \(did you mean replicas\?\)/);
    assertProblem(problems, "nodefleet:pools[0].replicas", /needs replicas or an explicit nodes list/);
  });

  it("rejects replicas together with nodes, and duplicate node names", () => {
    const config = exampleConfig();
    config["nodefleet:pools"][0].nodes = ["a", "a"];
    const problems = problemsOf(config);
    assertProblem(problems, "nodefleet:pools[0].nodes", /either replicas or nodes/);
    assertProblem(problems, "nodefleet:pools[0].nodes", /must be unique/);
  });

  it("rejects a non-https API server and a non-PEM CA", () => {
    const config = exampleConfig();
    config["nodefleet:cluster"].apiServer = "http://203.0.113.10:6443";
    config["nodefleet:cluster"].caCertificate = "not a cert";
    const problems = problemsOf(config);
    assertProblem(problems, "nodefleet:cluster.apiServer", /https:\/\//);
    assertProblem(problems, "nodefleet:cluster.caCertificate", /PEM/);
  });

  it("rejects firewall rules Hetzner would refuse: missing or misplaced ports, bad ranges, bad sources", () => {
    const config = exampleConfig();
    config["nodefleet:firewall"] = {
      nodePortSources: ["::/0", "10.0.0.1/8"],
      extraRules: [
        { protocol: "tcp", sourceIps: ["203.0.113.0/24"] },
        { protocol: "icmp", port: "22", sourceIps: ["0.0.0.0/0"] },
        { protocol: "udp", port: "200-100", sourceIps: ["2001:db8::/32"] },
        { protocol: "tcp", port: "70000", sourceIps: ["not-a-cidr"] },
      ],
    };
    const problems = problemsOf(config);
    assertProblem(problems, "nodefleet:firewall.nodePortSources[1]", /IPv4 CIDR with host bits cleared .* or an IPv6 CIDR/);
    assertProblem(problems, "nodefleet:firewall.extraRules[0].port", /port is required for protocol tcp/);
    assertProblem(problems, "nodefleet:firewall.extraRules[1].port", /only allowed for tcp and udp, not for icmp/);
    assertProblem(problems, "nodefleet:firewall.extraRules[2].port", /ascending range/);
    assertProblem(problems, "nodefleet:firewall.extraRules[3].port", /from 1 to 65535/);
    assertProblem(problems, "nodefleet:firewall.extraRules[3].sourceIps[0]", /IPv6 CIDR/);
    assert.equal(problems.length, 6, problems.join("\n"));
  });

  it("rejects IPv6 firewall sources with host bits set, naming the field, the rule and the block meant", () => {
    const config = exampleConfig();
    config["nodefleet:firewall"] = {
      nodePortSources: ["2001:db8::1/64"],
      extraRules: [{ protocol: "tcp", port: "22", sourceIps: ["2001:db8:0:0:0:0:0:0/32", "fd00::ff00/120", "::ffff:192.0.2.1/96"] }],
    };
    const problems = problemsOf(config);
    assertProblem(problems, "nodefleet:firewall.nodePortSources[0]", /host bits cleared: 2001:db8::1\/64 .*write 2001:db8::\/64/);
    assertProblem(problems, "nodefleet:firewall.extraRules[0].sourceIps[2]", /write ::ffff:0:0\/96/);
    assert.equal(problems.length, 2, `the uncompressed and the /120 sources are blocks: ${problems.join("\n")}`);
  });

  it("accepts IPv6 sources, port ranges and any", () => {
    const config = exampleConfig();
    config["nodefleet:firewall"] = {
      nodePortSources: ["2001:db8::/32"],
      extraRules: [
        { protocol: "tcp", port: "any", sourceIps: ["::/0"] },
        { protocol: "udp", port: "30000-32767", sourceIps: ["198.51.100.0/24"] },
        { protocol: "esp", sourceIps: ["0.0.0.0/0"] },
      ],
    };
    assert.equal(parseFleetSpec(config).firewall.extraRules.length, 3);
  });

  it("rejects node names that would not fit a Hetzner server name or a hostname", () => {
    const config = exampleConfig();
    config["nodefleet:cluster"].id = "a".repeat(20);
    config["nodefleet:pools"][0].name = "p".repeat(30);
    config["nodefleet:pools"][0].replicas = 5; // "aaa…-ppp…-4" is 53 characters, 60 with the suffix: fits
    assert.doesNotThrow(() => parseFleetSpec(config));
    config["nodefleet:pools"][0].replicas = undefined;
    config["nodefleet:pools"][0].nodes = ["short", "n".repeat(10)];
    delete config["nodefleet:pools"][0].replicas;
    assertProblem(
      problemsOf(config),
      "nodefleet:pools[0].name",
      new RegExp(`node ${"a".repeat(20)}-${"p".repeat(30)}-${"n".repeat(10)} is 62 characters: .* longer than 63`),
    );
    const scaleway = exampleConfig();
    scaleway["nodefleet:cluster"].id = "a".repeat(20);
    scaleway["nodefleet:pools"][2].name = "s".repeat(30);
    scaleway["nodefleet:pools"][2].nodes = ["n".repeat(12)];
    delete scaleway["nodefleet:pools"][2].replicas;
    assertProblem(problemsOf(scaleway), "nodefleet:pools[2].name", /is 64 characters, more than the 63 a hostname allows/);
  });

  it("lists every problem at once, across pools and sections", () => {
    const config = exampleConfig();
    config["nodefleet:cluster"].kind = "k3s";
    config["nodefleet:pools"][0].location = "ash";
    config["nodefleet:pools"][1].name = "hel1-general";
    config["nodefleet:pools"][2].provider = "gcp";
    const problems = problemsOf(config);
    assertProblem(problems, "nodefleet:cluster.kind", /k0s or kubeadm/);
    assertProblem(problems, "nodefleet:pools[0].location", /outside the network's zone/);
    assertProblem(problems, "nodefleet:pools[1].name", /must be unique/);
    assertProblem(problems, "nodefleet:pools[2].provider", /not known/);
  });

  it("the error message lists problems as path: message lines and never echoes the kubeconfig", () => {
    const config = exampleConfig();
    config["nodefleet:cluster"].kubeconfig = "apiVersion: v1\nusers: [{user: {token: SUPERSECRET}}]";
    config["nodefleet:cluster"].id = "Bad_Id";
    try {
      parseFleetSpec(config);
      assert.fail("expected rejection");
    } catch (error) {
      assert.ok(error instanceof FleetSpecError);
      assert.match(error.message, /^invalid nodefleet stack config:\n {2}- nodefleet:cluster\.id: /);
      assert.doesNotMatch(error.message, /SUPERSECRET/);
    }
  });
});
