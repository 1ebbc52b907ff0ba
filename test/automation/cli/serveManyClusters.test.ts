/**
 * `nodefleet serve` with several stacks (issue #40 part 1): one listener for several clusters, each
 * with its own tokens, store and run queue in `<data-dir>/<stack>`; a broken stack is reported per
 * cluster in readyz and the metrics and never stops the others; stack files added or removed while
 * serving start or stop their cluster alone. The simulated engine, one process per test.
 */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as path from "node:path";
import { stringify } from "yaml";
import { readRawStackConfig } from "../../../automation/api/apiTokenSources";
import { NodefleetClient } from "../../../automation/client/nodefleetClient";
import { apiError, tempDataDir } from "../../support/apiHarness";
import { REPOSITORY_ROOT, startServe, stopServe, type ServeProcess } from "../../support/serveProcess";
import { until } from "../../support/until";

const ALPHA_TOKEN = "alpha-token-0123456789abcdef";
const BETA_TOKEN = "beta-token-0123456789abcdef0";
const GAMMA_TOKEN = "gamma-token-0123456789abcdef";
const TOKENS = `alpha:${ALPHA_TOKEN},beta:${BETA_TOKEN},gamma:${GAMMA_TOKEN}`;

/** A project whose stacks/ holds a copy of the example stack per cluster id given (by stack name). */
function project(clusters: Record<string, string>): string {
  const root = tempDataDir("nodefleet-many-");
  fs.mkdirSync(path.join(root, "stacks"));
  fs.copyFileSync(path.join(REPOSITORY_ROOT, "Pulumi.yaml"), path.join(root, "Pulumi.yaml"));
  for (const [stack, clusterId] of Object.entries(clusters)) writeStack(root, stack, clusterId);
  return root;
}

function writeStack(root: string, stack: string, clusterId: string, change: (config: Record<string, any>) => void = () => {}): void {
  const config: Record<string, any> = readRawStackConfig(path.join(REPOSITORY_ROOT, "stacks", "Pulumi.example.yaml"));
  config["nodefleet:cluster"] = { ...config["nodefleet:cluster"], id: clusterId };
  change(config);
  fs.writeFileSync(path.join(root, "stacks", `Pulumi.${stack}.yaml`), stringify({ config }));
}

/** A stack whose first pool names a location Hetzner does not have: refused when the cluster starts. */
const onMars = (config: Record<string, any>) => (config["nodefleet:pools"][0].location = "mars");

interface ClusterEntry {
  readonly cluster?: string;
  readonly status: string;
  readonly details?: Record<string, unknown>;
}

async function readiness(
  serve: ServeProcess,
): Promise<{ status: number; body: { status: string; details: { clusters: Record<string, ClusterEntry> } } }> {
  const response = await fetch(`${serve.baseUrl}/readyz`);
  return { status: response.status, body: (await response.json()) as never };
}

function clientFor(serve: ServeProcess, clusterId: string, token: string): NodefleetClient {
  return new NodefleetClient({ baseUrl: serve.baseUrl, clusterId, token });
}

const create = async (client: NodefleetClient, uniqueID: string) => (await client.createNode({ pool: "hel1-burst", uniqueID })).node;

function serveProject(root: string, stacks: readonly string[]): Promise<ServeProcess> {
  return startServe(
    path.join(root, "data"),
    { NODEFLEET_API_TOKENS: TOKENS, NODEFLEET_STACKS_RECHECK_MS: "300" },
    { stacks, engine: "simulated", cwd: root },
  );
}

describe("nodefleet serve with several stacks", function () {
  this.timeout(180_000);
  let serve: ServeProcess | undefined;
  afterEach(async () => {
    await stopServe(serve);
    serve = undefined;
  });

  it("serves two clusters behind one port with their own tokens, while a broken stack fails alone", async () => {
    const root = project({ alpha: "alpha", beta: "beta" });
    writeStack(root, "broken", "broken", onMars);
    serve = await serveProject(root, ["*"]);
    const ready = await until(
      "the cluster's state",
      async () => {
        const answer = await readiness(serve!);
        const { alpha, beta } = answer.body.details.clusters;
        return alpha?.status === "ready" && beta?.status === "ready" ? answer : undefined;
      },
      60_000,
    );
    assert.equal(ready.status, 200, "a broken stack leaves the service ready for the others");
    assert.equal(ready.body.status, "degraded");
    const broken = ready.body.details.clusters.broken!;
    assert.equal(broken.status, "failed");
    assert.equal(broken.cluster, "broken");
    assert.match(
      String(broken.details?.error),
      /nodefleet:pools\[0\]\.location: location must be a Hetzner Cloud location/,
      "readyz says why the stack did not start",
    );

    const alpha = clientFor(serve, "alpha", ALPHA_TOKEN);
    const beta = clientFor(serve, "beta", BETA_TOKEN);
    const created = await create(alpha, "alpha-1");
    assert.equal(created.status, "PENDING");
    const betaNode = await create(beta, "beta-1");
    await until("the cluster's state", async () => ((await alpha.getNode(created.nodeID)).status === "RUNNING" ? true : undefined), 60_000);
    assert.deepEqual(
      (await beta.listNodes()).map((node) => node.nodeID),
      [betaNode.nodeID],
      "each cluster has its own store",
    );

    const crossed = await apiError(create(clientFor(serve, "alpha", BETA_TOKEN), "alpha-2"));
    assert.equal(crossed.status, 403, "beta's token does not reach alpha");
    const brokenCreate = await apiError(create(clientFor(serve, "broken", ALPHA_TOKEN), "b-1"));
    assert.equal(brokenCreate.status, 503);
    assert.match(brokenCreate.message, /stack broken did not start/);
    const unknown = await apiError(create(clientFor(serve, "nowhere", ALPHA_TOKEN), "n-1"));
    assert.equal(unknown.status, 404);
    assert.equal(unknown.code, "ClusterNotFound");
    const anonymous = await fetch(`${serve.baseUrl}/api/v1/clusters/nowhere/nodes`);
    assert.equal(anonymous.status, 401, "no token, no answer about which clusters exist");

    const metrics = await (await fetch(`${serve.baseUrl}/metrics`)).text();
    assert.match(metrics, /^nodefleet_cluster_state\{cluster="alpha",state="ready"\} 1$/m);
    assert.match(metrics, /^nodefleet_cluster_state\{cluster="broken",state="failed"\} 1$/m);
    assert.match(metrics, /^nodefleet_engine_runs_total\{[^}]*cluster="alpha"[^}]*\} [1-9]/m, "each cluster's own metrics are merged in");
    assert.equal(metrics.match(/^# TYPE nodefleet_process_resident_memory_bytes /gm)?.length, 1, "the process's metrics once");
    for (const stack of ["alpha", "beta"])
      assert.ok(fs.existsSync(path.join(root, "data", stack, "nodefleet.db")), `${stack} keeps its own store`);
  });

  it("reads each cluster's cloud credentials from its own folder: a wrong file fails that cluster alone, naming it", async () => {
    const root = project({ alpha: "alpha", beta: "beta" });
    const credentials = tempDataDir("nodefleet-cluster-credentials-");
    // alpha: a valid folder laid out as a mounted Secret (its `..data` link beside the keys).
    fs.mkdirSync(path.join(credentials, "alpha", "..2026_12_05"), { recursive: true });
    fs.writeFileSync(path.join(credentials, "alpha", "HROBOT_USER"), "alpha-robot\n");
    fs.symlinkSync("..2026_12_05", path.join(credentials, "alpha", "..data"));
    // beta: a misspelt key.
    fs.mkdirSync(path.join(credentials, "beta"));
    fs.writeFileSync(path.join(credentials, "beta", "HCLOUD_TOKN"), "beta-sekret-value");
    serve = await startServe(
      path.join(root, "data"),
      { NODEFLEET_API_TOKENS: TOKENS, NODEFLEET_CLUSTER_CREDENTIALS_DIR: credentials },
      { stacks: ["*"], engine: "simulated", cwd: root },
    );
    const ready = await until(
      "alpha ready and beta failed",
      async () => {
        const { alpha, beta } = (await readiness(serve!)).body.details.clusters;
        return alpha?.status === "ready" && beta?.status === "failed" ? beta : undefined;
      },
      60_000,
    );
    assert.match(
      String(ready.details?.error),
      /NODEFLEET_CLUSTER_CREDENTIALS_DIR: .*beta\/HCLOUD_TOKN names no credential this service reads/,
    );
    assert.match(String(ready.details?.error), /HCLOUD_TOKEN, SCW_ACCESS_KEY/);
    assert.doesNotMatch(`${JSON.stringify(ready)}${serve.stderr()}`, /beta-sekret-value/, "a credential's value is never shown");
    const created = await create(clientFor(serve, "alpha", ALPHA_TOKEN), "alpha-1");
    assert.equal(created.status, "PENDING");
  });

  it("starts a stack file added while serving, stops one removed, and retries a fixed one, the others untouched", async () => {
    const root = project({ alpha: "alpha" });
    writeStack(root, "beta", "beta", onMars);
    serve = await serveProject(root, ["alpha", "beta", "gamma*"]);
    const alpha = clientFor(serve, "alpha", ALPHA_TOKEN);
    await until(
      "the cluster's state",
      async () => ((await readiness(serve!)).body.details.clusters.alpha?.status === "ready" ? true : undefined),
      60_000,
    );
    const first = await create(alpha, "alpha-1");

    writeStack(root, "gamma-1", "gamma");
    await until(
      "the cluster's state",
      async () => ((await readiness(serve!)).body.details.clusters["gamma-1"]?.status === "ready" ? true : undefined),
      60_000,
    );
    assert.equal((await create(clientFor(serve, "gamma", GAMMA_TOKEN), "gamma-1")).status, "PENDING");

    writeStack(root, "beta", "beta");
    await until(
      "the cluster's state",
      async () => ((await readiness(serve!)).body.details.clusters.beta?.status === "ready" ? true : undefined),
      60_000,
    );
    assert.equal((await create(clientFor(serve, "beta", BETA_TOKEN), "beta-1")).status, "PENDING", "the fixed stack serves");

    fs.rmSync(path.join(root, "stacks", "Pulumi.gamma-1.yaml"));
    await until(
      "the cluster's state",
      async () => ((await readiness(serve!)).body.details.clusters["gamma-1"] === undefined ? true : undefined),
      60_000,
    );
    const gone = await apiError(create(clientFor(serve, "gamma", GAMMA_TOKEN), "gamma-2"));
    assert.equal(gone.status, 404, "a removed stack's cluster is no longer served");
    assert.ok(!fs.existsSync(path.join(root, "data", "gamma-1", "nodefleet.lock")), "its data directory is released");

    fs.rmSync(path.join(root, "stacks", "Pulumi.alpha.yaml"));
    const missing = await until(
      "the cluster's state",
      async () => {
        const entry = (await readiness(serve!)).body.details.clusters.alpha;
        return entry?.status === "failed" ? entry : undefined;
      },
      60_000,
    );
    assert.match(String(missing.details?.error), /no stack file .*Pulumi\.alpha\.yaml/, "a named stack whose file went is reported");
    writeStack(root, "alpha", "alpha");
    await until(
      "the cluster's state",
      async () => ((await readiness(serve!)).body.details.clusters.alpha?.status === "ready" ? true : undefined),
      60_000,
    );
    assert.equal((await alpha.getNode(first.nodeID)).nodeID, first.nodeID, "back with its store as it was");
  });

  it("serves one stack per cluster id: a second stack declaring the same cluster fails, naming the first", async () => {
    const root = project({ alpha: "alpha" });
    serve = await serveProject(root, ["*"]);
    await until(
      "the cluster's state",
      async () => ((await readiness(serve!)).body.details.clusters.alpha?.status === "ready" ? true : undefined),
      60_000,
    );
    writeStack(root, "alpha-copy", "alpha");
    const copy = await until(
      "the cluster's state",
      async () => {
        const entry = (await readiness(serve!)).body.details.clusters["alpha-copy"];
        return entry?.status === "failed" ? entry : undefined;
      },
      60_000,
    );
    assert.match(String(copy.details?.error), /cluster alpha is already served by stack alpha/);
    assert.equal((await create(clientFor(serve, "alpha", ALPHA_TOKEN), "alpha-1")).status, "PENDING", "the first keeps serving");
  });

  it("refuses a --stack that is neither a stack name nor a pattern, naming the rule", async () => {
    const root = project({ alpha: "alpha" });
    await assert.rejects(serveProject(root, ["alpha", "../etc"]), /--stack "\.\.\/etc": a stack name holds letters, digits/);
    assert.ok(!fs.existsSync(path.join(root, "data")), "nothing created");
  });
});
