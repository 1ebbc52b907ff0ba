/**
 * The fake Scaleway API's knobs as `knobsFromEnv` reads them: numbers in range, permission set names
 * of Scaleway's shape, and an error naming the variable and the rule otherwise.
 */
import assert from "node:assert/strict";
import { knobsFromEnv } from "../../../automation/simulated/simulationKnobs";

describe("fake Scaleway API knobs", function () {
  it("reads the install duration, the VLAN delay and the missing permission sets", function () {
    const knobs = knobsFromEnv({
      NODEFLEET_SIM_SCW_INSTALL_MS: "30000",
      NODEFLEET_SIM_SCW_VLAN_DELAY_MS: "1500",
      NODEFLEET_SIM_SCW_MISSING_PERMISSIONS: "ElasticMetalFullAccess, IPAMReadOnly",
    });
    assert.equal(knobs.scwInstallMs, 30000);
    assert.equal(knobs.scwVlanDelayMs, 1500);
    assert.deepEqual(knobs.scwMissingPermissions, ["ElasticMetalFullAccess", "IPAMReadOnly"]);
    assert.equal(knobsFromEnv({}).scwMissingPermissions, undefined);
  });

  it("names the variable and the rule when a value is out of shape", function () {
    assert.throws(
      () => knobsFromEnv({ NODEFLEET_SIM_SCW_INSTALL_MS: "-1" }),
      /NODEFLEET_SIM_SCW_INSTALL_MS must be a number between 0 and/,
    );
    assert.throws(
      () => knobsFromEnv({ NODEFLEET_SIM_SCW_MISSING_PERMISSIONS: "baremetal:write" }),
      /NODEFLEET_SIM_SCW_MISSING_PERMISSIONS must list permission set names such as ElasticMetalFullAccess, got "baremetal:write"/,
    );
  });
});
