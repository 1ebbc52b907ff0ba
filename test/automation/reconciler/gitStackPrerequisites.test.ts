import assert from "node:assert/strict";
import { GitStackPrerequisites } from "../../../automation/reconciler/gitStackPrerequisites";
import { until } from "../../support/until";

const found = { found: { network: { id: 1, name: "c1-network", labels: {} }, firewall: { id: 2, name: "c1-nodes", labels: {} } } };

function recordingLogger() {
  const lines: string[] = [];
  return {
    lines,
    warn: (_: object, message: string) => lines.push(`warn ${message}`),
    info: (_: object, message: string) => lines.push(`info ${message}`),
  };
}

/** Until the prerequisites refuse creates (their first look-up found something missing). */
function refusing(prerequisites: GitStackPrerequisites): Promise<unknown> {
  return until(
    "prerequisites.refusal() !== undefined",
    () => prerequisites.refusal() !== undefined || undefined,
    2000,
    () => "",
    10,
  );
}

describe("the git stack's network and firewall as the API stack's prerequisites", function () {
  it("names what is missing and the command that creates it, then turns ready by itself once applied", async function () {
    let applied = false;
    let lookUps = 0;
    const logger = recordingLogger();
    const prerequisites = new GitStackPrerequisites(
      async () => {
        lookUps++;
        return applied ? found : { missing: ["network c1-network", "firewall c1-nodes"] };
      },
      "`pulumi up --stack c1` in /srv/fleet",
      logger,
      20,
    );
    try {
      prerequisites.start();
      await refusing(prerequisites);
      assert.equal(
        prerequisites.refusal(),
        "the git stack is not applied: network c1-network and firewall c1-nodes are missing in the Hetzner project; run `pulumi up --stack c1` in /srv/fleet",
      );
      await until(
        "lookUps >= 3",
        () => lookUps >= 3 || undefined,
        2000,
        () => "",
        10,
      );
      assert.equal(logger.lines.filter((l) => l.startsWith("warn")).length, 1, "the same absence is logged once");
      applied = true;
      await until(
        "prerequisites.refusal() === undefined",
        () => prerequisites.refusal() === undefined || undefined,
        2000,
        () => "",
        10,
      );
      assert.ok(
        logger.lines.some((l) => l.startsWith("info")),
        logger.lines.join("\n"),
      );
      const settled = lookUps;
      await new Promise((r) => setTimeout(r, 100));
      assert.equal(lookUps, settled, "no more look-ups once both exist");
      assert.deepEqual(await prerequisites.resources(), found.found);
    } finally {
      prerequisites.stop();
    }
  });

  it("refuses nothing before it has looked, and keeps looking after a failed look-up", async function () {
    let calls = 0;
    const prerequisites = new GitStackPrerequisites(
      async () => {
        calls++;
        if (calls === 1) throw new Error("fetch failed");
        return { missing: ["firewall c1-nodes"] };
      },
      "`pulumi up --stack c1`",
      undefined,
      20,
    );
    try {
      assert.equal(prerequisites.refusal(), undefined);
      prerequisites.start();
      await refusing(prerequisites);
      assert.match(prerequisites.refusal()!, /firewall c1-nodes is missing/);
    } finally {
      prerequisites.stop();
    }
  });
});
