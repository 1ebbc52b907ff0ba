/**
 * `nodes list` as a kubectl-style table with a header (`-o wide`: more columns, `-o json`: as
 * --json), and `nodes get` by a node's ID or its uniqueID.
 */
import { strict as assert } from "node:assert";
import { nodeIdFor } from "../../../automation/api/nodeIdentity";
import { humanAge } from "../../../automation/cli/humanAge";
import { nodeTable } from "../../../automation/cli/nodeTable";
import type { NodeView } from "../../../automation/client/nodefleetClient";
import { TOKEN, startTestApi, type TestApi } from "../../support/apiHarness";
import { runNodefleet } from "../../support/nodefleetCli";

const NOW = new Date("2025-01-01T12:00:00Z");

function node(overrides: Partial<NodeView>): NodeView {
  const resources = { cpu: "2", memory: "4Gi", pods: "110", "ephemeral-storage": "40Gi" };
  return {
    nodeID: "k000000000001",
    providerID: "hcloud://1",
    status: "RUNNING",
    instanceID: "1",
    pool: "hel1-burst",
    instanceType: "cx22",
    zone: "hel1",
    ipv4: "203.0.113.1",
    privateIpv4: "10.0.1.1",
    capacity: resources,
    allocatable: resources,
    imageID: "ubuntu-24.04",
    labels: {},
    taints: [],
    createdAt: new Date(NOW.getTime() - 5 * 60_000).toISOString(),
    updatedAt: NOW.toISOString(),
    drifted: false,
    ...overrides,
  };
}

/**
 * The row's cells, cut where each header starts: with aligned columns every cell starts under its
 * header (and the character before it is blank), so the cut cells are exactly the values.
 */
function cellsUnder(header: string, row: string): string[] {
  const starts = [...header.matchAll(/(?:^|\s{3})(\S)/g)].map((match) => match.index! + match[0].length - 1);
  for (const start of starts.slice(1)) assert.equal(row[start - 1], " ", `a cell starts at column ${start} of ${JSON.stringify(row)}`);
  return starts.map((start, i) => row.slice(start, starts[i + 1]).trim());
}

describe("nodes list as a table", () => {
  const nodes = [
    node({}),
    node({
      nodeID: "k00000000000a",
      status: "FAILED",
      failureCode: "InsufficientCapacity",
      failureReason: "cx22 is sold out in hel1",
      ipv4: null,
      privateIpv4: null,
      instanceID: null,
      instanceType: "ccx63-long-name",
    }),
  ];

  it("has a header and aligned columns, empty cells shown as -", () => {
    const [header, first, second, ...rest] = nodeTable(nodes, { wide: false, now: NOW }).split("\n");
    assert.deepEqual(rest, []);
    assert.match(header!, /^NODE ID {3,}STATUS {3,}POOL {3,}INSTANCE TYPE {3,}ZONE {3,}IPV4 {3,}AGE$/);
    assert.deepEqual(cellsUnder(header!, first!), ["k000000000001", "RUNNING", "hel1-burst", "cx22", "hel1", "203.0.113.1", "5m"]);
    assert.deepEqual(cellsUnder(header!, second!), [
      "k00000000000a",
      "FAILED,InsufficientCapacity",
      "hel1-burst",
      "ccx63-long-name",
      "hel1",
      "-",
      "5m",
    ]);
  });

  it("-o wide adds the private IP, provider ID, instance ID, image and the failure reason", () => {
    const [header, first, second] = nodeTable(nodes, { wide: true, now: NOW }).split("\n");
    assert.match(header!, /AGE {3,}PRIVATE IP {3,}PROVIDER ID {3,}INSTANCE ID {3,}IMAGE {3,}REASON$/);
    assert.deepEqual(cellsUnder(header!, first!).slice(7), ["10.0.1.1", "hcloud://1", "1", "ubuntu-24.04", "-"]);
    assert.deepEqual(cellsUnder(header!, second!).slice(7), ["-", "hcloud://1", "-", "ubuntu-24.04", "cx22 is sold out in hel1"]);
  });

  it("says a node's age as kubectl does", () => {
    const ago = (seconds: number) => humanAge(new Date(NOW.getTime() - seconds * 1000), NOW);
    assert.deepEqual(
      [ago(0), ago(45), ago(200), ago(600), ago(3 * 3600 + 60), ago(30 * 3600), ago(3 * 86400 + 4 * 3600), ago(40 * 86400)],
      ["0s", "45s", "3m20s", "10m", "3h1m", "30h", "3d4h", "40d"],
    );
  });
});

describe("nodefleet nodes list -o and nodes get by uniqueID", function () {
  this.timeout(120_000);
  let api: TestApi;
  let created: NodeView;
  const env = { NODEFLEET_API_TOKEN: TOKEN };
  const connection = () => ["--url", api.baseUrl, "--cluster", "example"];

  before(async () => {
    api = await startTestApi();
    created = (await api.client.createNode({ uniqueID: "table-claim", pool: "hel1-burst" }, { waitSeconds: 30 })).node;
  });
  after(async () => api.close());

  it("prints a header row, then the node", async () => {
    const result = await runNodefleet(["nodes", "list", ...connection()], env);
    assert.equal(result.code, 0, result.stderr);
    const [header, row] = result.stdout.trimEnd().split("\n");
    assert.match(header!, /^NODE ID\s+STATUS\s+POOL\s+INSTANCE TYPE\s+ZONE\s+IPV4\s+AGE$/);
    assert.ok(row!.startsWith(created.nodeID), row);
  });

  it("-o wide adds the provider ID; -o json prints the same document as --json", async () => {
    const wide = await runNodefleet(["nodes", "list", ...connection(), "-o", "wide"], env);
    assert.equal(wide.code, 0, wide.stderr);
    assert.match(wide.stdout.split("\n")[0]!, /PROVIDER ID/);
    assert.ok(wide.stdout.includes(created.providerID), wide.stdout);
    const json = await runNodefleet(["nodes", "list", ...connection(), "-o", "json"], env);
    assert.equal(json.code, 0, json.stderr);
    assert.deepEqual(
      (JSON.parse(json.stdout) as { nodes: NodeView[] }).nodes.map((n) => n.nodeID),
      [created.nodeID],
    );
  });

  it("gets a node by its uniqueID (the NodeClaim name), and says neither matched when none does", async () => {
    const byUniqueId = await runNodefleet(["nodes", "get", "table-claim", ...connection(), "--json"], env);
    assert.equal(byUniqueId.code, 0, byUniqueId.stderr);
    assert.equal((JSON.parse(byUniqueId.stdout) as NodeView).nodeID, nodeIdFor("table-claim"));
    const missing = await runNodefleet(["nodes", "get", "no-such-claim", ...connection()], env);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /404 NodeNotFound: no node has the ID or the uniqueID no-such-claim/);
  });
});
