import { strict as assert } from "node:assert";
import fc from "fast-check";
import { kubeletNodeLabelsArg, kubeletTaintsArg } from "../../components/bootstrap/kubeletRegistrationArgs";
import { isKubeletRestrictedLabel } from "../../components/fleet/kubeletLabels";

describe("kubelet registration args", () => {
  it("renders labels as k=v,... without the keys the kubelet refuses", () => {
    assert.equal(
      kubeletNodeLabelsArg({ "nodefleet.io/pool": "kura", "node-role.kubernetes.io/cache": "", "topology.kubernetes.io/zone": "fr-par-2" }),
      "nodefleet.io/pool=kura,topology.kubernetes.io/zone=fr-par-2",
    );
    assert.equal(kubeletNodeLabelsArg({ "node-role.kubernetes.io/cache": "" }), "");
    assert.equal(kubeletNodeLabelsArg({}), "");
  });

  it("renders taints as key=value:Effect, or key:Effect without a value", () => {
    assert.equal(
      kubeletTaintsArg([
        { key: "tuist.dev/runner-cache", value: "true", effect: "NoSchedule" },
        { key: "dedicated", value: "", effect: "NoExecute" },
        { key: "spot", effect: "PreferNoSchedule" },
      ]),
      "tuist.dev/runner-cache=true:NoSchedule,dedicated:NoExecute,spot:PreferNoSchedule",
    );
    assert.equal(kubeletTaintsArg([]), "");
  });

  it("never lets a restricted key through, whatever the labels", () => {
    const key = fc.oneof(
      fc.constantFrom("node-role.kubernetes.io/x", "kubernetes.io/foo", "k8s.io/bar", "node.kubernetes.io/ok", "example.com/a"),
      fc.stringMatching(/^[a-z]{1,8}\.(kubernetes|k8s)\.io\/[a-z]{1,8}$/),
    );
    fc.assert(
      fc.property(fc.dictionary(key, fc.stringMatching(/^[a-z0-9]{0,8}$/)), (labels) => {
        const arg = kubeletNodeLabelsArg(labels);
        const keys = arg === "" ? [] : arg.split(",").map((pair) => pair.split("=")[0]!);
        assert.deepEqual(
          keys,
          Object.keys(labels).filter((k) => !isKubeletRestrictedLabel(k)),
        );
      }),
    );
  });
});
