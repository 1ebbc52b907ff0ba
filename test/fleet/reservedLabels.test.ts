import { strict as assert } from "node:assert";
import fc from "fast-check";
import { isKubeletRestrictedLabel } from "../../components/fleet/kubeletLabels";
import { reservedLabelRule, reservedLabels } from "../../components/fleet/reservedLabels";

/**
 * An independent statement of the rule, from the sources reservedLabels.ts cites: what a request or
 * a pool may set is (1) anything outside the kubernetes.io / k8s.io namespaces and nodefleet.io,
 * (2) the kubelet's well-known labels but hostname, (3) keys under [*.]node.kubernetes.io and
 * [*.]kubelet.kubernetes.io.
 */
const KUBELET_WELL_KNOWN = [
  "kubernetes.io/os",
  "kubernetes.io/arch",
  "beta.kubernetes.io/os",
  "beta.kubernetes.io/arch",
  "beta.kubernetes.io/instance-type",
  "node.kubernetes.io/instance-type",
  "topology.kubernetes.io/zone",
  "topology.kubernetes.io/region",
  "failure-domain.beta.kubernetes.io/zone",
  "failure-domain.beta.kubernetes.io/region",
];

function expectedRule(key: string): "kubernetes" | "hostname" | "nodefleet" | undefined {
  if (key === "kubernetes.io/hostname") return "hostname";
  const slash = key.indexOf("/");
  if (slash < 0) return undefined;
  const domain = key.slice(0, slash);
  const under = (namespace: string) => domain === namespace || domain.endsWith(`.${namespace}`);
  if (under("kubernetes.io") || under("k8s.io")) {
    if (KUBELET_WELL_KNOWN.includes(key) || under("node.kubernetes.io") || under("kubelet.kubernetes.io")) return undefined;
    return "kubernetes";
  }
  return domain === "nodefleet.io" ? "nodefleet" : undefined;
}

// DNS-subdomain prefixes and label names, as the schemas accept them.
const dnsLabel = fc.stringMatching(/^[a-z0-9]([-a-z0-9]{0,8}[a-z0-9])?$/);
const name = fc.stringMatching(/^[A-Za-z0-9]([-A-Za-z0-9_.]{0,10}[A-Za-z0-9])?$/);
const reservedDomain = fc.constantFrom(
  "kubernetes.io",
  "k8s.io",
  "node.kubernetes.io",
  "kubelet.kubernetes.io",
  "beta.kubernetes.io",
  "topology.kubernetes.io",
  "node-restriction.kubernetes.io",
  "kops.k8s.io",
  "nodefleet.io",
);
/** Prefixes near the reserved ones: the domains themselves, their subdomains, look-alikes, others. */
const prefix = fc.oneof(
  reservedDomain,
  fc.tuple(fc.array(dnsLabel, { minLength: 1, maxLength: 3 }), reservedDomain).map(([labels, domain]) => `${labels.join(".")}.${domain}`),
  fc.tuple(dnsLabel, reservedDomain).map(([label, domain]) => `${label}${domain}`),
  fc.array(dnsLabel, { minLength: 1, maxLength: 4 }).map((labels) => labels.join(".")),
);
const key = fc.oneof(
  fc.tuple(prefix, name).map(([p, n]) => `${p}/${n}`),
  name,
  fc.constantFrom(...KUBELET_WELL_KNOWN, "kubernetes.io/hostname"),
);

describe("reserved label keys (requests and pool labels)", () => {
  const refused: Array<[string, string]> = [
    ["kubernetes.io/hostname", "hostname"],
    ["kubernetes.io/role", "kubernetes"],
    ["kubernetes.io/team", "kubernetes"],
    ["node-role.kubernetes.io/worker", "kubernetes"],
    ["node-restriction.kubernetes.io/team", "kubernetes"],
    ["foo.kubernetes.io/bar", "kubernetes"],
    ["topology.kubernetes.io/rack", "kubernetes"],
    ["beta.kubernetes.io/fluentd-ds-ready", "kubernetes"],
    ["k8s.io/foo", "kubernetes"],
    ["sub.k8s.io/foo", "kubernetes"],
    ["kops.k8s.io/instancegroup", "kubernetes"],
    ["nodefleet.io/pool", "nodefleet"],
    ["nodefleet.io/node", "nodefleet"],
    ["nodefleet.io/anything", "nodefleet"],
  ];
  const accepted = [
    "kubernetes.io/arch",
    "kubernetes.io/os",
    "beta.kubernetes.io/arch",
    "beta.kubernetes.io/os",
    "beta.kubernetes.io/instance-type",
    "node.kubernetes.io/instance-type",
    "node.kubernetes.io/lifecycle",
    "team.node.kubernetes.io/x",
    "kubelet.kubernetes.io/x",
    "a.kubelet.kubernetes.io/x",
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region",
    "karpenter.sh/nodepool",
    "karpenter.sh/capacity-type",
    // Karpenter's NodeClass label on every NodeClaim: a subdomain, not nodefleet.io itself.
    "karpenter.nodefleet.io/nodefleetnodeclass",
    "example.com/team",
    "notkubernetes.io/x",
    "mynodefleet.io/x",
    "hostname",
    "unprefixed",
  ];

  for (const [k, rule] of refused) {
    it(`refuses ${k} (${rule})`, () => {
      const broken = reservedLabelRule(k);
      assert.equal(broken?.rule, rule);
      assert.ok(broken!.message.includes(k), broken!.message);
    });
  }
  for (const k of accepted) it(`accepts ${k}`, () => assert.equal(reservedLabelRule(k), undefined));

  it("agrees with the rule as Kubernetes, Karpenter and nodefleet state it, on keys near every reserved namespace", () => {
    fc.assert(
      fc.property(key, (k) => reservedLabelRule(k)?.rule === expectedRule(k)),
      { numRuns: 2000 },
    );
  });

  it("names the key and its rule in every refusal", () => {
    fc.assert(
      fc.property(key, (k) => {
        const broken = reservedLabelRule(k);
        if (!broken) return true;
        const says = {
          hostname: /Karpenter refuses/,
          kubernetes: /kubernetes\.io and k8s\.io namespaces.*NodeRestriction/,
          nodefleet: /nodefleet\.io\/ labels/,
        }[broken.rule];
        return broken.message.startsWith(`label ${k} is reserved: `) && says.test(broken.message);
      }),
      { numRuns: 1000 },
    );
  });

  it("is the kubelet's rule, plus kubernetes.io/hostname and nodefleet.io/", () => {
    fc.assert(
      fc.property(key, (k) => {
        const kubeletRefuses = isKubeletRestrictedLabel(k);
        const reserved = reservedLabelRule(k) !== undefined;
        return reserved === (kubeletRefuses || k === "kubernetes.io/hostname" || k.startsWith("nodefleet.io/"));
      }),
      { numRuns: 1000 },
    );
  });

  it("lets a create request (labels Karpenter applies) use node-restriction.kubernetes.io/ and kops.k8s.io/, and a pool not", () => {
    for (const k of [
      "node-restriction.kubernetes.io/team",
      "a.node-restriction.kubernetes.io/x",
      "kops.k8s.io/instancegroup",
      "sub.kops.k8s.io/x",
    ]) {
      assert.equal(reservedLabelRule(k, "karpenter"), undefined, k);
      assert.equal(reservedLabelRule(k, "kubelet")?.rule, "kubernetes", k);
    }
    // Karpenter's exceptions are the only difference between the two rules.
    fc.assert(
      fc.property(key, (k) => {
        const differs = reservedLabelRule(k, "karpenter")?.rule !== reservedLabelRule(k)?.rule;
        const domain = k.includes("/") ? k.slice(0, k.indexOf("/")) : "";
        const exception = ["node-restriction.kubernetes.io", "kops.k8s.io"].some((d) => domain === d || domain.endsWith(`.${d}`));
        return differs === exception;
      }),
      { numRuns: 1000 },
    );
    assert.match(
      reservedLabelRule("k8s.io/x", "karpenter")!.message,
      /set by Karpenter, node-restriction\.kubernetes\.io\/ and kops\.k8s\.io\//,
    );
  });

  it("never throws, whatever the string", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 300 }), (k) => {
        reservedLabelRule(k);
        return true;
      }),
    );
  });

  it("lists exactly the reserved keys of a label map, in its order", () => {
    fc.assert(
      fc.property(fc.dictionary(key, fc.constant("v"), { maxKeys: 20 }), (labels) => {
        const listed = reservedLabels(labels);
        assert.deepEqual(
          listed.map((r) => r.key),
          Object.keys(labels).filter((k) => reservedLabelRule(k) !== undefined),
        );
        for (const r of listed) assert.deepEqual({ rule: r.rule, message: r.message }, reservedLabelRule(r.key));
      }),
    );
  });
});
