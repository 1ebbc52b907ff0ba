/**
 * The driver authenticated by its projected ServiceAccount token (issue 36 part 5), end to end on
 * the local cloud: the chart installed with `token.projected`, its replicas reading a token minted
 * as kubelet mints the projected one (audience nodefleet), the API accepting only the chart's
 * ServiceAccount through a TokenReview against the local control plane. No token Secret exists and
 * the chart's ServiceAccount may read none, and pending pods still become Running nodes.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { KubeApiError, kube } from "../../../automation/local/kubeClient";
import { KARPENTER_NAMESPACE } from "../../../automation/local/karpenterObjects";
import { KARPENTER_LOOP_TOOLS, type KarpenterLoop, startKarpenterLoop } from "../../support/karpenterLocalCloud";
import { writeServiceAccountKubeconfig } from "../../support/serviceAccountKubeconfig";
import { missingTools, skipUnlessAvailable } from "../../support/toolchainRequirement";

/** The sum of a counter's samples whose labels match, from the service's /metrics. */
async function counter(baseUrl: string, name: string, labels: RegExp): Promise<number> {
  const text = await (await fetch(`${baseUrl}/metrics`)).text();
  let total = 0;
  for (const line of text.split("\n")) {
    const match = new RegExp(`^${name}\\{([^}]*)\\} (\\d+(?:\\.\\d+)?)`).exec(line);
    if (match && labels.test(match[1]!)) total += Number(match[2]);
  }
  return total;
}

describe("the driver on its projected ServiceAccount token (chart, TokenReview, local cloud)", function () {
  this.timeout(900_000);
  let loop: KarpenterLoop;
  let dir: string;

  before(async function () {
    skipUnlessAvailable(this, missingTools(...KARPENTER_LOOP_TOOLS));
    dir = mkdtempSync(join(tmpdir(), "nodefleet-karpenter-projected-"));
    loop = await startKarpenterLoop(join(dir, "loop"), { chart: true, projectedToken: true });
  });

  after(async function () {
    await loop?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("has no token Secret to read, and the chart's ServiceAccount may read no Secret", async function () {
    const secrets = (await kube(loop.cloud.plane.admin, "GET", `/api/v1/namespaces/${KARPENTER_NAMESPACE}/secrets`)) as {
      items: Array<{ metadata: { name: string }; type: string }>;
    };
    assert.deepEqual(
      secrets.items.filter((s) => s.type !== "helm.sh/release.v1").map((s) => s.metadata.name),
      [],
      "no Secret but helm's own release records",
    );
    const driver = await writeServiceAccountKubeconfig({
      admin: loop.cloud.plane.admin,
      namespace: KARPENTER_NAMESPACE,
      serviceAccount: "nodefleet-karpenter",
      file: join(dir, "driver.kubeconfig"),
    });
    await assert.rejects(
      kube(driver, "GET", `/api/v1/namespaces/${KARPENTER_NAMESPACE}/secrets`),
      (error: unknown) => error instanceof KubeApiError && error.status === 403,
    );
  });

  it("launches nodes for pending pods with every API call authenticated by a reviewed ServiceAccount token", async function () {
    const reviewed = await counter(loop.serve.baseUrl, "nodefleet_api_token_reviews_total", /result="accepted"/);
    assert.ok(reviewed >= 1, "the NodeClass turned Ready through a TokenReview");
    await loop.inflate(4, "700m");
    await loop.allPodsRunning(4);
    assert.ok((await loop.burstServers()).length >= 1, "servers were created for the pods");
    const refused = await counter(loop.serve.baseUrl, "nodefleet_api_token_reviews_total", /result="(refused_\w+|review_failed)"/);
    assert.equal(refused, 0, "no token of the driver was refused");
  });
});
