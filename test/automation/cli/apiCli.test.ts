/** `nodefleet nodes list|get|create|delete` against a running API, through the shared typed client. */
import { strict as assert } from "node:assert";
import { spawn } from "node:child_process";
import * as path from "node:path";
import { nodeIdFor } from "../../../automation/api/nodeIdentity";
import { TOKEN, startTestApi, type TestApi } from "../../support/apiHarness";

const BIN = path.resolve(__dirname, "..", "..", "..", "..", "bin", "nodefleet.js");

function nodefleet(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      cwd: path.resolve(__dirname, "..", "..", "..", ".."),
      env: { ...process.env, ...env },
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

describe("nodefleet nodes", function () {
  this.timeout(60_000);
  let api: TestApi;
  before(async () => {
    api = await startTestApi();
  });
  after(async () => api.close());

  it("creates, gets, lists and deletes with --json, one JSON document each", async () => {
    const common = ["--url", api.baseUrl, "--cluster", "example", "--json"];
    const env = { NODEFLEET_API_TOKEN: TOKEN };
    const created = await nodefleet(
      [
        "nodes",
        "create",
        ...common,
        "--unique-id",
        "cli-node",
        "--pool",
        "hel1-burst",
        "--label",
        "team=a",
        "--taint",
        "gpu=true:NoSchedule",
        "--wait-seconds",
        "30",
      ],
      env,
    );
    assert.equal(created.code, 0, created.stderr);
    const node = JSON.parse(created.stdout) as {
      nodeID: string;
      status: string;
      labels: Record<string, string>;
      taints: Array<{ key: string }>;
    };
    assert.equal(node.nodeID, nodeIdFor("cli-node"));
    assert.equal(node.status, "RUNNING");
    assert.equal(node.labels.team, "a");
    assert.ok(node.taints.some((t) => t.key === "gpu"));
    const got = await nodefleet(["nodes", "get", node.nodeID, ...common], env);
    assert.equal((JSON.parse(got.stdout) as { nodeID: string }).nodeID, node.nodeID);
    const listed = await nodefleet(["nodes", "list", ...common, "--pool", "hel1-burst"], env);
    assert.deepEqual(
      (JSON.parse(listed.stdout) as { nodes: Array<{ nodeID: string }> }).nodes.map((n) => n.nodeID),
      [node.nodeID],
    );
    const deleted = await nodefleet(["nodes", "delete", node.nodeID, ...common], env);
    assert.deepEqual(JSON.parse(deleted.stdout), { nodeID: node.nodeID, status: "TERMINATING" });
  });

  it("prints the API's validation issues, and with --json the API's whole error (details.issues included) on stdout", async () => {
    const args = ["nodes", "create", "--url", api.baseUrl, "--cluster", "example", "--unique-id", "Not_A_Name", "--pool", "hel1-burst"];
    const env = { NODEFLEET_API_TOKEN: TOKEN };
    const text = await nodefleet(args, env);
    assert.equal(text.code, 1);
    assert.match(text.stderr, /400 ValidationError/);
    assert.match(text.stderr, /- body\.uniqueID: uniqueID must be/);
    const json = await nodefleet([...args, "--json"], env);
    assert.equal(json.code, 1);
    const document = JSON.parse(json.stdout) as { status: number; error: { code: string; details: { issues: Array<{ path: string }> } } };
    assert.equal(document.status, 400);
    assert.equal(document.error.code, "ValidationError");
    assert.deepEqual(
      document.error.details.issues.map((i) => i.path),
      ["body.uniqueID"],
    );
  });

  it("names the URL and the cause when the API cannot be reached, instead of 'fetch failed'", async () => {
    const closed = await startTestApi();
    const url = closed.baseUrl;
    await closed.close();
    const result = await nodefleet(["nodes", "list", "--url", url, "--cluster", "example"], { NODEFLEET_API_TOKEN: TOKEN });
    assert.equal(result.code, 1);
    assert.ok(result.stderr.includes(`${url}/api/v1/clusters/example/nodes`), result.stderr);
    assert.match(result.stderr, /ECONNREFUSED/);
    assert.doesNotMatch(result.stderr, /fetch failed/);
  });

  it("prints the API's error code and exits 1 on an API error; says how to get a token without one", async () => {
    const missing = await nodefleet(["nodes", "get", "k000000000000", "--url", api.baseUrl, "--cluster", "example"], {
      NODEFLEET_API_TOKEN: TOKEN,
    });
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /404 NodeNotFound/);
    const noToken = await nodefleet(["nodes", "list", "--url", api.baseUrl, "--cluster", "example", "--data-dir", "/nonexistent"], {
      NODEFLEET_API_TOKEN: "",
    });
    assert.notEqual(noToken.code, 0);
    assert.match(noToken.stderr, /no API token/);
  });
});
