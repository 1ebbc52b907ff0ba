/**
 * NODEFLEET_TEMPORAL_*, read before `serve` starts anything: unset is the in-process default, a
 * set address needs the shared database, and each malformed value is refused naming its variable
 * and the rule.
 */
import { strict as assert } from "node:assert";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { temporalSettingsFromEnv } from "../../../automation/temporal/temporalSettings";

const DATABASE = { NODEFLEET_DATABASE_URL: "postgres://nodefleet@127.0.0.1:5432/fleet" };

describe("Temporal settings from the environment", () => {
  it("is off without an address, and takes the defaults with one", () => {
    assert.equal(temporalSettingsFromEnv({}), undefined);
    assert.equal(temporalSettingsFromEnv({ NODEFLEET_TEMPORAL_ADDRESS: "" }), undefined);
    assert.deepEqual(temporalSettingsFromEnv({ ...DATABASE, NODEFLEET_TEMPORAL_ADDRESS: "temporal-frontend.temporal:7233" }), {
      address: "temporal-frontend.temporal:7233",
      namespace: "default",
      taskQueue: "nodefleet-stack-runs",
    });
    assert.equal(temporalSettingsFromEnv({ ...DATABASE, NODEFLEET_TEMPORAL_ADDRESS: "[::1]:7233" })?.address, "[::1]:7233");
  });

  it("refuses an address without the shared database, and malformed values, naming the variable", () => {
    assert.throws(
      () => temporalSettingsFromEnv({ NODEFLEET_TEMPORAL_ADDRESS: "127.0.0.1:7233" }),
      /NODEFLEET_TEMPORAL_ADDRESS: needs NODEFLEET_DATABASE_URL/,
    );
    for (const address of ["127.0.0.1", "http://t:7233", "t:0", "t:70000", "a b:1"])
      assert.throws(
        () => temporalSettingsFromEnv({ ...DATABASE, NODEFLEET_TEMPORAL_ADDRESS: address }),
        /NODEFLEET_TEMPORAL_ADDRESS: .* is not HOST:PORT/,
      );
    const base = { ...DATABASE, NODEFLEET_TEMPORAL_ADDRESS: "t:7233" };
    assert.throws(
      () => temporalSettingsFromEnv({ ...base, NODEFLEET_TEMPORAL_NAMESPACE: "no spaces" }),
      /NODEFLEET_TEMPORAL_NAMESPACE: "no spaces" is not a name/,
    );
    assert.throws(() => temporalSettingsFromEnv({ ...base, NODEFLEET_TEMPORAL_TASK_QUEUE: "-x" }), /NODEFLEET_TEMPORAL_TASK_QUEUE/);
    assert.throws(
      () => temporalSettingsFromEnv({ ...base, NODEFLEET_TEMPORAL_TLS: "yes" }),
      /NODEFLEET_TEMPORAL_TLS: must be true or false/,
    );
    assert.throws(
      () => temporalSettingsFromEnv({ ...base, NODEFLEET_TEMPORAL_TLS_CERT_FILE: "/c.pem" }),
      /NODEFLEET_TEMPORAL_TLS_CERT_FILE and NODEFLEET_TEMPORAL_TLS_KEY_FILE: set both/,
    );
    assert.throws(
      () => temporalSettingsFromEnv({ ...base, NODEFLEET_TEMPORAL_TLS_CA_FILE: "/nonexistent/ca.pem" }),
      /NODEFLEET_TEMPORAL_TLS_CA_FILE: cannot read \/nonexistent\/ca.pem: ENOENT/,
    );
  });

  it("reads TLS: the system's roots, a CA file, a client certificate pair", () => {
    const dir = mkdtempSync(join(tmpdir(), "nodefleet-temporal-tls-"));
    for (const name of ["ca.pem", "crt.pem", "key.pem"]) writeFileSync(join(dir, name), `-----${name}-----\n`);
    const base = { ...DATABASE, NODEFLEET_TEMPORAL_ADDRESS: "t:7233" };
    assert.deepEqual(temporalSettingsFromEnv({ ...base, NODEFLEET_TEMPORAL_TLS: "true" })?.tls, {});
    assert.equal(temporalSettingsFromEnv({ ...base, NODEFLEET_TEMPORAL_TLS: "false" })?.tls, undefined);
    const tls = temporalSettingsFromEnv({
      ...base,
      NODEFLEET_TEMPORAL_TLS_CA_FILE: join(dir, "ca.pem"),
      NODEFLEET_TEMPORAL_TLS_CERT_FILE: join(dir, "crt.pem"),
      NODEFLEET_TEMPORAL_TLS_KEY_FILE: join(dir, "key.pem"),
    })?.tls;
    assert.equal(tls?.serverRootCa?.toString(), "-----ca.pem-----\n");
    assert.equal(tls?.clientCertificate?.crt.toString(), "-----crt.pem-----\n");
    assert.equal(tls?.clientCertificate?.key.toString(), "-----key.pem-----\n");
  });
});
