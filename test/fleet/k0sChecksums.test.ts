import { strict as assert } from "node:assert";
import { FleetSpecError, parseFleetSpec } from "../../components/fleet/fleetSpec";
import { clusterConfig, rawFleetConfig } from "../support/fleetConfigFixture";

function problems(cluster: Record<string, unknown>): string[] {
  try {
    parseFleetSpec(rawFleetConfig({ cluster }));
    return [];
  } catch (error) {
    assert.ok(error instanceof FleetSpecError, String(error));
    return error.problems;
  }
}

describe("k0s binary checksums", () => {
  const SHA = "a".repeat(64);

  it("requires a pinned k0sSha256 for k0s clusters by default, saying where it comes from and the explicit alternative", () => {
    const found = problems(clusterConfig({ k0sChecksums: undefined }));
    assert.equal(found.length, 1, found.join("\n"));
    assert.match(
      found[0],
      /^nodefleet:cluster\.k0sSha256: k0sSha256 is required when kind is k0s: the sha256 of k0s-v1\.33\.4\+k0s\.0-amd64 .*sha256sums\.txt.*or set k0sChecksums: release/,
    );
    assert.deepEqual(problems(clusterConfig({ k0sChecksums: undefined, k0sSha256: {} })).length, 1, "an empty pin map pins nothing");
  });

  it("accepts a pin, or the explicit choice of the release's own sums; kubeadm clusters need neither", () => {
    assert.deepEqual(problems(clusterConfig({ k0sChecksums: undefined, k0sSha256: { amd64: SHA } })), []);
    assert.deepEqual(problems(clusterConfig({ k0sChecksums: "release" })), []);
    assert.deepEqual(
      problems(clusterConfig({ kind: "kubeadm", kubernetesVersion: "v1.33.4", k0sVersion: undefined, k0sChecksums: undefined })),
      [],
    );
    assert.match(problems(clusterConfig({ k0sChecksums: "sometimes" }))[0], /k0sChecksums must be pinned or release/);
  });

  it("pins reach the node's bootstrap, which then downloads no sha256sums.txt", () => {
    const spec = parseFleetSpec(rawFleetConfig({ cluster: clusterConfig({ k0sChecksums: undefined, k0sSha256: { amd64: SHA } }) }));
    assert.deepEqual(spec.cluster.k0sSha256, { amd64: SHA });
    assert.equal(spec.cluster.k0sChecksums, "pinned");
  });
});
