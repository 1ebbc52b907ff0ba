import { strict as assert } from "node:assert";
import fc from "fast-check";
import { isKubeletRestrictedLabel, partitionKubeletLabels } from "../../components/fleet/kubeletLabels";

describe("kubelet label restrictions", () => {
  const accepted = [
    "kubernetes.io/hostname",
    "kubernetes.io/arch",
    "beta.kubernetes.io/instance-type",
    "node.kubernetes.io/instance-type",
    "node.kubernetes.io/pool",
    "team.node.kubernetes.io/x",
    "kubelet.kubernetes.io/foo",
    "topology.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region",
    "karpenter.sh/nodepool",
    "example.com/team",
    "unprefixed",
  ];
  const refused = ["node-role.kubernetes.io/worker", "kubernetes.io/role", "k8s.io/foo", "sub.k8s.io/foo", "topology.kubernetes.io/rack"];

  for (const key of accepted) it(`accepts ${key}`, () => assert.equal(isKubeletRestrictedLabel(key), false));
  for (const key of refused) it(`refuses ${key}`, () => assert.equal(isKubeletRestrictedLabel(key), true));

  it("never restricts keys outside the kubernetes.io and k8s.io namespaces", () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[a-z]{1,10}\.(com|io|dev)\/[a-z]{1,10}$/), (key) => {
        fc.pre(!key.endsWith("k8s.io") && !/kubernetes\.io\//.test(key) && !/k8s\.io\//.test(key));
        return !isKubeletRestrictedLabel(key);
      }),
    );
  });

  it("partitions labels without losing any", () => {
    const labels = { "node-role.kubernetes.io/a": "", "example.com/b": "1", "node.kubernetes.io/c": "2" };
    const { accepted: ok, restricted } = partitionKubeletLabels(labels);
    assert.deepEqual(ok, { "example.com/b": "1", "node.kubernetes.io/c": "2" });
    assert.deepEqual(restricted, { "node-role.kubernetes.io/a": "" });
  });
});
