/**
 * docs/local-cloud.md as a reader runs it: every shell block, as written, in order, in a clean
 * checkout (the repository's own Pulumi.yaml and package.json, no generated project), with the
 * blocks marked as background kept running like a second terminal. Checks that the preview lists
 * the fleet, that `pulumi up` brings the Nodes Ready, that the scaling API creates a node, and that
 * stopping the terminals leaves no process behind.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, readdirSync, readlinkSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { machinesCanRun } from "../../automation/local/fakeScaleway/fakeScalewayMachines";
import { cleanCheckout } from "../support/cleanCheckout";
import { shellBlocks } from "../support/markdownShellBlocks";
import { REPOSITORY_ROOT } from "../support/serveProcess";
import { type BlockRun, ShellSession } from "../support/shellSession";
import { LOCAL_CLOUD_TOOLS, missingTools, skipUnlessAvailable } from "../support/toolchainRequirement";
import { readerEnvironment } from "../support/readerEnvironment";

const PAGE = join(REPOSITORY_ROOT, "docs", "local-cloud.md");

describe("docs/local-cloud.md, run as written from a clean checkout (real engine, real control plane)", function () {
  this.timeout(1_500_000);
  let dir: string;
  let session: ShellSession;
  const runs: BlockRun[] = [];
  const blocks = shellBlocks(readFileSync(PAGE, "utf8"));
  const ran = (fragment: string): string => {
    const run = runs.find((r) => r.block.script.includes(fragment));
    assert.ok(run, `a block running ${fragment} ran`);
    return run.output;
  };

  before(async function () {
    skipUnlessAvailable(this, missingTools(...LOCAL_CLOUD_TOOLS, "kubectl"));
    dir = cleanCheckout(mkdtempSync(join(tmpdir(), "nodefleet-docs-")));
    session = new ShellSession(dir, readerEnvironment());
    for (const block of blocks) {
      if (block.background) await session.start(block, block.background);
      else runs.push(await session.run(block));
    }
  });

  after(async function () {
    await session?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("has the blocks this test expects (the page and the test change together)", function () {
    assert.ok(blocks.filter((b) => b.background).length >= 3, "local up, serve and local karpenter run in their own terminals");
    for (const fragment of [
      "pulumi preview --stack local",
      "pulumi up --stack local",
      "nodes create",
      "local karpenter",
      "scale deployment inflate",
      "local env",
    ])
      assert.ok(
        blocks.some((b) => b.script.includes(fragment)),
        fragment,
      );
  });

  it("previews the network, firewall, placement group, three servers and three tokens from the repository's Pulumi.yaml (as root, the Elastic Metal pool's two more)", function () {
    const preview = ran("pulumi preview --stack local");
    // The CLI shows type tokens in their short form (hcloud:index:Server).
    for (const type of ["hcloud:index:Network", "hcloud:index:NetworkSubnet", "hcloud:index:Firewall", "hcloud:index:PlacementGroup"]) {
      assert.match(preview, new RegExp(`\\+\\s+${type}\\s`), `${type} is created`);
    }
    assert.equal(preview.match(/\+\s+hcloud:index:Server\s/g)?.length, 3, "three servers");
    // As root `local up` adds the Elastic Metal pool (docs/local-cloud.md): two servers, two more tokens.
    const elasticMetal = machinesCanRun() ? 2 : 0;
    assert.equal(preview.match(/\+\s+scaleway:elasticmetal:Server\s/g)?.length ?? 0, elasticMetal, "the Elastic Metal servers");
    assert.equal(
      preview.match(/\+\s+nodefleet:kubernetes:NodeBootstrapToken\s/g)?.length,
      3 + elasticMetal,
      "a bootstrap token per member (nodefleet's plugin)",
    );
  });

  it("brings three Ready Nodes of the static pool with pulumi up", function () {
    const nodes = ran("kubectl get nodes -o wide")
      .split("\n")
      .filter((line) => /\sReady\s/.test(line));
    assert.ok(nodes.length >= 3, nodes.join("\n"));
  });

  it("creates a node through the scaling API that ends RUNNING", function () {
    assert.match(ran("nodes create"), /RUNNING/);
    assert.match(ran("nodes list"), /local-burst/);
  });

  it("runs Karpenter against the local stack's autoscaled pool: pending pods get NodeClaims and Running pods", function () {
    const listed = ran("kubectl get nodeclaims,nodes");
    assert.match(listed, /nodeclaim\.karpenter\.sh\/\S+/, listed);
    assert.match(listed, /node\/\S+\s+Ready/, listed);
  });

  it("prints the local environment as JSON", function () {
    const output = ran("local env --json");
    const env = (JSON.parse(output.slice(output.indexOf("{"))) as { env: Record<string, string> }).env;
    assert.ok(env.HCLOUD_ENDPOINT?.startsWith("http://127.0.0.1:"), JSON.stringify(env.HCLOUD_ENDPOINT));
  });

  it("leaves no process behind once the terminals are stopped", async function () {
    await session.stop();
    const left = processesMentioning(dir);
    assert.deepEqual(left, [], "processes still running from the checkout");
  });
});

/** Processes whose command line or working directory is under `dir`. */
function processesMentioning(dir: string): string[] {
  const found: string[] = [];
  for (const pid of readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
    try {
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8").replace(/\0/g, " ");
      const cwd = readlinkSync(`/proc/${pid}/cwd`);
      if (cmdline.includes(dir) || cwd.startsWith(dir)) found.push(`${pid}: ${cmdline.slice(0, 200)}`);
    } catch {
      // Gone meanwhile, or not ours to read.
    }
  }
  return found;
}
