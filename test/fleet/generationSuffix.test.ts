import { strict as assert } from "node:assert";
import fc from "fast-check";
import { parseFleetSpec, type HcloudStaticPool } from "../../components/fleet/fleetSpec";
import { canonicalHash, canonicalJson, sha256Hex } from "../../components/shared/canonicalJson";
import {
  GENERATION_SUFFIX_LENGTH,
  generationServerName,
  generationSuffix,
  type GenerationInputs,
} from "../../components/fleet/generationSuffix";
import { planHcloudServers, staticHcloudMembers } from "../../components/hcloud/hcloudServerPlan";
import { hcloudStaticPoolConfig, rawFleetConfig } from "../support/fleetConfigFixture";

const base: GenerationInputs = {
  location: "hel1",
  image: "ubuntu-24.04",
  serverType: "cpx31",
  sshKeys: ["ops"],
  userData: { kind: "k0s", k0sVersion: "v1.33.4+k0s.0", labels: { a: "1", b: "2" } },
};

/** Plans the first member of a static pool built from a config with the given overrides. */
function planFirst(options: { cluster?: Record<string, unknown>; pool?: Record<string, unknown> } = {}) {
  const spec = parseFleetSpec(rawFleetConfig({ cluster: options.cluster, pools: [hcloudStaticPoolConfig(options.pool)] }));
  const pool = spec.pools[0] as HcloudStaticPool;
  const { kubeconfig: _k, ...cluster } = spec.cluster;
  return planHcloudServers(cluster, pool, staticHcloudMembers(cluster, pool))[0];
}

describe("generation suffix", () => {
  it("is 6 characters of [a-z0-9] and deterministic", () => {
    const suffix = generationSuffix(base);
    assert.match(suffix, new RegExp(`^[a-z0-9]{${GENERATION_SUFFIX_LENGTH}}$`));
    assert.equal(generationSuffix({ ...base }), suffix);
  });

  it("ignores object key order but not array order", () => {
    assert.equal(canonicalJson({ b: 1, a: [2, 1] }), canonicalJson({ a: [2, 1], b: 1 }));
    assert.notEqual(canonicalJson({ a: [1, 2] }), canonicalJson({ a: [2, 1] }));
    assert.equal(canonicalJson({ a: undefined, b: [undefined] }), '{"b":[null]}');
    assert.equal(canonicalHash({ b: 1, a: 2 }), sha256Hex('{"a":2,"b":1}'));
    assert.equal(
      generationSuffix({ ...base, userData: { labels: { b: "2", a: "1" }, k0sVersion: "v1.33.4+k0s.0", kind: "k0s" } }),
      generationSuffix(base),
    );
  });

  it("changes whenever a replace-forcing input changes", () => {
    const field = fc.constantFrom<keyof GenerationInputs>("location", "image", "serverType", "sshKeys", "userData");
    fc.assert(
      fc.property(field, fc.string({ minLength: 1, maxLength: 12 }), (key, value) => {
        const changed: GenerationInputs =
          key === "sshKeys"
            ? { ...base, sshKeys: [...base.sshKeys, value] }
            : key === "userData"
              ? { ...base, userData: { ...(base.userData as object), extra: value } }
              : { ...base, [key]: `${base[key]}-${value}` };
        assert.notEqual(generationSuffix(changed), generationSuffix(base), `changing ${key}`);
      }),
    );
  });

  it("builds `<hostname>-<generation>` server names and refuses names over 63 characters", () => {
    assert.equal(generationServerName("example-hel1-general-0", "abc123"), "example-hel1-general-0-abc123");
    assert.throws(() => generationServerName("x".repeat(57), "abc123"), /node x+: the server name .* more than the 63/);
  });
});

describe("generation of a planned hcloud server", () => {
  const reference = planFirst();

  it("names the server `<hostname>-<generation>`", () => {
    assert.equal(reference.serverName, `example-hel1-general-0-${reference.generation}`);
  });

  // Every input rendered into the user data, and every server field Hetzner cannot change in place.
  const forcing: Array<[string, { cluster?: Record<string, unknown>; pool?: Record<string, unknown> }]> = [
    ["k0s version", { cluster: { k0sVersion: "v1.34.1+k0s.0" } }],
    ["k0s checksum", { cluster: { k0sSha256: { amd64: "a".repeat(64), arm64: "b".repeat(64) } } }],
    ["API server", { cluster: { apiServer: "https://203.0.113.11:6443" } }],
    ["CA certificate", { cluster: { caCertificate: "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n" } }],
    ["providerID scheme", { cluster: { providerIdScheme: "cnap" } }],
    ["kubelet settings", { cluster: { kubelet: { maxPods: 200 } } }],
    ["labels", { pool: { labels: { "node.kubernetes.io/pool": "other" } } }],
    ["taints", { pool: { taints: [{ key: "dedicated", value: "ci", effect: "NoSchedule" }] } }],
    ["image", { pool: { image: "ubuntu-22.04" } }],
    ["server type", { pool: { serverTypes: ["cpx41"] } }],
    ["location", { pool: { location: "fsn1" } }],
    ["ssh keys", { pool: { sshKeys: ["ops"] } }],
  ];
  for (const [what, change] of forcing) {
    it(`changes with the ${what}`, () => {
      assert.notEqual(planFirst(change).generation, reference.generation);
    });
  }

  const inPlace: Array<[string, { cluster?: Record<string, unknown>; pool?: Record<string, unknown> }]> = [
    ["bootstrap token TTL", { cluster: { bootstrapTokenTtlMinutes: 120 } }],
    ["control plane addresses (firewall only)", { cluster: { controlPlaneAddresses: ["198.51.100.0/24"] } }],
    ["kubeconfig", { cluster: { kubeconfig: "apiVersion: v1\nkind: Config\n" } }],
    ["delete protection", { pool: { deleteProtection: true } }],
    ["replica count", { pool: { replicas: 7 } }],
    ["second server type", { pool: { serverTypes: ["cpx31", "cx22"] } }],
    ["label order", { pool: { labels: { "b.example.com/x": "1", "a.example.com/y": "2" } } }],
  ];
  it("stays the same when only in-place inputs change", () => {
    for (const [what, change] of inPlace.slice(0, -1)) {
      assert.equal(planFirst(change).generation, reference.generation, what);
    }
    const [, reordered] = inPlace[inPlace.length - 1];
    const reversed = { pool: { labels: { "a.example.com/y": "2", "b.example.com/x": "1" } } };
    assert.equal(planFirst(reordered).generation, planFirst(reversed).generation, "label order");
  });

  it("stays the same for any combination of in-place changes (property)", () => {
    const labelEntries = [
      ["node.kubernetes.io/pool", "hel1-general"],
      ["example.com/team", "ci"],
      ["example.com/tier", "gold"],
    ] as const;
    const baseline = planFirst({ pool: { labels: Object.fromEntries(labelEntries) } }).generation;
    fc.assert(
      fc.property(
        fc.record({
          ttl: fc.integer({ min: 10, max: 1440 }),
          controlPlane: fc.constantFrom(["203.0.113.10/32"], ["198.51.100.0/24", "192.0.2.0/24"]),
          deleteProtection: fc.boolean(),
          replicas: fc.integer({ min: 1, max: 20 }),
          order: fc.shuffledSubarray([0, 1, 2], { minLength: 3, maxLength: 3 }),
        }),
        (c) => {
          const generation = planFirst({
            cluster: { bootstrapTokenTtlMinutes: c.ttl, controlPlaneAddresses: c.controlPlane },
            pool: {
              deleteProtection: c.deleteProtection,
              replicas: c.replicas,
              labels: Object.fromEntries(c.order.map((i) => labelEntries[i])),
            },
          }).generation;
          assert.equal(generation, baseline);
        },
      ),
      { numRuns: 40 },
    );
  });

  it("gives a frozen member its snapshot's generation, whatever the cluster's current versions", () => {
    const spec = parseFleetSpec(rawFleetConfig({ cluster: { k0sVersion: "v1.34.1+k0s.0" }, pools: [hcloudStaticPoolConfig()] }));
    const pool = spec.pools[0] as HcloudStaticPool;
    const member = { ...staticHcloudMembers(spec.cluster, pool)[0], bootstrap: { k0sVersion: "v1.33.4+k0s.0" } };
    assert.equal(planHcloudServers(spec.cluster, pool, [member])[0].generation, reference.generation);
  });

  it("changes with extra taints (they are rendered into the registration)", () => {
    const spec = parseFleetSpec(rawFleetConfig({ pools: [hcloudStaticPoolConfig()] }));
    const pool = spec.pools[0] as HcloudStaticPool;
    const member = {
      ...staticHcloudMembers(spec.cluster, pool)[0],
      extraTaints: [{ key: "karpenter.sh/unregistered", effect: "NoExecute" as const }],
    };
    assert.notEqual(planHcloudServers(spec.cluster, pool, [member])[0].generation, reference.generation);
  });
});
