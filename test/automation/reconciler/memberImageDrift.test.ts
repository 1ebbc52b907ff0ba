/**
 * Image drift of members of a pool whose image is resolved per architecture (`imagesByArchitecture`):
 * a member drifts with ImageDrift exactly when its own architecture's image changed, and its
 * templateHash changes with it; members of the other architecture keep theirs.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { drifts, memberImage, poolTemplate, templateHash } from "../../../automation/reconciler/memberSnapshot";
import type { ArchitectureImage } from "../../../automation/catalog/poolImageResolution";
import { configValues } from "../../../automation/stackConfigFile";
import { parseFleetSpec, type HcloudAutoscaledPool } from "../../../components/fleet/fleetSpec";
import type { HcloudArchitecture } from "../../../components/fleet/poolImages";
import { exampleConfig } from "../../support/apiHarness";
import type { MemberSnapshot, PoolTemplate } from "../../../automation/store/claimSnapshot";

const base: PoolTemplate = {
  pool: "workers",
  location: "fsn1",
  serverTypes: ["cpx31", "cax21"],
  image: "ubuntu-24.04",
  sshKeys: [],
  deleteProtection: false,
  labels: {},
  taints: [],
  clusterKind: "k0s",
  kubelet: {} as PoolTemplate["kubelet"],
};

const withImages = (x86: string | undefined, arm: string | undefined): PoolTemplate => ({
  ...base,
  imagesByArchitecture: { ...(x86 !== undefined ? { x86 } : {}), ...(arm !== undefined ? { arm } : {}) },
});

/** A member admitted on `template` with `serverType`. */
const admitted = (template: PoolTemplate, serverType: string): MemberSnapshot =>
  ({ template, serverType, templateHash: templateHash(template, serverType) }) as unknown as MemberSnapshot;

describe("member image drift with images resolved per architecture", function () {
  it("gives a member its architecture's image, and the pool's image without a resolution", function () {
    const template = withImages("101", "201");
    assert.equal(memberImage(template, "cpx31"), "101");
    assert.equal(memberImage(template, "cax21"), "201");
    assert.equal(memberImage(withImages("101", undefined), "cax21"), undefined);
    assert.equal(memberImage(base, "cax21"), "ubuntu-24.04");
  });

  it("builds a template from a resolution: each resolved architecture's image, none for one without a match", function () {
    const spec = parseFleetSpec(configValues(exampleConfig()));
    const pool = spec.pools.find((p) => p.mode === "autoscaled") as HcloudAutoscaledPool;
    const resolution = new Map<HcloudArchitecture, ArchitectureImage>([
      ["x86", { image: "4001" }],
      ["arm", { unavailableReason: "no image matches imageSelector role=node for the arm architecture" }],
    ]);
    const template = poolTemplate(spec.cluster, pool, resolution);
    assert.deepEqual(template.imagesByArchitecture, { x86: "4001" });
    assert.equal(memberImage(template, "cpx31"), "4001");
    assert.equal(memberImage(template, "cax21"), undefined);
    assert.equal(poolTemplate(spec.cluster, pool, resolution), template, "one template object per resolution");
    assert.equal(poolTemplate(spec.cluster, pool).imagesByArchitecture, undefined, "without a resolution, as before");
    const newer = poolTemplate(spec.cluster, pool, new Map([["x86", { image: "4002" }]]));
    const member = admitted(template, "cpx31");
    assert.deepEqual(
      drifts(member, newer).map((d) => d.detail),
      ["image: 4001 -> 4002"],
    );
  });

  it("drifts a member with ImageDrift when its architecture gets a newer image, and only then", function () {
    const before = withImages("101", "201");
    const newerX86 = withImages("102", "201");
    const x86Member = admitted(before, "cpx31");
    const armMember = admitted(before, "cax21");
    assert.deepEqual(
      drifts(x86Member, newerX86).map((d) => [d.reason, d.detail]),
      [["ImageDrift", "image: 101 -> 102"]],
    );
    assert.notEqual(templateHash(newerX86, "cpx31"), x86Member.templateHash, "the x86 member's generation changes");
    assert.deepEqual(drifts(armMember, newerX86), [], "the arm member keeps its image");
    assert.equal(templateHash(newerX86, "cax21"), armMember.templateHash);
  });

  it("reports image drift for any resolution exactly when the member's own architecture's image differs", function () {
    const image = fc.option(fc.constantFrom("101", "102", "201", "202"), { nil: undefined });
    fc.assert(
      fc.property(image, image, image, image, fc.constantFrom("cpx31", "cax21"), (x0, a0, x1, a1, serverType) => {
        const member = admitted(withImages(x0, a0), serverType);
        const current = withImages(x1, a1);
        const changed = serverType === "cax21" ? a0 !== a1 : x0 !== x1;
        const reasons = drifts(member, current).map((d) => d.reason);
        assert.deepEqual(reasons, changed ? ["ImageDrift"] : []);
        assert.equal(templateHash(current, serverType) !== member.templateHash, changed);
      }),
    );
  });
});
