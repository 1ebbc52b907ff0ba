/**
 * `nodefleet preview` end to end, as a process, through the simulated engine: a scratch git
 * project whose committed stacks/Pulumi.example.yaml is the example stack (the base ref), and a
 * working tree changed in the five ways reviewers meet most. The Markdown is compared with golden
 * files under test/fixtures/preview/e2e-*.md (regenerate with NODEFLEET_UPDATE_GOLDEN=1 after a
 * deliberate change to the components, then review the diff by eye).
 */
import { strict as assert } from "node:assert";
import { execFileSync, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { parse, stringify } from "yaml";
import { PREVIEW_MARKER } from "../../../automation/preview/previewMarkdown";
import type { PreviewReport } from "../../../automation/preview/stackPreview";
import { BOOTSTRAP_TOKEN_TEXT, assertPreviewGolden } from "../../support/previewGolden";

const REPO = path.resolve(__dirname, "..", "..", "..", "..");
const CLI = path.join(REPO, "bin", "nodefleet.js");

type StackDocument = { config: Record<string, unknown> };
type Pool = Record<string, unknown>;

/**
 * The example stack with its Hetzner Cloud pools only: the five changes are about hcloud pools, and
 * leaving the Elastic Metal pool out keeps these goldens about what they test (and the runs short).
 */
function exampleDocument(): StackDocument {
  const document = parse(fs.readFileSync(path.join(REPO, "stacks", "Pulumi.example.yaml"), "utf8")) as StackDocument;
  document.config["nodefleet:pools"] = (document.config["nodefleet:pools"] as Pool[]).filter((p) => p.provider === "hcloud");
  return document;
}

/** The parent's environment without simulation knobs or credentials, which would change what the runs do. */
function childEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const key of Object.keys(env)) {
    if (key.startsWith("NODEFLEET_") || ["HCLOUD_TOKEN", "SCW_ACCESS_KEY", "SCW_SECRET_KEY", "PULUMI_BACKEND_URL"].includes(key))
      delete env[key];
  }
  return env;
}

/**
 * The base ref's nodes have joined (the simulated cloud's servers count as Ready), so the run after
 * deletes their bootstrap token Secrets, and nothing else. Their going is bookkeeping, explained
 * apart: not a delete of the fleet.
 */
function assertJoinedTokensAreBookkeeping(
  stack: { steps: ReadonlyArray<{ op: string }>; summary: { delete: number }; bookkeeping?: { revokedJoinTokens: number } },
  nodes: number,
): void {
  assert.deepEqual(
    stack.steps.filter((s) => s.op === "delete"),
    [],
  );
  assert.equal(stack.summary.delete, 0);
  assert.equal(stack.bookkeeping?.revokedJoinTokens, nodes);
}

describe("nodefleet preview (as a process, simulated engine, --base-ref)", function () {
  this.timeout(180_000);
  let project: string;

  const git = (...args: string[]) =>
    execFileSync("git", ["-c", "user.name=nodefleet-test", "-c", "user.email=test@example.invalid", ...args], {
      cwd: project,
      stdio: "pipe",
    });

  function writeStack(stack: string, document: StackDocument): void {
    fs.writeFileSync(path.join(project, "stacks", `Pulumi.${stack}.yaml`), stringify(document));
  }

  function withPools(edit: (pools: Pool[]) => Pool[]): StackDocument {
    const document = exampleDocument();
    document.config["nodefleet:pools"] = edit(document.config["nodefleet:pools"] as Pool[]);
    return document;
  }

  const editPool = (name: string, edit: (pool: Pool) => Pool) => (pools: Pool[]) =>
    pools.map((p) => (p.name === name ? edit({ ...p }) : p));

  function preview(stacks: string[]) {
    const markdownFile = path.join(project, "preview.md");
    fs.rmSync(markdownFile, { force: true });
    const args = [CLI, "preview", ...stacks.flatMap((s) => ["--stack", s]), "--engine", "simulated", "--base-ref", "HEAD"];
    args.push("--data-dir", path.join(project, ".nodefleet"), "--markdown", markdownFile, "--json");
    const run = spawnSync(process.execPath, args, { cwd: project, env: childEnv(), encoding: "utf8", timeout: 120_000 });
    const markdown = fs.existsSync(markdownFile) ? fs.readFileSync(markdownFile, "utf8") : "";
    return { status: run.status, stdout: run.stdout, stderr: run.stderr, markdown };
  }

  function report(run: ReturnType<typeof preview>): PreviewReport {
    return JSON.parse(run.stdout) as PreviewReport;
  }

  before(() => {
    project = fs.mkdtempSync(path.join(os.tmpdir(), "nodefleet-preview-e2e-"));
    fs.copyFileSync(path.join(REPO, "Pulumi.yaml"), path.join(project, "Pulumi.yaml"));
    fs.mkdirSync(path.join(project, "stacks"));
    writeStack("example", exampleDocument());
    git("init", "--quiet");
    git("add", ".");
    git("commit", "--quiet", "-m", "base");
  });

  after(() => {
    if (project) fs.rmSync(project, { recursive: true, force: true });
  });

  afterEach(() => writeStack("example", exampleDocument()));

  it("shows no changes when the working tree equals the base ref (the joined nodes' token Secrets going are bookkeeping)", () => {
    const run = preview(["example"]);
    assert.equal(run.status, 0, run.stderr);
    const stack = report(run).stacks[0];
    assert.deepEqual([stack.summary.create, stack.summary.update, stack.summary.replace], [0, 0, 0]);
    assertJoinedTokensAreBookkeeping(stack, 3);
    assert.ok(stack.summary.same > 0);
    assert.match(run.stderr, /SIMULATED/);
  });

  it("adds a pool", () => {
    writeStack(
      "example",
      withPools((pools) => [
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
      ]),
    );
    const run = preview(["example"]);
    assert.equal(run.status, 0, run.stderr);
    const stack = report(run).stacks[0];
    const extra = stack.pools.find((p) => p.pool === "nbg1-extra");
    assert.deepEqual(extra && [extra.change, extra.nodesBefore, extra.nodesAfter, extra.serverTypesAfter], ["added", 0, 2, ["cpx21"]]);
    assertJoinedTokensAreBookkeeping(stack, 3);
    assertPreviewGolden("e2e-add-pool", run.markdown, "the command's Markdown");
  });

  it("scales a pool", () => {
    writeStack("example", withPools(editPool("hel1-general", (p) => ({ ...p, replicas: 5 }))));
    const run = preview(["example"]);
    assert.equal(run.status, 0, run.stderr);
    const stack = report(run).stacks[0];
    const general = stack.pools.find((p) => p.pool === "hel1-general");
    assert.deepEqual(general && [general.nodesBefore, general.nodesAfter], [3, 5]);
    assert.deepEqual(stack.replacements, []);
    assertJoinedTokensAreBookkeeping(stack, 3);
    assertPreviewGolden("e2e-scale-pool", run.markdown, "the command's Markdown");
  });

  it("changes a server type: the rollout surges one new-type server and keeps the others (maxSurge 1)", () => {
    writeStack("example", withPools(editPool("hel1-general", (p) => ({ ...p, serverTypes: ["cpx41", "cpx31"] }))));
    const run = preview(["example"]);
    assert.equal(run.status, 0, run.stderr);
    const stack = report(run).stacks[0];
    const general = stack.pools.find((p) => p.pool === "hel1-general");
    assert.deepEqual(general && [general.nodesBefore, general.nodesAfter, general.serverTypesBefore, general.serverTypesAfter], [
      3,
      4,
      ["cpx31"],
      ["cpx31", "cpx41"],
    ]);
    assert.equal(stack.replacements.length, 0, "no member is replaced all at once");
    assert.deepEqual(stack.rollouts, [
      { pool: "hel1-general", replacing: ["hel1-general-0"], removing: [], unprotecting: [], remaining: 3, waiting: "maxSurge 1 reached" },
    ]);
    assert.ok(
      !stack.steps.some((s) => s.type === "hcloud:index/server:Server" && s.op !== "create"),
      "the old servers are left as they are",
    );
    assert.match(
      run.markdown,
      /### Rolling replacement[\s\S]*3 members still to replace after this run[\s\S]*replacing now .*`hel1-general-0`/,
    );
    assertPreviewGolden("e2e-change-server-type", run.markdown, "the command's Markdown");
  });

  it("changes user data (a pool label): the rollout starts with one member, the others keep their servers", () => {
    writeStack(
      "example",
      withPools(editPool("hel1-general", (p) => ({ ...p, labels: { ...(p.labels as object), "example.com/team": "web" } }))),
    );
    const run = preview(["example"]);
    assert.equal(run.status, 0, run.stderr);
    const stack = report(run).stacks[0];
    const servers = stack.steps.filter((s) => s.type === "hcloud:index/server:Server");
    assert.deepEqual(
      servers.map((s) => s.op),
      ["create"],
      "one surge server; the kept ones are unchanged",
    );
    assert.match(servers[0].name, /^example-hel1-general-0-[a-z0-9]{6}$/);
    assert.deepEqual(
      stack.rollouts.map((r) => [r.pool, "replacing" in r ? r.replacing : undefined, r.remaining]),
      [["hel1-general", ["hel1-general-0"], 3]],
    );
    assert.doesNotMatch(run.stdout + run.markdown + run.stderr, BOOTSTRAP_TOKEN_TEXT, "no bootstrap token anywhere");
    assertPreviewGolden("e2e-change-user-data", run.markdown, "the command's Markdown");
  });

  it("bare metal: says which Elastic Metal and Robot members this run replaces, reinstalls or re-joins, and how many remain", () => {
    const robot: Pool = {
      name: "fsn-metal",
      provider: "hetzner-robot",
      mode: "static",
      servers: [
        { serverNumber: 321, name: "a" },
        { serverNumber: 654, name: "b" },
        { serverNumber: 987, name: "c" },
      ],
      sshKeyFingerprints: ["15:28:b0:03:95:f0:77:b3:10:56:15:6b:77:22:a5:bb"],
    };
    const full = parse(fs.readFileSync(path.join(REPO, "stacks", "Pulumi.example.yaml"), "utf8")) as StackDocument;
    const bareMetal = (edit: (pool: Pool) => Pool) => {
      const document = structuredClone(full);
      document.config["nodefleet:pools"] = [...(document.config["nodefleet:pools"] as Pool[]), robot].map((p) =>
        p.provider === "hcloud" ? p : edit({ ...p, ...(p.provider === "scaleway-elastic-metal" ? { replicas: 2 } : {}) }),
      );
      return document;
    };
    writeStack(
      "example",
      bareMetal((p) => p),
    );
    git("commit", "--quiet", "-am", "bare-metal base");
    try {
      writeStack(
        "example",
        bareMetal((p) => (p.provider === "hetzner-robot" ? { ...p, image: "ubuntu-22.04" } : { ...p, os: "ubuntu_noble" })),
      );
      const run = preview(["example"]);
      assert.equal(run.status, 0, run.stderr);
      const stack = report(run).stacks[0];
      assert.deepEqual(stack.rollouts, [
        {
          pool: "kura-scw-fr-par",
          inPlace: true,
          updating: [{ nodeId: "kura-scw-fr-par-0", change: "replace" }],
          remaining: 1,
          waiting: "maxUnavailable 1 reached",
        },
        {
          pool: "fsn-metal",
          inPlace: true,
          updating: [{ nodeId: "fsn-metal-a", change: "reinstall" }],
          remaining: 2,
          waiting: "maxUnavailable 1 reached",
        },
      ]);
      const rescues = stack.steps.filter((s) => s.type === "nodefleet:hrobot:RobotRescue");
      assert.deepEqual(
        rescues.map((s) => [s.op, s.name]),
        [["replace", "example-fsn-metal-fsn-metal-a-rescue"]],
        "only the first server is reinstalled",
      );
      const servers = stack.steps.filter((s) => s.type === "scaleway:elasticmetal/server:Server");
      assert.deepEqual(
        servers.map((s) => [s.op, s.name]),
        [["replace", "example-kura-scw-fr-par-kura-scw-fr-par-0"]],
        "only the first server is replaced",
      );
      assert.match(
        run.markdown,
        /- pool `fsn-metal`: 2 members still to update after this run\n {2}- drained, then reinstalled now: `fsn-metal-a`\n {2}- waiting: maxUnavailable 1 reached/,
      );
      assert.match(
        run.markdown,
        /- pool `kura-scw-fr-par`: 1 member still to update after this run\n {2}- drained, then its server released and a new one ordered now: `kura-scw-fr-par-0`/,
      );
    } finally {
      git("reset", "--quiet", "--hard", "HEAD~1");
    }
  });

  it("removes a pool", () => {
    writeStack(
      "example",
      withPools((pools) => pools.filter((p) => p.name !== "hel1-general")),
    );
    const run = preview(["example"]);
    assert.equal(run.status, 0, run.stderr);
    const stack = report(run).stacks[0];
    const general = stack.pools.find((p) => p.pool === "hel1-general");
    assert.deepEqual(general && [general.change, general.nodesBefore, general.nodesAfter], ["removed", 3, 0]);
    assert.equal(stack.summary.create, 0);
    assertPreviewGolden("e2e-remove-pool", run.markdown, "the command's Markdown");
  });

  it("previews several stacks, one section each; a stack new at the base ref is all creates; a broken one fails the command", () => {
    const broken = exampleDocument();
    (broken.config["nodefleet:network"] as Record<string, unknown>).subnet = "10.9.0.0/24";
    writeStack("broken", broken);
    const fresh = exampleDocument();
    (fresh.config["nodefleet:cluster"] as Record<string, unknown>).id = "fresh";
    writeStack("fresh", fresh);
    try {
      const run = preview(["example", "fresh", "broken"]);
      assert.equal(run.status, 1, "a failed stack makes the command exit non-zero");
      const doc = report(run); // exactly one JSON document on stdout
      assert.deepEqual(
        doc.stacks.map((s) => [s.stack, s.succeeded]),
        [
          ["example", true],
          ["fresh", true],
          ["broken", false],
        ],
      );
      const fresh_ = doc.stacks[1];
      assert.equal(fresh_.summary.same + fresh_.summary.delete, 0, "nothing exists before a stack new at the base ref");
      assert.match(doc.stacks[2].error ?? "", /subnet/);
      assert.equal(run.markdown.split(PREVIEW_MARKER).length, 2, "one marker");
      assert.equal((run.markdown.match(/^## Stack /gm) ?? []).length, 3);
      assert.match(run.markdown, /^## Stack `broken`: preview failed$/m);
      assert.match(run.markdown, /subnet/);
    } finally {
      fs.rmSync(path.join(project, "stacks", "Pulumi.broken.yaml"));
      fs.rmSync(path.join(project, "stacks", "Pulumi.fresh.yaml"));
    }
  });

  it("fails with a clear message for an unknown base ref", () => {
    const bad = spawnSync(process.execPath, [CLI, "preview", "--stack", "example", "--engine", "simulated", "--base-ref", "no-such-ref"], {
      cwd: project,
      env: childEnv(),
      encoding: "utf8",
      timeout: 60_000,
    });
    assert.equal(bad.status, 1);
    assert.match(bad.stdout, /--base-ref no-such-ref: not a commit/);
  });
});
