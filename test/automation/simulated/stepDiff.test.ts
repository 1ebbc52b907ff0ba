import assert from "node:assert/strict";
import fc from "fast-check";
import { ELASTIC_METAL_REPLACE_ON_CHANGES } from "../../../components/scaleway/elasticMetalPlan";
import { REPLACE_TRIGGERS } from "../../../automation/simulated/replaceTriggers";
import { changedKeys, decideStep, deepEqual, planDeletes } from "../../../automation/simulated/stepDiff";

const SERVER = "hcloud:index/server:Server";
const serverInputs = {
  name: "n1",
  serverType: "cpx21",
  image: "ubuntu-24.04",
  location: "hel1",
  userData: "#cloud-config\n",
  labels: { a: "1" },
};

describe("stepDiff", function () {
  it("creates what did not exist", function () {
    assert.deepEqual(decideStep(undefined, { type: SERVER, inputs: serverInputs }), { op: "create", keys: [], replaceKeys: [] });
  });

  it("keeps identical inputs (key order and absent-vs-undefined do not matter)", function () {
    const reordered = Object.fromEntries(Object.entries(serverInputs).reverse());
    assert.equal(
      decideStep({ type: SERVER, inputs: serverInputs }, { type: SERVER, inputs: { ...reordered, backups: undefined } }).op,
      "same",
    );
  });

  it("updates in place on a change hcloud applies without a new server (type, labels, name)", function () {
    const step = decideStep(
      { type: SERVER, inputs: serverInputs },
      { type: SERVER, inputs: { ...serverInputs, serverType: "cpx31", labels: { a: "2" } } },
    );
    assert.deepEqual(step, { op: "update", keys: ["labels", "serverType"], replaceKeys: [] });
  });

  for (const key of ["userData", "image", "location", "sshKeys"]) {
    it(`replaces an hcloud server when ${key} changes`, function () {
      const step = decideStep({ type: SERVER, inputs: serverInputs }, { type: SERVER, inputs: { ...serverInputs, [key]: ["changed"] } });
      assert.equal(step.op, "replace");
      assert.deepEqual(step.replaceKeys, [key]);
    });
  }

  it("replaces an Elastic Metal server on an os change, as the pool's replaceOnChanges makes Pulumi do", function () {
    const type = "scaleway:elasticmetal/server:Server";
    const prev = { offer: "EM-A610R-NVME", os: "ubuntu-os-id", zone: "fr-par-2", name: "n1", sshKeyIds: ["k1"] };
    const osChange = decideStep({ type, inputs: prev }, { type, inputs: { ...prev, os: "debian-os-id" } });
    assert.deepEqual([osChange.op, osChange.replaceKeys], ["replace", ["os"]]);
    assert.equal(decideStep({ type, inputs: prev }, { type, inputs: { ...prev, name: "n2" } }).op, "update");
    for (const path of ELASTIC_METAL_REPLACE_ON_CHANGES) {
      assert.ok(
        REPLACE_TRIGGERS[type]?.properties.includes(path),
        `${path} is in the component's replaceOnChanges but not in the simulation's table`,
      );
    }
  });

  // What the providers do (replaceTriggers.ts cites each): these were replaces in the table before.
  for (const [type, prev, change, op] of [
    ["hcloud:index/placementGroup:PlacementGroup", { name: "pg", type: "spread", labels: {} }, { type: "other" }, "update"],
    ["hcloud:index/placementGroup:PlacementGroup", { name: "pg", type: "spread", labels: {} }, { labels: { a: "1" } }, "update"],
    [
      "hcloud:index/firewall:Firewall",
      { name: "fw", rules: [], applyTos: [{ labelSelector: "a=1" }] },
      { applyTos: [{ labelSelector: "a=2" }] },
      "update",
    ],
    [
      "scaleway:ipam/ip:Ip",
      { region: "fr-par", sources: [{ privateNetworkId: "pn-1" }], tags: [] },
      { sources: [{ privateNetworkId: "pn-2" }] },
      "replace",
    ],
    ["scaleway:ipam/ip:Ip", { region: "fr-par", sources: [{ privateNetworkId: "pn-1" }], tags: [] }, { tags: ["x"] }, "update"],
    [
      "scaleway:ipam/ip:Ip",
      { region: "fr-par", sources: [{ privateNetworkId: "pn-1" }], address: "172.16.0.5" },
      { address: "172.16.0.6" },
      "replace",
    ],
    ["scaleway:elasticmetal/server:Server", { offer: "o1", os: "os1", zone: "fr-par-2" }, { offer: "o2" }, "replace"],
  ] as const) {
    it(`${type}: a ${Object.keys(change).join(", ")} change is planned as ${op}`, function () {
      assert.equal(decideStep({ type, inputs: prev }, { type, inputs: { ...prev, ...change } }).op, op);
    });
  }

  it("follows nested trigger paths (a Secret's metadata.name) but not sibling keys", function () {
    const type = "kubernetes:core/v1:Secret";
    const prev = { metadata: { name: "a", labels: { x: "1" } }, type: "Opaque" };
    assert.equal(
      decideStep({ type, inputs: prev }, { type, inputs: { ...prev, metadata: { name: "a", labels: { x: "2" } } } }).op,
      "update",
    );
    const renamed = decideStep({ type, inputs: prev }, { type, inputs: { ...prev, metadata: { name: "b", labels: { x: "1" } } } });
    assert.deepEqual([renamed.op, renamed.replaceKeys], ["replace", ["metadata.name"]]);
  });

  it("replaces random resources on any input change", function () {
    const type = "random:index/randomString:RandomString";
    const step = decideStep({ type, inputs: { length: 6, keepers: { a: "1" } } }, { type, inputs: { length: 6, keepers: { a: "2" } } });
    assert.deepEqual([step.op, step.replaceKeys], ["replace", ["keepers"]]);
  });

  it("treats a number and its string form as equal (hcloud ids travel as both)", function () {
    assert.equal(deepEqual(123, "123"), true);
    assert.equal(deepEqual("123", "124"), false);
    assert.equal(deepEqual(true, "true"), false);
  });

  it("plans deletes for undeclared resources in reverse creation order", function () {
    const previous = [{ urn: "a" }, { urn: "b" }, { urn: "c" }, { urn: "d" }];
    assert.deepEqual(
      planDeletes(previous, new Set(["b"])).map((r) => r.urn),
      ["d", "c", "a"],
    );
  });

  it("cites a source for every replace-trigger entry", function () {
    for (const [type, entry] of Object.entries(REPLACE_TRIGGERS)) {
      assert.match(entry.source, /^https:\/\//, type);
      assert.ok(entry.allInputs || entry.properties.every((p) => /^[a-zA-Z][a-zA-Z0-9.]*$/.test(p)), type);
    }
  });

  const json = fc.letrec((tie) => ({
    value: fc.oneof(
      { depthSize: "small" },
      fc.string(),
      fc.integer(),
      fc.boolean(),
      fc.array(tie("value"), { maxLength: 3 }),
      fc.dictionary(fc.string({ minLength: 1, maxLength: 5 }), tie("value"), { maxKeys: 3 }),
    ),
  })).value;
  const inputsArb = fc.dictionary(fc.constantFrom("name", "serverType", "labels", "userData", "image", "location", "extra"), json, {
    maxKeys: 6,
  });

  it("property: a resource compared with itself is always `same`", function () {
    fc.assert(
      fc.property(
        inputsArb,
        (inputs) => decideStep({ type: SERVER, inputs }, { type: SERVER, inputs: structuredClone(inputs) }).op === "same",
      ),
    );
  });

  it("property: replace exactly when a changed key is a trigger; keys list exactly the changed keys", function () {
    fc.assert(
      fc.property(inputsArb, inputsArb, (a, b) => {
        const step = decideStep({ type: SERVER, inputs: a }, { type: SERVER, inputs: b });
        const changed = changedKeys(a, b);
        if (changed.length === 0) return step.op === "same";
        const triggered = changed.some((k) => REPLACE_TRIGGERS[SERVER].properties.includes(k));
        return step.op === (triggered ? "replace" : "update") && deepEqual(step.keys, changed);
      }),
    );
  });
});
