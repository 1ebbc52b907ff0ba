/**
 * Projected ServiceAccount tokens: the scaling API (fake engine, real HTTP on 127.0.0.1) reviews a
 * JWT it does not know as a static token with a TokenReview against the cluster's API server (a fake
 * over loopback HTTPS, reached through the stack's kubeconfig), accepts only the configured
 * ServiceAccount and audience `nodefleet`, caches acceptances briefly by hash and bounded, and
 * answers every refusal as a 401 or 403 naming its rule, never a 5xx, never with the token.
 */
import { strict as assert } from "node:assert";
import { Writable } from "node:stream";
import pino from "pino";
import { hashToken } from "../../../automation/api/apiTokens";
import { ServiceAccountTokens, parseServiceAccount } from "../../../automation/api/serviceAccountTokens";
import { TOKEN_REVIEW_TIMEOUT_MS } from "../../../automation/api/tokenReview";
import { TOKEN, startTestApi, type TestApi } from "../../support/apiHarness";
import { startFakeTokenReviewServer, type FakeTokenReviewServer } from "../../support/fakeTokenReviewServer";

// JWT-shaped (three base64url parts), as kubelet's projected tokens are.
const DRIVER_JWT = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJkcml2ZXIifQ.c2lnbmF0dXJlLWRyaXZlcg";
const INTRUDER_JWT = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJpbnRydWRlciJ9.c2lnbmF0dXJlLWludHJ1ZGVy";
const VAULT_JWT = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ2YXVsdCJ9.c2lnbmF0dXJlLXZhdWx0";
const FORGED_JWT = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJmb3JnZWQifQ.c2lnbmF0dXJlLWZvcmdlZA";
const DRIVER = "system:serviceaccount:karpenter:nodefleet-karpenter";

interface ErrorAnswer {
  error: { code: string; message: string };
}

describe("projected ServiceAccount tokens (TokenReview)", function () {
  let kube: FakeTokenReviewServer;
  let api: TestApi;
  const logLines: string[] = [];

  before(async () => {
    kube = await startFakeTokenReviewServer();
    kube.known.set(DRIVER_JWT, { username: DRIVER, audiences: ["nodefleet"] });
    kube.known.set(INTRUDER_JWT, { username: "system:serviceaccount:default:intruder", audiences: ["nodefleet"] });
    kube.known.set(VAULT_JWT, { username: DRIVER, audiences: ["vault"] });
  });
  after(async () => kube.close());

  beforeEach(async () => {
    kube.forbidden = false;
    kube.echoTokens = false;
    kube.hang = false;
    kube.reviews.length = 0;
    logLines.length = 0;
    const sink = new Writable({ write: (chunk: Buffer, _encoding, done) => (logLines.push(chunk.toString()), done()) });
    api = await startTestApi({
      serviceAccountTokens: { serviceAccount: { namespace: "karpenter", name: "nodefleet-karpenter" } },
      logger: pino({ level: "debug" }, sink),
    });
    // The stack's kubeconfig, as `pulumi config set --secret --path nodefleet:cluster.kubeconfig` holds it.
    const cluster = api.config["nodefleet:cluster"]!;
    api.config["nodefleet:cluster"] = { ...cluster, value: { ...(cluster.value as object), kubeconfig: kube.kubeconfig } };
  });
  afterEach(async () => api.close());

  const getCluster = async (token: string) => {
    const response = await api.clientWith(token).raw("GET", "/api/v1/clusters/example");
    return { status: response.status, body: response.body as ErrorAnswer, text: JSON.stringify(response.body) };
  };

  it("accepts the configured ServiceAccount's token for audience nodefleet, asking the API server once", async () => {
    assert.equal((await getCluster(DRIVER_JWT)).status, 200);
    assert.equal((await getCluster(DRIVER_JWT)).status, 200);
    assert.deepEqual(kube.reviews, [{ audiences: ["nodefleet"] }], "one review, for audience nodefleet; the second request used the cache");
  });

  it("refuses another ServiceAccount's valid token with 403 naming the rule", async () => {
    const { status, body } = await getCluster(INTRUDER_JWT);
    assert.equal(status, 403);
    assert.equal(body.error.code, "Forbidden");
    assert.match(
      body.error.message,
      /belongs to system:serviceaccount:default:intruder, not to ServiceAccount karpenter\/nodefleet-karpenter/,
    );
    assert.match(body.error.message, /NODEFLEET_SERVICE_ACCOUNT/);
    assert.equal((await getCluster(INTRUDER_JWT)).status, 403, "a refusal is not cached as an acceptance");
    assert.equal(kube.reviews.length, 2, "refusals are reviewed again (never cached)");
  });

  it("refuses a token of another audience with 401 naming the audience rule", async () => {
    const { status, body } = await getCluster(VAULT_JWT);
    assert.equal(status, 401);
    assert.equal(body.error.code, "Unauthorized");
    assert.match(body.error.message, /does not accept this token for audience "nodefleet".*token audiences \["vault"\] is invalid/);
  });

  it("refuses a token the API server does not know with 401, without the token even when the server echoes it", async () => {
    kube.echoTokens = true;
    const { status, body, text } = await getCluster(FORGED_JWT);
    assert.equal(status, 401);
    assert.match(body.error.message, /invalid bearer token <token>/);
    assert.ok(!text.includes(FORGED_JWT), "the answer never carries the token");
    assert.ok(logLines.length > 0, "the request was logged");
    assert.ok(!logLines.join("").includes(FORGED_JWT), "the logs never carry the token");
  });

  it("answers 401 naming the TokenReview rule when the API server refuses the review (RBAC), never a 5xx", async () => {
    kube.forbidden = true;
    const { status, body } = await getCluster(DRIVER_JWT);
    assert.equal(status, 401);
    assert.match(
      body.error.message,
      /could not be reviewed by cluster example's API server .*HTTP 403: tokenreviews\.authentication\.k8s\.io is forbidden/,
    );
  });

  it("answers 401 naming the TokenReview rule when the cluster's API server is unreachable or the stack has no kubeconfig", async () => {
    const unreachable = kube.kubeconfig.replace(/127\.0\.0\.1:\d+/, "127.0.0.1:1");
    const cluster = api.config["nodefleet:cluster"]!;
    api.config["nodefleet:cluster"] = { ...cluster, value: { ...(cluster.value as object), kubeconfig: unreachable } };
    const refused = await getCluster(DRIVER_JWT);
    assert.equal(refused.status, 401);
    assert.match(refused.body.error.message, /could not be reviewed .*ECONNREFUSED/);
    api.config["nodefleet:cluster"] = { ...cluster, value: { ...(cluster.value as object), kubeconfig: undefined } };
    const none = await getCluster(DRIVER_JWT);
    assert.equal(none.status, 401);
    assert.match(none.body.error.message, /no kubeconfig/);
  });

  it("answers 401 naming the TokenReview rule within the driver's 10 s request timeout when the API server hangs", async () => {
    kube.hang = true;
    const started = Date.now();
    const { status, body } = await getCluster(DRIVER_JWT);
    const elapsed = Date.now() - started;
    assert.equal(status, 401);
    assert.match(body.error.message, /could not be reviewed by cluster example's API server \(rule: .*timed out after 5 s/);
    assert.equal(TOKEN_REVIEW_TIMEOUT_MS, 5_000, "the message above names the review's own timeout");
    assert.ok(elapsed < 10_000, `the driver (10 s) sees the 401, not its own timeout (${elapsed} ms)`);
  });

  it("counts each outcome in nodefleet_api_token_reviews_total", async () => {
    await getCluster(DRIVER_JWT);
    await getCluster(DRIVER_JWT);
    await getCluster(INTRUDER_JWT);
    await getCluster(VAULT_JWT);
    await getCluster(FORGED_JWT);
    kube.forbidden = true;
    await getCluster(FORGED_JWT);
    const text = String((await api.client.raw("GET", "/metrics")).body);
    const count = (result: string) =>
      Number(new RegExp(`^nodefleet_api_token_reviews_total\\{result="${result}"\\} (\\d+)$`, "m").exec(text)?.[1] ?? 0);
    assert.deepEqual(
      ["accepted", "cached", "refused_account", "refused_audience", "refused_token", "review_failed"].map((result) => [
        result,
        count(result),
      ]),
      [
        ["accepted", 1],
        ["cached", 1],
        ["refused_account", 1],
        ["refused_audience", 1],
        ["refused_token", 1],
        ["review_failed", 1],
      ],
    );
  });

  it("keeps the static token: accepted without a review, and never sent to the API server", async () => {
    assert.equal((await getCluster(TOKEN)).status, 200);
    assert.equal((await getCluster("not-a-jwt-and-not-a-token-0123")).status, 401);
    assert.equal(kube.reviews.length, 0, "only JWTs are reviewed");
  });

  it("grants only the served cluster: a ServiceAccount token on another cluster's path is 403", async () => {
    const response = await api.clientWith(DRIVER_JWT).raw("GET", "/api/v1/clusters/other");
    assert.equal(response.status, 403);
  });
});

describe("ServiceAccountTokens' cache", () => {
  const accepted = async () => ({ authenticated: true, username: DRIVER, audiences: ["nodefleet"] });

  it("keeps at most cacheMax acceptances, by hash, and reviews again after the TTL", async () => {
    let now = 0;
    let reviews = 0;
    const tokens = new ServiceAccountTokens({
      clusterId: "example",
      serviceAccount: { namespace: "karpenter", name: "nodefleet-karpenter" },
      review: async () => ((reviews += 1), accepted()),
      cacheTtlMs: 1000,
      cacheMax: 2,
      now: () => now,
    });
    for (const token of ["a.b.c", "d.e.f", "g.h.i"]) await tokens.authenticate(token, hashToken(token));
    assert.equal(tokens.cached, 2, "the oldest acceptance was dropped");
    assert.equal(tokens.acceptedRecently(hashToken("a.b.c")), false);
    assert.equal(tokens.acceptedRecently(hashToken("g.h.i")), true);
    now = 1001;
    await tokens.authenticate("g.h.i", hashToken("g.h.i"));
    assert.equal(reviews, 4, "an expired acceptance is reviewed again");
  });

  it("reviews a token once for a burst of concurrent requests", async () => {
    let reviews = 0;
    const tokens = new ServiceAccountTokens({
      clusterId: "example",
      serviceAccount: { namespace: "karpenter", name: "nodefleet-karpenter" },
      review: async () => ((reviews += 1), await new Promise((r) => setTimeout(r, 20)), accepted()),
    });
    await Promise.all(Array.from({ length: 10 }, () => tokens.authenticate("a.b.c", hashToken("a.b.c"))));
    assert.equal(reviews, 1);
  });

  it("refuses a malformed NODEFLEET_SERVICE_ACCOUNT naming the variable and the form", () => {
    assert.deepEqual(parseServiceAccount("karpenter/nodefleet-karpenter"), { namespace: "karpenter", name: "nodefleet-karpenter" });
    for (const bad of ["nodefleet-karpenter", "a/b/c", "Karpenter/x", "/x"]) {
      assert.throws(() => parseServiceAccount(bad), /NODEFLEET_SERVICE_ACCOUNT must be <namespace>\/<name>/);
    }
  });
});
