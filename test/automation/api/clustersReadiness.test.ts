/** readyz of a service with several clusters (clustersReadiness.ts). */
import { strict as assert } from "node:assert";
import { clusterStates, clustersReadiness, type ClusterStatus } from "../../../automation/api/clustersReadiness";

const serving = (stack: string, status: "ready" | "degraded" | "starting"): ClusterStatus => ({
  stack,
  clusterId: stack,
  phase: "serving",
  readiness: () => ({ status, ...(status === "degraded" ? { details: { gitStack: "not applied" } } : {}) }),
});
const failed: ClusterStatus = { stack: "broken", phase: "failed", error: "nodefleet:pools[0].location: unknown" };

describe("readiness of several clusters", function () {
  it("is ready when every cluster is, and says each one's", function () {
    const answer = clustersReadiness([serving("a", "ready"), serving("b", "ready")], false);
    assert.equal(answer.status, "ready");
    assert.deepEqual(answer.details, { clusters: { a: { cluster: "a", status: "ready" }, b: { cluster: "b", status: "ready" } } });
  });

  it("stays ready (degraded, 200) while one cluster serves and another failed, naming why", function () {
    const answer = clustersReadiness([serving("a", "ready"), failed], false);
    assert.equal(answer.status, "degraded");
    assert.deepEqual((answer.details!.clusters as Record<string, unknown>).broken, {
      status: "failed",
      details: { error: "nodefleet:pools[0].location: unknown" },
    });
  });

  it("is starting only while no cluster serves yet", function () {
    assert.equal(clustersReadiness([{ stack: "a", phase: "starting" }, serving("b", "starting")], false).status, "starting");
    assert.equal(clustersReadiness([{ stack: "a", phase: "starting" }, serving("b", "ready")], false).status, "degraded");
  });

  it("is degraded with no cluster at all, and stopping while closing", function () {
    assert.match(String(clustersReadiness([], false).details!.reason), /no stack file matches --stack/);
    assert.equal(clustersReadiness([serving("a", "ready")], true).status, "stopping");
  });

  it("labels each cluster's state by its id, or its stack when the file could not be read", function () {
    assert.deepEqual(clusterStates([serving("a", "degraded"), failed, { stack: "c", clusterId: "cee", phase: "stopping" }]), [
      { cluster: "a", state: "degraded" },
      { cluster: "broken", state: "failed" },
      { cluster: "cee", state: "stopping" },
    ]);
  });
});
