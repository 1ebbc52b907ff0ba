/**
 * NODEFLEET_SIM_HCLOUD_RATE_LIMIT, the fake Hetzner API's requests per hour on the local cloud:
 * read as a whole number from 1, unset by default (the fake keeps Hetzner's 3600), and refused
 * with its name and rule otherwise.
 */
import assert from "node:assert/strict";
import { knobsFromEnv } from "../../../automation/simulated/simulationKnobs";

describe("fake Hetzner rate-limit knob", function () {
  it("reads a whole number of requests per hour, unset by default", function () {
    assert.equal(knobsFromEnv({ NODEFLEET_SIM_HCLOUD_RATE_LIMIT: "100000" }).hcloudRateLimit, 100_000);
    assert.equal(knobsFromEnv({}).hcloudRateLimit, undefined);
  });

  it("refuses 0, fractions and words, naming the variable", function () {
    for (const value of ["0", "1.5", "lots"]) {
      assert.throws(() => knobsFromEnv({ NODEFLEET_SIM_HCLOUD_RATE_LIMIT: value }), /NODEFLEET_SIM_HCLOUD_RATE_LIMIT must be/);
    }
  });
});
