import assert from "node:assert/strict";
import { bookkeepingLine, separateBookkeeping } from "../../../automation/preview/bookkeepingSteps";
import { formatPreviewMarkdown } from "../../../automation/preview/previewMarkdown";
import { buildStackPreview, previewReport } from "../../../automation/preview/stackPreview";
import type { ResourceStep, StepOp } from "../../../automation/engine/stackEngine";

const step = (op: StepOp, type: string, name: string): ResourceStep => ({ op, type, name, keys: [] }) as unknown as ResourceStep;
const tokenParts = (node: string, op: StepOp): ResourceStep[] => [
  step(op, "nodefleet:kubernetes:BootstrapToken", `${node}-token`),
  step(op, "random:index/randomString:RandomString", `${node}-token-id`),
  step(op, "random:index/randomString:RandomString", `${node}-token-secret`),
  step(op, "time:index/offset:Offset", `${node}-token-expiry`),
  step(op, "kubernetes:core/v1:Secret", `${node}-token-secret-object`),
];

describe("preview bookkeeping: steps that are not changes to the fleet", function () {
  const joined = "c1-general-0-abcdef";
  const removed = "c1-general-1-ghijkl";
  const steps = [
    step("same", "hcloud:index/server:Server", joined),
    ...tokenParts(joined, "delete"),
    step("delete", "hcloud:index/server:Server", removed),
    ...tokenParts(removed, "delete"),
    step("delete", "pulumi:pulumi:StackReference", "nodefleet-previous-run"),
  ];

  it("sets apart the joined node's token parts and the own-outputs reference, not a removed node's token", function () {
    const separated = separateBookkeeping(steps);
    assert.deepEqual(separated.summary, { revokedJoinTokens: 1, ownOutputsReference: true });
    assert.equal(separated.bookkeeping.length, 6);
    assert.ok(
      separated.steps.some((s) => s.name === `${removed}-token-secret-object`),
      "a removed member's token delete stays a change",
    );
    assert.ok(!separated.steps.some((s) => s.name.startsWith(`${joined}-token`)));
  });

  it("sets apart a plugin token's Secret deleted in place for a kept server, not its other updates", function () {
    const update = (name: string, keys: string[]) =>
      ({ op: "update", type: "nodefleet:kubernetes:NodeBootstrapToken", name, keys }) as unknown as ResourceStep;
    const separated = separateBookkeeping([
      step("same", "hcloud:index/server:Server", joined),
      update(`${joined}-token`, ["secretObject"]),
      step("same", "hcloud:index/server:Server", removed),
      update(`${removed}-token`, ["ttlMinutes", "secretObject"]),
    ]);
    assert.equal(separated.summary.revokedJoinTokens, 1);
    assert.deepEqual(
      separated.steps.filter((s) => s.op === "update").map((s) => s.name),
      [`${removed}-token`],
      "an update of anything else stays a change",
    );
  });

  it("explains them in one line, and an unchanged fleet previews as no change", function () {
    assert.equal(bookkeepingLine({ revokedJoinTokens: 0, ownOutputsReference: false }), undefined);
    const unchanged = [
      step("same", "hcloud:index/server:Server", joined),
      ...tokenParts(joined, "delete"),
      step("delete", "pulumi:pulumi:StackReference", "nodefleet-previous-run"),
    ];
    const preview = buildStackPreview(
      { project: "p", stack: "s", engine: "automation" },
      {
        result: {
          kind: "preview",
          summary: { create: 0, update: 0, replace: 0, delete: 6, same: 1 },
          steps: unchanged,
          outputs: {},
          succeeded: true,
          durationMs: 1,
          simulated: false,
        } as never,
      },
    );
    assert.deepEqual(preview.summary, { create: 0, update: 0, replace: 0, delete: 0, same: 7 });
    assert.deepEqual(preview.steps, []);
    const markdown = formatPreviewMarkdown(previewReport([preview]));
    assert.match(markdown, /\*\*Changes:\*\* 0 to create, 0 to update, 0 to replace, 0 to delete/);
    assert.match(
      markdown,
      /Not counted as changes: the join token of 1 node that has joined is revoked; the program's read of its own last outputs \(nodefleet-previous-run\) is not needed here\./,
    );
  });
});
