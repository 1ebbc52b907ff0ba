/**
 * The fake Robot webservice's knobs as `knobsFromEnv` reads them: whole numbers in range, a flag,
 * and an error naming the variable and the rule otherwise.
 */
import assert from "node:assert/strict";
import { knobsFromEnv } from "../../../automation/simulated/simulationKnobs";

describe("fake Robot webservice knobs", function () {
  it("reads the server count, the rate limit and the revoked login", function () {
    const knobs = knobsFromEnv({
      NODEFLEET_SIM_ROBOT_SERVERS: "5",
      NODEFLEET_SIM_ROBOT_RATE_LIMIT: "3",
      NODEFLEET_SIM_ROBOT_LOGIN_REVOKED: "1",
    });
    assert.deepEqual([knobs.robotServers, knobs.robotRateLimit, knobs.robotLoginRevoked], [5, 3, true]);
    assert.equal(knobsFromEnv({ NODEFLEET_SIM_ROBOT_LOGIN_REVOKED: "false" }).robotLoginRevoked, false);
    const unset = knobsFromEnv({});
    assert.deepEqual([unset.robotServers, unset.robotRateLimit, unset.robotLoginRevoked], [undefined, undefined, undefined]);
  });

  it("reads the install's duration in the Robot machines' rescue", function () {
    assert.equal(knobsFromEnv({ NODEFLEET_SIM_ROBOT_INSTALL_MS: "30000" }).robotInstallMs, 30_000);
    assert.equal(knobsFromEnv({}).robotInstallMs, undefined);
    assert.throws(
      () => knobsFromEnv({ NODEFLEET_SIM_ROBOT_INSTALL_MS: "1.5" }),
      /NODEFLEET_SIM_ROBOT_INSTALL_MS must be a whole number, got "1.5"/,
    );
  });

  it("reads the machines' knobs: resets that do not take, hanging and BIOS servers", function () {
    const knobs = knobsFromEnv({
      NODEFLEET_SIM_ROBOT_RESETS_NOT_TAKING: "2",
      NODEFLEET_SIM_ROBOT_HANG: "2000001",
      NODEFLEET_SIM_ROBOT_BIOS: "2000002, 2000003",
    });
    assert.deepEqual([knobs.robotResetsNotTaking, knobs.robotHang, knobs.robotBios], [2, [2000001], [2000002, 2000003]]);
    const unset = knobsFromEnv({});
    assert.deepEqual([unset.robotResetsNotTaking, unset.robotHang, unset.robotBios], [undefined, undefined, undefined]);
    assert.throws(
      () => knobsFromEnv({ NODEFLEET_SIM_ROBOT_HANG: "2000001,local-robot-2" }),
      /NODEFLEET_SIM_ROBOT_HANG must list Robot server numbers separated by commas, got "local-robot-2"/,
    );
    assert.throws(
      () => knobsFromEnv({ NODEFLEET_SIM_ROBOT_RESETS_NOT_TAKING: "-1" }),
      /NODEFLEET_SIM_ROBOT_RESETS_NOT_TAKING must be a number between 0 and 1000/,
    );
  });

  it("names the variable and the rule when a value is out of shape", function () {
    assert.throws(
      () => knobsFromEnv({ NODEFLEET_SIM_ROBOT_SERVERS: "251" }),
      /NODEFLEET_SIM_ROBOT_SERVERS must be a number between 0 and 250/,
    );
    assert.throws(
      () => knobsFromEnv({ NODEFLEET_SIM_ROBOT_RATE_LIMIT: "2.5" }),
      /NODEFLEET_SIM_ROBOT_RATE_LIMIT must be a whole number, got "2.5"/,
    );
    assert.throws(
      () => knobsFromEnv({ NODEFLEET_SIM_ROBOT_LOGIN_REVOKED: "yes" }),
      /NODEFLEET_SIM_ROBOT_LOGIN_REVOKED must be 1, true, 0 or false, got "yes"/,
    );
  });
});
