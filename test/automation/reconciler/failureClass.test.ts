/**
 * Transient versus permanent failures of an engine run's steps (failureClass.ts): the error texts
 * the providers really report (client-go, Go's net/http, hcloud-go, Node's fetch), then properties
 * over them wrapped the way Pulumi wraps a step's error.
 */
import { strict as assert } from "node:assert";
import fc from "fast-check";
import { classifyFailure, failureSource, launchBackoffOf, transientStatus } from "../../../automation/reconciler/failureClass";

const API = "https://127.0.0.1:36443/api/v1/namespaces/kube-system/secrets";

/** Failures the next attempt may not meet: an API down, slow, overloaded or restarting. */
const TRANSIENT = [
  `creating resource: Post "${API}": net/http: TLS handshake timeout`,
  `configured Kubernetes cluster is unreachable: unable to load schema information from the API server: Get "https://127.0.0.1:36443/openapi/v2?timeout=32s": dial tcp 127.0.0.1:36443: connect: connection refused`,
  `Post "${API}": EOF`,
  `Post "${API}": unexpected EOF`,
  `Post "${API}": read tcp 127.0.0.1:50122->127.0.0.1:36443: read: connection reset by peer`,
  `Post "${API}": context deadline exceeded (Client.Timeout exceeded while awaiting headers)`,
  `Post "${API}": dial tcp 10.0.0.1:6443: i/o timeout`,
  `Post "${API}": dial tcp 10.0.0.1:6443: connect: no route to host`,
  "the server is currently unable to handle the request (post secrets)",
  "the server was unable to return a response in the time allotted, but may still be processing the request (post secrets)",
  "Internal error occurred: resource quota evaluation timed out",
  "etcdserver: request timed out",
  "the server has received too many requests and has asked us to try again later (post secrets)",
  "creating server: rate limit exceeded (rate_limit_exceeded, 8e1b2a3c)",
  "creating server: server error (service_error, 0a1b2c)",
  "cannot perform operation because server is locked (locked, 77aa)",
  "Hetzner Cloud API GET http://127.0.0.1:8081/v1/networks failed: ECONNREFUSED (connect ECONNREFUSED 127.0.0.1:8081)",
  "Hetzner Cloud API GET http://127.0.0.1:8081/v1/networks failed: no answer within 30 s",
  "Hetzner Cloud API 503 unavailable: maintenance (GET https://api.hetzner.cloud/v1/servers)",
  "Hetzner Cloud API 429 rate_limit_exceeded: limit reached (GET https://api.hetzner.cloud/v1/servers)",
];

/** Refusals and faults a retry cannot change. */
const PERMANENT = [
  `secrets "bootstrap-token-abc123" already exists`,
  `secrets is forbidden: User "system:anonymous" cannot create resource "secrets" in API group "" in the namespace "kube-system"`,
  "Unauthorized",
  "[simulated] creating server x: cpx21 is sold out in hel1: error during placement (resource_unavailable)",
  "invalid input in field 'server_type' (invalid_input, 1a2b)",
  "server name is already used (uniqueness_error, 3c4d)",
  "server limit reached (resource_limit_exceeded, 5e6f)",
  "Hetzner Cloud API 404 not_found: network not found (GET https://api.hetzner.cloud/v1/networks)",
  "server create failed: simulated failure",
  "boom",
  "",
];

/** How Pulumi and the providers wrap a step's error around the cause. */
const wrapper = fc
  .array(
    fc.constantFrom(
      "error:",
      "1 error occurred:",
      "* creating Secret:",
      "\n",
      "  ",
      "updating urn:pulumi:local-api::nodefleet::kubernetes:core/v1:Secret::tok:",
      "resource",
      "step",
    ),
    { maxLength: 4 },
  )
  .map((parts) => parts.join(" "));

describe("failure classes of engine steps", () => {
  it("retries what an unreachable, slow or overloaded API reports, and names the signature", () => {
    for (const message of TRANSIENT) {
      const failure = classifyFailure(message);
      assert.equal(failure.transient, true, message);
    }
    const handshake = classifyFailure(TRANSIENT[0]!, "kubernetes:core/v1:Secret");
    assert.deepEqual(handshake, { transient: true, source: "controlPlane", signature: "TLS handshake timeout" });
  });

  it("fails for good on refusals, sold-out types and errors it does not know", () => {
    for (const message of PERMANENT) assert.equal(classifyFailure(message).transient, false, message);
  });

  it("classifies a message the same inside any wrapping, in any letter case", () => {
    fc.assert(
      fc.property(fc.constantFrom(...TRANSIENT, ...PERMANENT), wrapper, wrapper, fc.boolean(), (message, before, after, upper) => {
        const wrapped = `${before} ${upper ? message.toUpperCase() : message} ${after}`;
        assert.equal(classifyFailure(wrapped).transient, classifyFailure(message).transient, wrapped);
      }),
    );
  });

  it("lets a permanent refusal win when one step's message also reports a transient error", () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...TRANSIENT),
        fc.constantFrom(...PERMANENT.filter((m) => m !== "boom" && m !== "" && !m.includes("simulated failure"))),
        wrapper,
        (transient, permanent, glue) => {
          assert.equal(classifyFailure(`${transient}${glue}; ${permanent}`).transient, false);
          assert.equal(classifyFailure(`${permanent}${glue}; ${transient}`).transient, false);
        },
      ),
    );
  });

  it("never throws, whatever the text", () => {
    fc.assert(
      fc.property(
        fc.string({ unit: "binary" }),
        fc.option(fc.string()),
        (message, type) => void classifyFailure(message, type ?? undefined),
      ),
    );
  });

  it("names the API a failure waited on: the resource type first, else the message", () => {
    assert.equal(failureSource("kubernetes:core/v1:Secret", "Hetzner said no"), "controlPlane");
    assert.equal(failureSource("hcloud:index/server:Server", "connection refused"), "cloudApi");
    assert.equal(failureSource("nodefleet:hcloud:NodePool", "x"), "cloudApi");
    assert.equal(failureSource(undefined, TRANSIENT[1]!), "controlPlane");
    assert.equal(failureSource(undefined, TRANSIENT[16]!), "cloudApi");
    assert.equal(failureSource("random:index/randomString:RandomString", "connection refused"), undefined);
  });

  it("retries HTTP 429 and 5xx answers and nothing else", () => {
    fc.assert(
      fc.property(fc.integer({ min: 100, max: 599 }), (status) => assert.equal(transientStatus(status), status === 429 || status >= 500)),
    );
  });
});

/** Create failures the next create of the same offering or pool would repeat, as the fake and hcloud-go report them. */
const BACKOFF: ReadonlyArray<readonly [string, string, "offering" | "pool"]> = [
  ["[simulated] creating server x: cpx21 is sold out in hel1: error during placement (resource_unavailable)", "soldOut", "offering"],
  ["server type cx22 is unavailable in fsn1: error during placement (resource_unavailable, 1a2b)", "soldOut", "offering"],
  ["error during placement (placement_error, 9f8e)", "soldOut", "offering"],
  ["[simulated] creating server x: server limit exceeded for this project (resource_limit_exceeded)", "quota", "offering"],
  ["server limit reached (resource_limit_exceeded, 5e6f)", "quota", "offering"],
  [
    "Hetzner Cloud API 403 resource_limit_exceeded: server limit exceeded for this project (POST http://127.0.0.1:8081/v1/servers)",
    "quota",
    "offering",
  ],
  ["image not found for architecture arm (invalid_input, 77aa)", "image", "pool"],
  ["Hetzner Cloud API 400 invalid_input: image not found (POST https://api.hetzner.cloud/v1/servers)", "image", "pool"],
  ["network 42 already holds 100 servers (resource_limit_exceeded, 3c3c)", "poolLimit", "pool"],
  ["placement group 7 already holds 10 servers (placement_error, 4d4d)", "poolLimit", "pool"],
];

/** Failures of this create alone: no backoff. */
const NO_BACKOFF = [
  "server create failed: simulated failure",
  "[simulated] creating server x: create_server action failed (NODEFLEET_SIM_FAIL_CREATE_RATE=1)",
  "server name is already used (uniqueness_error, 3c4d)",
  "Hetzner Cloud API 404 not_found: network not found (GET https://api.hetzner.cloud/v1/networks)",
  `Post "${API}": EOF`,
  "Internal error occurred: resource quota evaluation timed out",
  "boom",
  "",
];

describe("launch backoff of a failed create", () => {
  it("names the kind and the scope of what the next create would meet again", () => {
    for (const [message, kind, scope] of BACKOFF) {
      const backoff = launchBackoffOf(message);
      assert.equal(backoff?.kind, kind, message);
      assert.equal(backoff?.scope, scope, message);
      assert.ok(backoff.summary.length > 0);
    }
  });

  it("backs off nothing for failures of the request alone", () => {
    for (const message of NO_BACKOFF) assert.equal(launchBackoffOf(message), undefined, message);
  });

  it("reads the same kind inside any wrapping, in any letter case", () => {
    fc.assert(
      fc.property(fc.constantFrom(...BACKOFF), wrapper, wrapper, fc.boolean(), ([message, kind], before, after, upper) => {
        const wrapped = `${before} ${upper ? message.toUpperCase() : message} ${after}`;
        assert.equal(launchBackoffOf(wrapped)?.kind, kind, wrapped);
      }),
    );
  });

  it("backs off only what fails for good: every backoff is a permanent failure", () => {
    for (const [message] of BACKOFF) assert.equal(classifyFailure(message).transient, false, message);
    fc.assert(fc.property(fc.string(), (message) => !launchBackoffOf(message) || !classifyFailure(message).transient));
  });
});
