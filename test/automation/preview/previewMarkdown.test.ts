/**
 * The preview formatter on representative RunResults shaped like the simulated engine's output for
 * the example stack: golden Markdown under test/fixtures/preview/ (regenerate with
 * NODEFLEET_UPDATE_GOLDEN=1, then review the diff by eye), plus assertions on the data itself.
 */
import { strict as assert } from "node:assert";
import * as path from "node:path";
import fc from "fast-check";
import { type FleetSpec, parseFleetSpec } from "../../../components/fleet/fleetSpec";
import { type ResourceStep, type RunResult, type StepOp, emptySummary } from "../../../automation/engine/stackEngine";
import { configChangesByPool, fleetLayout } from "../../../automation/preview/fleetLayout";
import { MAX_PREVIEW_CHARS, PREVIEW_MARKER, capMarkdown, formatPreviewMarkdown } from "../../../automation/preview/previewMarkdown";
import {
  type PreviewContext,
  type StackPreview,
  buildStackPreview,
  previewReport,
  rolloutsIn,
} from "../../../automation/preview/stackPreview";
import { inPlaceRolloutSummary, planInPlaceRollout } from "../../../components/fleet/rolloutPlan";
import { configValues, readStackConfigFile } from "../../../automation/stackConfigFile";
import { BOOTSTRAP_TOKEN_TEXT, assertPreviewGolden } from "../../support/previewGolden";

const REPO = path.resolve(__dirname, "..", "..", "..", "..");

// ---- the example stack's config and variations of it ---------------------------------------------

type RawPool = Record<string, unknown>;

function exampleRaw(): Record<string, unknown> {
  return structuredClone(configValues(readStackConfigFile("example", REPO).config));
}

function withPools(edit: (pools: RawPool[]) => RawPool[]): FleetSpec {
  const raw = exampleRaw();
  raw["nodefleet:pools"] = edit(raw["nodefleet:pools"] as RawPool[]);
  return parseFleetSpec(raw);
}

const exampleSpec = (): FleetSpec => withPools((p) => p);
const editPool = (name: string, edit: (pool: RawPool) => RawPool) => (pools: RawPool[]) =>
  pools.map((p) => (p.name === name ? edit({ ...p }) : p));

// ---- steps shaped like the engines report them --------------------------------------------------

const STACK = "example";
const urn = (type: string, name: string) => `urn:pulumi:${STACK}::nodefleet::${type}::${name}`;

function step(op: StepOp, type: string, name: string, keys: string[] = [], replaceKeys?: string[]): ResourceStep {
  return { op, urn: urn(type, name), type, name, keys, ...(replaceKeys ? { replaceKeys } : {}) };
}

/** The resources the program declares per server generation (see components/hcloud/hcloudNodePool.ts). */
function serverSteps(op: StepOp, serverName: string): ResourceStep[] {
  return [
    step(op, "nodefleet:kubernetes:BootstrapToken", `${serverName}-token`),
    step(op, "time:index/offset:Offset", `${serverName}-token-expiry`),
    step(op, "random:index/randomString:RandomString", `${serverName}-token-id`),
    step(op, "random:index/randomString:RandomString", `${serverName}-token-secret`),
    step(op, "kubernetes:core/v1:Secret", `${serverName}-token-secret-object`),
    step(op, "hcloud:index/server:Server", serverName),
  ];
}

function fleetBase(op: StepOp = "same"): ResourceStep[] {
  return [
    step(op, "nodefleet:index:Fleet", "example"),
    step(op, "nodefleet:hcloud:ClusterNetwork", "example-network"),
    step(op, "nodefleet:hcloud:ClusterFirewall", "example-firewall"),
    step(op, "hcloud:index/network:Network", "example-network-network"),
    step(op, "hcloud:index/firewall:Firewall", "example-firewall-firewall"),
    step(op, "hcloud:index/networkSubnet:NetworkSubnet", "example-network-subnet"),
    step(op, "pulumi:providers:kubernetes", "example-kubernetes"),
  ];
}

const GENERAL = ["example-hel1-general-0-m5mckb", "example-hel1-general-1-y3kyon", "example-hel1-general-2-1u34ss"];

/** A pool's component, placement groups and servers; deletes are listed last, in reverse, as engines do. */
function poolSteps(
  pool: string,
  members: Array<[StepOp, string]>,
  componentOp: StepOp = "same",
  groupOp: StepOp = componentOp,
): ResourceStep[] {
  const live = members.filter(([op]) => op !== "delete");
  const gone = members.filter(([op]) => op === "delete");
  return [
    step(componentOp, "nodefleet:hcloud:NodePool", `example-${pool}`),
    ...(groupOp === "delete" ? [] : [step(groupOp, "hcloud:index/placementGroup:PlacementGroup", `example-${pool}-pg-0`)]),
    ...live.flatMap(([op, name]) => serverSteps(op, name)),
    ...gone.reverse().flatMap(([op, name]) => serverSteps(op, name).reverse()),
    ...(groupOp === "delete" ? [step("delete", "hcloud:index/placementGroup:PlacementGroup", `example-${pool}-pg-0`)] : []),
  ];
}

function runResult(steps: ResourceStep[], overrides: Partial<RunResult> = {}): RunResult {
  const summary = emptySummary();
  for (const s of steps) summary[s.op] += 1;
  return { kind: "preview", summary, steps, outputs: {}, succeeded: true, durationMs: 1234, simulated: true, ...overrides };
}

function context(before: FleetSpec | undefined, after: FleetSpec | undefined, extra: Partial<PreviewContext> = {}): PreviewContext {
  return {
    project: "nodefleet",
    stack: STACK,
    engine: "simulated",
    baseRef: "origin/main",
    before: before && fleetLayout(before),
    after: after && fleetLayout(after),
    configChanges: before && after ? configChangesByPool(before, after) : undefined,
    ...extra,
  };
}

function single(preview: StackPreview): string {
  return formatPreviewMarkdown(previewReport([preview]));
}

// ---- the five kinds of change --------------------------------------------------------------------

function addPool(): StackPreview {
  const after = withPools((pools) => [
    ...pools,
    {
      name: "nbg1-extra",
      provider: "hcloud",
      mode: "static",
      replicas: 2,
      location: "nbg1",
      serverTypes: ["cpx21"],
      image: "ubuntu-24.04",
    },
  ]);
  const steps = [
    ...fleetBase(),
    ...poolSteps(
      "hel1-general",
      GENERAL.map((n) => ["same", n] as [StepOp, string]),
    ),
    ...poolSteps(
      "nbg1-extra",
      [
        ["create", "example-nbg1-extra-0-q8w3ke"],
        ["create", "example-nbg1-extra-1-z0p4rt"],
      ],
      "create",
    ),
  ];
  return buildStackPreview(context(exampleSpec(), after), { result: runResult(steps) });
}

function scalePool(): StackPreview {
  const after = withPools(editPool("hel1-general", (p) => ({ ...p, replicas: 5 })));
  const steps = [
    ...fleetBase(),
    ...poolSteps("hel1-general", [
      ...GENERAL.map((n) => ["same", n] as [StepOp, string]),
      ["create", "example-hel1-general-3-k2l9xa"],
      ["create", "example-hel1-general-4-b7c1dd"],
    ]),
  ];
  return buildStackPreview(context(exampleSpec(), after), { result: runResult(steps) });
}

const NEW_GENERATION = ["example-hel1-general-0-7tq2mz", "example-hel1-general-1-p0xw4c", "example-hel1-general-2-u8f3hn"];

function regenerate(after: FleetSpec): StackPreview {
  const steps = [
    ...fleetBase(),
    ...poolSteps("hel1-general", [
      ...NEW_GENERATION.map((n) => ["create", n] as [StepOp, string]),
      ...GENERAL.map((n) => ["delete", n] as [StepOp, string]),
    ]),
  ];
  return buildStackPreview(context(exampleSpec(), after), { result: runResult(steps) });
}

const changeServerType = () => regenerate(withPools(editPool("hel1-general", (p) => ({ ...p, serverTypes: ["cpx41", "cpx31"] }))));
const changeUserData = () =>
  regenerate(
    withPools(
      editPool("hel1-general", (p) => ({ ...p, labels: { "node.kubernetes.io/pool": "hel1-general", "example.com/team": "web" } })),
    ),
  );

function removePool(): StackPreview {
  const after = withPools((pools) => pools.filter((p) => p.name !== "hel1-general"));
  const steps = [
    ...fleetBase(),
    ...poolSteps(
      "hel1-general",
      GENERAL.map((n) => ["delete", n] as [StepOp, string]),
      "delete",
    ),
  ];
  return buildStackPreview(context(exampleSpec(), after), { result: runResult(steps) });
}

describe("preview Markdown (pure formatter)", () => {
  it("adds a pool: 0 -> 2 nodes of the new pool, every new resource listed", () => {
    const preview = addPool();
    assert.deepEqual(preview.pools, [
      { pool: "hel1-general", change: "kept", nodesBefore: 3, nodesAfter: 3, serverTypesBefore: ["cpx31"], serverTypesAfter: ["cpx31"] },
      { pool: "nbg1-extra", change: "added", nodesBefore: 0, nodesAfter: 2, serverTypesBefore: [], serverTypesAfter: ["cpx21"] },
    ]);
    assert.equal(preview.summary.create, 2 * 6 + 2);
    assertPreviewGolden("add-pool", single(preview), "the formatter's output");
  });

  it("scales a pool: 3 -> 5 with two new servers and no replacement", () => {
    const preview = scalePool();
    assert.deepEqual(preview.pools, [
      { pool: "hel1-general", change: "kept", nodesBefore: 3, nodesAfter: 5, serverTypesBefore: ["cpx31"], serverTypesAfter: ["cpx31"] },
    ]);
    assert.deepEqual(preview.replacements, []);
    assertPreviewGolden("scale-pool", single(preview), "the formatter's output");
  });

  it("changes a server type: every node gets a new generation, forced by serverType cpx31 -> cpx41", () => {
    const preview = changeServerType();
    assert.deepEqual(preview.pools, [
      { pool: "hel1-general", change: "kept", nodesBefore: 3, nodesAfter: 3, serverTypesBefore: ["cpx31"], serverTypesAfter: ["cpx41"] },
    ]);
    assert.equal(preview.replacements.length, 3);
    for (const r of preview.replacements) {
      assert.equal(r.kind, "generation");
      assert.deepEqual(r.forcedBy, ["serverType"]);
      assert.deepEqual([r.serverTypeBefore, r.serverTypeAfter], ["cpx31", "cpx41"]);
    }
    assert.deepEqual(
      preview.replacements.map((r) => [r.node, r.oldName, r.newName]),
      GENERAL.map((old, i) => [old.slice(0, -7), old, NEW_GENERATION[i]]),
    );
    assertPreviewGolden("change-server-type", single(preview), "the formatter's output");
  });

  it("changes user data (pool labels): new generations forced by userData, naming the config field", () => {
    const preview = changeUserData();
    assert.equal(preview.replacements.length, 3);
    for (const r of preview.replacements) {
      assert.deepEqual(r.forcedBy, ["userData"]);
      assert.deepEqual(r.configFields, ["pool.labels"]);
    }
    assert.match(single(preview), /forced by `userData`; config: `pool\.labels`/);
    assertPreviewGolden("change-user-data", single(preview), "the formatter's output");
  });

  it("removes a pool: 3 -> 0 and every resource of the pool deleted", () => {
    const preview = removePool();
    assert.deepEqual(preview.pools, [
      { pool: "hel1-general", change: "removed", nodesBefore: 3, nodesAfter: 0, serverTypesBefore: ["cpx31"], serverTypesAfter: [] },
    ]);
    assert.equal(preview.summary.delete, 1 + 1 + 3 * 6);
    assertPreviewGolden("remove-pool", single(preview), "the formatter's output");
  });

  it("calls out a Pulumi replace with the property that forces it", () => {
    const steps = [
      ...fleetBase(),
      step("replace", "hcloud:index/networkSubnet:NetworkSubnet", "example-network-subnet", ["ipRange"], ["ipRange"]),
      ...poolSteps("hel1-general", []),
      step("replace", "hcloud:index/server:Server", "example-hel1-general-0-m5mckb", ["labels", "userData"], ["userData"]),
    ];
    const preview = buildStackPreview(context(undefined, exampleSpec(), { baseRef: undefined }), { result: runResult(steps) });
    const markdown = single(preview);
    assert.match(
      markdown,
      /\| replace \| `hcloud:index\/networkSubnet:NetworkSubnet` \| `example-network-subnet` \| `ipRange` \*\*\(forces replacement\)\*\* \|/,
    );
    assert.match(
      markdown,
      /\| replace \| `hcloud:index\/server:Server` \| `example-hel1-general-0-m5mckb` \| `userData` \*\*\(forces replacement\)\*\*, `labels` \|/,
    );
    assert.deepEqual(
      preview.replacements.map((r) => [r.kind, r.forcedBy]),
      [["replace", ["userData"]]],
    );
    assertPreviewGolden("replace-step", markdown, "the formatter's output");
  });

  it("a bare-metal pool's rollout: which members are drained and reinstalled, re-joined or re-pushed now, and how many remain", () => {
    const members = (generation: string) =>
      Array.from({ length: 6 }, (_, i) => ({ nodeId: `fsn-metal-s${i}`, generation, placementSlot: i }));
    const running = members("aaaaaa").map((m) => ({ nodeId: m.nodeId, generation: m.generation, ready: true }));
    const robot = inPlaceRolloutSummary("fsn-metal", planInPlaceRollout(members("bbbbbb"), running, 3), (id) =>
      id.endsWith("s0") ? "reinstall" : id.endsWith("s1") ? "re-join" : "kubelet-config",
    );
    const finished = inPlaceRolloutSummary("kura", planInPlaceRollout(members("aaaaaa"), running), () => "replace");
    const outputs = { rollout: [robot, finished, { pool: "broken", inPlace: true, updating: [{ nodeId: 7, change: "explode" }] }] };
    assert.deepEqual(
      rolloutsIn(outputs),
      [
        {
          pool: "fsn-metal",
          inPlace: true,
          updating: [
            { nodeId: "fsn-metal-s0", change: "reinstall" },
            { nodeId: "fsn-metal-s1", change: "re-join" },
            { nodeId: "fsn-metal-s2", change: "kubelet-config" },
          ],
          remaining: 3,
          waiting: "maxUnavailable 3 reached",
        },
      ],
      "a finished pool and malformed entries are left out",
    );
    const preview = buildStackPreview(context(exampleSpec(), exampleSpec()), { result: runResult([...fleetBase()], { outputs }) });
    const markdown = single(preview);
    assert.match(
      markdown,
      /### Rolling replacement\n\n- pool `fsn-metal`: 3 members still to update after this run\n {2}- drained, then reinstalled now: `fsn-metal-s0`\n {2}- drained, then re-joined now \(new version installed in place\): `fsn-metal-s1`\n {2}- drained, then its kubelet config re-pushed now \(kubelet restarted\): `fsn-metal-s2`\n {2}- waiting: maxUnavailable 3 reached\n/,
    );
  });

  it("without any config, still counts nodes per pool by their names", () => {
    const steps = [
      ...fleetBase(),
      ...poolSteps("hel1-general", [...GENERAL.slice(0, 2).map((n) => ["same", n] as [StepOp, string]), ["delete", GENERAL[2]]]),
    ];
    const preview = buildStackPreview(context(undefined, undefined, { baseRef: undefined }), { result: runResult(steps) });
    assert.deepEqual(preview.pools, [
      { pool: "hel1-general", change: "kept", nodesBefore: 3, nodesAfter: 2, serverTypesBefore: [], serverTypesAfter: [] },
    ]);
    assert.match(single(preview), /^\| `hel1-general` \| 3 → 2 \(-1\) \| \? \|$/m, "unknown types shown as ?");
  });
});

describe("preview Markdown: secrets, size, several stacks, failures", () => {
  const HCLOUD_TOKEN = "hc_0123456789abcdefABCDEF0123456789abcdefABCDEF0123456789abcdefAB";

  it("masks secrets in errors: known credential values and anything shaped like a bootstrap token", () => {
    const steps = [
      ...fleetBase(),
      {
        ...step("create", "hcloud:index/server:Server", "example-hel1-general-3-k2l9xa"),
        error: `POST https://api.hetzner.cloud/v1/servers (Authorization: Bearer ${HCLOUD_TOKEN}): token abcdef.0123456789abcdef in user data rejected`,
      },
    ];
    const preview = buildStackPreview(context(exampleSpec(), exampleSpec(), { knownSecrets: [HCLOUD_TOKEN] }), {
      result: runResult(steps, { succeeded: false }),
    });
    const markdown = single(preview);
    const json = JSON.stringify(previewReport([preview]));
    for (const text of [markdown, json]) {
      assert.ok(!text.includes(HCLOUD_TOKEN), "the Hetzner token is masked");
      assert.doesNotMatch(text, BOOTSTRAP_TOKEN_TEXT, "bootstrap tokens are masked");
      assert.match(text, /\[secret\]/);
    }
    assert.equal(preview.succeeded, false);
    assertPreviewGolden("masked-secrets", markdown, "the formatter's output");
  });

  it("cuts output above 60,000 characters at a line, saying how much was left out", () => {
    // 600 nodes created: far more than 60,000 characters of step table.
    const members = Array.from(
      { length: 600 },
      (_, i) => ["create", `example-hel1-general-${i}-${String(i).padStart(6, "0")}`] as [StepOp, string],
    );
    // More members than a valid config allows on one network: the formatter must not care.
    const layout = {
      clusterId: "example",
      pools: [{ name: "hel1-general", provider: "hcloud" as const, mode: "static" as const, serverTypes: ["cpx31"] }],
    };
    const preview = buildStackPreview(context(undefined, undefined, { after: layout, before: { clusterId: "example", pools: [] } }), {
      result: runResult([...fleetBase(), ...poolSteps("hel1-general", members, "create")]),
    });
    const full = formatPreviewMarkdown(previewReport([preview]), Number.MAX_SAFE_INTEGER);
    const markdown = single(preview);
    assert.ok(full.length > MAX_PREVIEW_CHARS);
    assert.ok(markdown.length <= MAX_PREVIEW_CHARS, `${markdown.length} characters`);
    assert.ok(markdown.startsWith(PREVIEW_MARKER), "the marker survives the cut");
    assert.match(markdown, /\| `hel1-general` \(added\) \| 0 → 600 \(\+600\) \| none → cpx31 \|/, "the pool table comes before the cut");
    const leftOut = /Preview cut: ([\d,]+) characters \(([\d,]+) lines\) left out/.exec(markdown);
    assert.ok(leftOut, "the note says how much was left out");
    const cutAt = markdown.indexOf("\n\n> [!WARNING]");
    assert.equal(Number(leftOut[1].replace(/,/g, "")), full.length - cutAt, "the count is exact");
    assert.ok(full.startsWith(markdown.slice(0, cutAt)), "the kept part is the beginning of the full text");
    // Golden only the tail around the cut: the table rows before it are regular.
    assertPreviewGolden("size-cap-tail", markdown.slice(markdown.lastIndexOf("\n", cutAt - 1) + 1), "the formatter's output");
  });

  it("cap property: within the limit, a prefix of the input cut at a line, fences balanced, exact left-out count", () => {
    const line = fc.oneof(
      fc.constant("```text"),
      fc.constant("```"),
      fc.string({ maxLength: 120 }).map((s) => s.replace(/\n/g, " ")),
    );
    fc.assert(
      fc.property(fc.array(line, { maxLength: 200 }), fc.integer({ min: 400, max: 5000 }), (lines, max) => {
        const text = lines.join("\n");
        const capped = capMarkdown(text, max);
        if (text.length <= max) return capped === text;
        const cut = capped.indexOf("\n\n> [!WARNING]");
        const head = capped.slice(0, cut);
        // The head is a prefix of the text cut at a line, plus perhaps a fence line closing an open block.
        const withoutFence = head.replace(/\n`{3,}$/, "");
        const kept = text.startsWith(head) && (head.length === text.length || text[head.length] === "\n") ? head : withoutFence;
        const leftOut = Number(/Preview cut: ([\d,]+) characters/.exec(capped)![1].replace(/,/g, ""));
        let open: string | null = null;
        for (const l of head.split("\n")) {
          const fence = /^(`{3,})/.exec(l)?.[1];
          if (fence && open === null) open = fence;
          else if (open !== null && l === open) open = null;
        }
        return (
          capped.length <= max &&
          open === null &&
          text.startsWith(kept) &&
          (kept.length === text.length || text[kept.length] === "\n") &&
          (leftOut === text.length - kept.length || leftOut === text.length - withoutFence.length)
        );
      }),
      { numRuns: 200 },
    );
  });

  it("closes a code fence the cut leaves open and stays within the cap", () => {
    const text = ["# title", "", "```text", ...Array.from({ length: 200 }, (_, i) => `error line ${i}`), "```", ""].join("\n");
    const capped = capMarkdown(text, 1000);
    assert.ok(capped.length <= 1000, `${capped.length}`);
    assert.equal((capped.match(/^```/gm) ?? []).length % 2, 0, "fences are balanced");
    assert.match(capped, /Preview cut: [\d,]+ characters/);
  });

  it("renders several stacks, one section each, and a failed one with its error", () => {
    const ok = scalePool();
    const failed = buildStackPreview(
      { project: "nodefleet", stack: "production", engine: "simulated", baseRef: "origin/main" },
      {
        error:
          "invalid nodefleet stack config:\n  - nodefleet:pools[0].location: location ash is in network zone us-east, outside the network's zone eu-central",
      },
    );
    const report = previewReport([ok, failed]);
    assert.equal(report.succeeded, false);
    const markdown = formatPreviewMarkdown(report);
    assert.equal(markdown.split(PREVIEW_MARKER).length, 2, "one marker");
    assert.equal((markdown.match(/^## Stack /gm) ?? []).length, 2);
    assert.match(markdown, /^## Stack `production`: preview failed$/m);
    assertPreviewGolden("multi-stack", markdown, "the formatter's output");
  });

  it("renders a failed preview with the error in a code block", () => {
    const failed = buildStackPreview(
      { project: "nodefleet", stack: "example", engine: "automation", knownSecrets: [HCLOUD_TOKEN] },
      { error: `pulumi preview failed: hcloud: invalid token ${HCLOUD_TOKEN} (unauthorized)\n\`\`\`weird fence\`\`\`` },
    );
    const markdown = single(failed);
    assert.ok(!markdown.includes(HCLOUD_TOKEN));
    assert.match(markdown, /^````text$/m, "a fence longer than the backticks in the error");
    assert.equal(failed.simulated, false);
    assertPreviewGolden("failure", markdown, "the formatter's output");
  });
});
