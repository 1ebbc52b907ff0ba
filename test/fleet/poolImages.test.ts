import { strict as assert } from "node:assert";
import fc from "fast-check";
import type * as pulumi from "@pulumi/pulumi";
import { type HcloudAutoscaledPool, type HcloudStaticPool, parseFleetSpec } from "../../components/fleet/fleetSpec";
import {
  type HcloudArchitecture,
  type ImageLookupAnswer,
  type PoolImageLookup,
  poolImageLookups,
  resolvePoolImages,
  serverTypeArchitecture,
} from "../../components/fleet/poolImages";
import { planHcloudServers, staticHcloudMembers } from "../../components/hcloud/hcloudServerPlan";
import { planRollout } from "../../components/fleet/rolloutPlan";
import {
  hcloudAutoscaledPoolConfig,
  hcloudStaticPoolConfig,
  rawFleetConfig,
  runFleetProgramUnderMocks,
  specProblems,
} from "../support/fleetConfigFixture";

/** A snapshot of the model project: its architecture, creation order and whether it carries role=node. */
interface ModelImage {
  readonly id: number;
  readonly architecture: HcloudArchitecture;
  readonly created: number;
  readonly matches: boolean;
}

/** getImage as the plugin answers it (withSelector + withArchitecture + mostRecent, or by id), over the model. */
function modelGetImage(images: readonly ModelImage[], lookup: PoolImageLookup): ImageLookupAnswer {
  const { args } = lookup;
  if ("id" in args) {
    const found = images.find((i) => i.id === args.id);
    return found ?? { error: `no image matches the given id, name and selector` };
  }
  const newest = images.filter((i) => i.matches && i.architecture === args.withArchitecture).sort((a, b) => b.created - a.created)[0];
  return newest ?? { error: "no image matches the given id, name and selector" };
}

const imagesArb = fc
  .uniqueArray(
    fc.record({
      architecture: fc.constantFrom<HcloudArchitecture>("x86", "arm"),
      created: fc.nat(1000),
      matches: fc.boolean(),
    }),
    { selector: (i) => i.created, maxLength: 8 },
  )
  .map((list) => list.map((i, n) => ({ ...i, id: 500 + n })));
const typesArb = fc.uniqueArray(fc.constantFrom("cpx21", "cx22", "cax11", "cax21", "ccx13"), { minLength: 1, maxLength: 4 });

describe("pool images by name, id and label selector, per architecture", () => {
  it("takes cax types as arm and every other type as x86", () => {
    assert.equal(serverTypeArchitecture("cax11"), "arm");
    assert.equal(serverTypeArchitecture("cax41"), "arm");
    for (const t of ["cpx21", "cx22", "ccx13"]) assert.equal(serverTypeArchitecture(t), "x86");
  });

  it("parses imageSelector on static pools and leaves pools without it as they were", () => {
    const plain = parseFleetSpec(rawFleetConfig({ pools: [hcloudStaticPoolConfig({ image: undefined })] })).pools[0] as HcloudStaticPool;
    assert.equal(plain.image, "ubuntu-24.04");
    assert.ok(!("imageSelector" in plain), "no imageSelector key when none was given");
    const bySelector = parseFleetSpec(rawFleetConfig({ pools: [hcloudStaticPoolConfig({ image: undefined, imageSelector: "role=node" })] }))
      .pools[0] as HcloudStaticPool;
    assert.equal(bySelector.imageSelector, "role=node");
  });

  it("refuses image with imageSelector and an empty selector, naming the field; parses a selector on an autoscaled pool", () => {
    const both = specProblems(rawFleetConfig({ pools: [hcloudStaticPoolConfig({ imageSelector: "role=node" })] }));
    assert.ok(
      both.some((p) => /^nodefleet:pools\[0\]\.imageSelector: set either image or imageSelector, not both/.test(p)),
      both.join("\n"),
    );
    const empty = specProblems(rawFleetConfig({ pools: [hcloudStaticPoolConfig({ image: undefined, imageSelector: " " })] }));
    assert.ok(
      empty.some((p) => /^nodefleet:pools\[0\]\.imageSelector: imageSelector must be a Hetzner label selector/.test(p)),
      empty.join("\n"),
    );
    // The scaling API resolves an autoscaled pool's selector at admission (automation/catalog/poolImageSource.ts).
    const autoscaled = parseFleetSpec(
      rawFleetConfig({ pools: [hcloudAutoscaledPoolConfig({ image: undefined, imageSelector: "role=node" })] }),
    ).pools[0] as HcloudAutoscaledPool;
    assert.equal(autoscaled.imageSelector, "role=node");
    const autoscaledBoth = specProblems(rawFleetConfig({ pools: [hcloudAutoscaledPoolConfig({ imageSelector: "role=node" })] }));
    assert.ok(
      autoscaledBoth.some((p) => /^nodefleet:pools\[0\]\.imageSelector: set either image or imageSelector, not both/.test(p)),
      autoscaledBoth.join("\n"),
    );
  });

  it("resolves a selector to the newest matching image of each listed type's architecture, else names the field and rule", () => {
    fc.assert(
      fc.property(imagesArb, typesArb, (images, serverTypes) => {
        const pool = {
          provider: "hcloud" as const,
          name: "p",
          mode: "static" as const,
          serverTypes,
          image: "ubuntu-24.04",
          imageSelector: "role=node",
        };
        const lookups = poolImageLookups([pool]);
        const needed = [...new Set(serverTypes.map(serverTypeArchitecture))];
        assert.deepEqual(lookups.map((l) => l.architecture).sort(), [...needed].sort(), "one look-up per architecture");
        const { images: resolved, problems } = resolvePoolImages(
          lookups,
          lookups.map((l) => modelGetImage(images, l)),
        );
        for (const architecture of needed) {
          const newest = images.filter((i) => i.matches && i.architecture === architecture).sort((a, b) => b.created - a.created)[0];
          if (newest) assert.equal(resolved.p?.[architecture], String(newest.id));
          else {
            assert.equal(resolved.p?.[architecture], undefined);
            assert.ok(
              problems.some((p) =>
                p.startsWith(`nodefleet:pools[0].imageSelector: no image matches "role=node" for the ${architecture} architecture`),
              ),
              problems.join("\n"),
            );
          }
        }
        assert.equal(problems.length, needed.filter((a) => !images.some((i) => i.matches && i.architecture === a)).length);
      }),
    );
  });

  it("refuses an image id of another architecture than a listed type, and looks nothing up for a name", () => {
    const images: ModelImage[] = [{ id: 700, architecture: "x86", created: 1, matches: false }];
    const pools = [
      { provider: "hcloud" as const, name: "a", mode: "static" as const, serverTypes: ["cpx21", "cax11"], image: "700" },
      { provider: "hcloud" as const, name: "b", mode: "autoscaled" as const, serverTypes: ["cax11"], image: "ubuntu-24.04" },
    ];
    const lookups = poolImageLookups(pools);
    assert.deepEqual(
      lookups.map((l) => [l.pool, l.architecture, l.args]),
      [
        ["a", "x86", { id: 700 }],
        ["a", "arm", { id: 700 }],
      ],
    );
    const { images: resolved, problems } = resolvePoolImages(
      lookups,
      lookups.map((l) => modelGetImage(images, l)),
    );
    assert.deepEqual(resolved, {}, "an id is used as given");
    assert.equal(problems.length, 1);
    assert.match(problems[0]!, /^nodefleet:pools\[0\]\.image: image 700 is x86 only, but server type cax11 is arm64 \(arm\)/);
    const missing = resolvePoolImages(lookups, [{ error: "not found" }, { error: "not found" }]);
    assert.match(missing.problems[0]!, /^nodefleet:pools\[0\]\.image: no image with id 700/);
  });

  it("puts the resolved image in each member's generation, so a new snapshot rolls one member at a time", () => {
    const spec = parseFleetSpec(
      rawFleetConfig({
        pools: [hcloudStaticPoolConfig({ image: undefined, imageSelector: "role=node", serverTypes: ["cax11"], replicas: 3 })],
      }),
    );
    const pool = spec.pools[0] as HcloudStaticPool;
    const { kubeconfig: _k, ...cluster } = spec.cluster;
    assert.throws(() => staticHcloudMembers(cluster, pool), /imageSelector "role=node" was not resolved for server type cax11/);
    const first = planHcloudServers(cluster, pool, staticHcloudMembers(cluster, pool, [], { x86: "1", arm: "2" }));
    assert.deepEqual(
      first.map((p) => p.image),
      ["2", "2", "2"],
      "a cax member boots the arm image",
    );
    const next = planHcloudServers(cluster, pool, staticHcloudMembers(cluster, pool, [], { x86: "1", arm: "3" }));
    for (const [i, plan] of next.entries()) assert.notEqual(plan.generation, first[i]!.generation, "a new snapshot is a new generation");
    const x86Only = planHcloudServers(cluster, pool, staticHcloudMembers(cluster, pool, [], { x86: "9", arm: "2" }));
    assert.deepEqual(
      x86Only.map((p) => p.generation),
      first.map((p) => p.generation),
      "another architecture's new snapshot changes nothing",
    );
    // The rollout of that generation, with the default maxSurge 1 / maxUnavailable 0: one member per run.
    const current = first.map((p) => ({ nodeId: p.member.nodeId, generation: p.generation, ready: true, spreadGroup: 0 }));
    const desired = next.map((p) => ({ nodeId: p.member.nodeId, generation: p.generation, placementSlot: p.placementSlot }));
    const step = planRollout(desired, current);
    assert.equal(step.replacing.length, 1);
    assert.equal(step.servers.length, 4, "three running plus one surged server");
  });

  it("looks the selector up per architecture in the fleet program and refuses at preview when none matches", async () => {
    const config = rawFleetConfig({
      pools: [hcloudStaticPoolConfig({ image: undefined, imageSelector: "role=node", serverTypes: ["cax11"], replicas: 2 })],
    });
    const answer = (args: pulumi.runtime.MockCallArgs): Record<string, unknown> => {
      if (args.token !== "hcloud:index/getImage:getImage") return args.inputs;
      if (args.inputs.withArchitecture === "arm") return { ...args.inputs, id: 4711, architecture: "arm" };
      return args.inputs; // what the mock runtime gives for no image: no id, no architecture
    };
    const run = await runFleetProgramUnderMocks(config, { call: answer });
    const calls = run.calls.filter((c) => c.token === "hcloud:index/getImage:getImage");
    assert.deepEqual(
      calls.map((c) => c.inputs),
      [{ withSelector: "role=node", mostRecent: true, withArchitecture: "arm" }],
    );
    const servers = run.resources.filter((r) => r.type === "hcloud:index/server:Server");
    assert.equal(servers.length, 2);
    for (const s of servers) assert.equal(s.inputs.image, "4711");

    const refused = rawFleetConfig({
      pools: [hcloudStaticPoolConfig({ image: undefined, imageSelector: "role=node", serverTypes: ["cpx21"], replicas: 2 })],
    });
    await assert.rejects(
      runFleetProgramUnderMocks(refused, { call: answer }),
      /nodefleet:pools\[0\]\.imageSelector: no image matches "role=node" for the x86 architecture \(server type cpx21 is x86/,
    );
  });

  it("refuses at preview an autoscaled pool's selector with no image for a listed type's architecture, naming the field", async () => {
    const answer = (args: pulumi.runtime.MockCallArgs): Record<string, unknown> => {
      if (args.token !== "hcloud:index/getImage:getImage") return args.inputs;
      if (args.inputs.withArchitecture === "x86") return { ...args.inputs, id: 4001, architecture: "x86" };
      return args.inputs; // no arm snapshot matches
    };
    const mixed = rawFleetConfig({
      pools: [
        hcloudStaticPoolConfig(),
        hcloudAutoscaledPoolConfig({ image: undefined, imageSelector: "role=node", serverTypes: ["cpx21", "cax11"] }),
      ],
    });
    await assert.rejects(
      runFleetProgramUnderMocks(mixed, { call: answer }),
      /nodefleet:pools\[1\]\.imageSelector: no image matches "role=node" for the arm architecture \(server type cax11 is arm64/,
    );
    const x86Only = rawFleetConfig({
      pools: [
        hcloudStaticPoolConfig(),
        hcloudAutoscaledPoolConfig({ image: undefined, imageSelector: "role=node", serverTypes: ["cpx21"] }),
      ],
    });
    const run = await runFleetProgramUnderMocks(x86Only, { call: answer });
    assert.deepEqual(
      run.calls.filter((c) => c.token === "hcloud:index/getImage:getImage").map((c) => c.inputs),
      [{ withSelector: "role=node", mostRecent: true, withArchitecture: "x86" }],
      "one look-up for the autoscaled pool's one architecture",
    );
  });
});
