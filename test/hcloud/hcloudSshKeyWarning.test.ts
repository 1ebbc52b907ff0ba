import { strict as assert } from "node:assert";
import * as pulumi from "@pulumi/pulumi";
import { hcloudStaticPoolConfig, rawFleetConfig, runFleetProgramUnderMocks } from "../support/fleetConfigFixture";

/** Runs the fleet program under mocks and returns the warnings it logged. */
async function warningsFor(pool: Record<string, unknown>): Promise<string[]> {
  const warnings: string[] = [];
  const log = pulumi.log as { warn: (message: string, resource?: pulumi.Resource) => Promise<void> };
  const original = log.warn;
  log.warn = async (message: string) => {
    warnings.push(message);
  };
  try {
    await runFleetProgramUnderMocks(rawFleetConfig({ pools: [hcloudStaticPoolConfig({ replicas: 2, ...pool })] }));
  } finally {
    log.warn = original;
  }
  return warnings;
}

describe("Hetzner Cloud servers without SSH keys", function () {
  this.timeout(120_000);

  it("warns, naming the pool and servers, that Hetzner e-mails a root password; no warning with keys", async () => {
    const keyless = (await warningsFor({ sshKeys: [] })).filter((w) => /root password/.test(w));
    assert.equal(keyless.length, 1, "one warning per pool");
    assert.match(keyless[0], /pool hel1-general: .*-0, .*-1 get no SSH key, so Hetzner sets a root password and e-mails it/);
    assert.deepEqual(
      (await warningsFor({ sshKeys: ["ops"] })).filter((w) => /root password/.test(w)),
      [],
    );
  });
});
