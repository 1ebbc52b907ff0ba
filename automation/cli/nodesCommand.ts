/**
 * `nodefleet nodes list|get|create|delete` against a running scaling API, through the typed client
 * the tests use. The token comes from --token, NODEFLEET_API_TOKEN, or the token `serve` generated
 * in the data directory (apiTokenSource.ts); the cluster from --cluster, NODEFLEET_CLUSTER or the
 * --stack config.
 */
import { InvalidArgumentError, Option, type Command } from "commander";
import { NodefleetApiError, NodefleetClient, NodefleetConnectionError, type NodeView } from "../client/nodefleetClient";
import { declaredClusterId, projectRoot } from "../stackConfigFile";
import { resolveApiToken, type ApiToken } from "./apiTokenSource";
import { getNodeByIdOrUniqueId } from "./nodeLookup";
import { nodeTable } from "./nodeTable";
import { parseWaitSeconds } from "./waitSecondsOption";

interface ConnectionOptions {
  url: string;
  cluster?: string;
  stack?: string;
  token?: string;
  dataDir: string;
  json?: boolean;
}

interface Connection {
  readonly client: NodefleetClient;
  readonly token: ApiToken;
  readonly baseUrl: string;
}

function connect(options: ConnectionOptions, env: NodeJS.ProcessEnv = process.env): Connection {
  let clusterId = options.cluster ?? env.NODEFLEET_CLUSTER;
  if (!clusterId && options.stack) clusterId = declaredClusterId(options.stack, projectRoot());
  if (!clusterId) throw new Error("say which cluster: --cluster ID, --stack NAME or NODEFLEET_CLUSTER");
  const token = resolveApiToken(options, env);
  const baseUrl = options.url.replace(/\/$/, "");
  return { client: new NodefleetClient({ baseUrl, clusterId, token: token.token }), token, baseUrl };
}

function print(options: { json?: boolean }, value: unknown, text: () => string): void {
  process.stdout.write(options.json ? `${JSON.stringify(value, null, 2)}\n` : `${text()}\n`);
}

function nodeLine(n: NodeView): string {
  return [n.nodeID, n.status, n.pool, n.instanceType, n.zone, n.ipv4 ?? "-", n.drifted ? "drifted" : "", n.failureReason ?? ""]
    .join("\t")
    .trimEnd();
}

function nodeDetails(n: NodeView): string {
  return [
    `nodeID:       ${n.nodeID}`,
    `providerID:   ${n.providerID}`,
    `status:       ${n.status}${n.failureReason ? ` (${n.failureCode ?? "failed"}: ${n.failureReason})` : ""}`,
    `pool:         ${n.pool}`,
    `instanceType: ${n.instanceType} in ${n.zone}`,
    `instanceID:   ${n.instanceID ?? "-"}`,
    `addresses:    ${n.ipv4 ?? "-"} / ${n.privateIpv4 ?? "-"}`,
    `allocatable:  cpu ${n.allocatable.cpu}, memory ${n.allocatable.memory}, pods ${n.allocatable.pods}`,
    `image:        ${n.imageID}`,
    `drifted:      ${n.drifted ? `yes (${n.driftReason}): ${n.driftDetails}` : "no"}`,
  ].join("\n");
}

function keyValue(value: string, previous: Record<string, string> = {}): Record<string, string> {
  const eq = value.indexOf("=");
  if (eq <= 0) throw new InvalidArgumentError("labels are key=value");
  return { ...previous, [value.slice(0, eq)]: value.slice(eq + 1) };
}

type TaintArg = { key: string; value?: string; effect: "NoSchedule" | "PreferNoSchedule" | "NoExecute" };
function taint(value: string, previous: TaintArg[] = []): TaintArg[] {
  const match = /^([^=:]+)(?:=([^:]*))?:(NoSchedule|PreferNoSchedule|NoExecute)$/.exec(value);
  if (!match) throw new InvalidArgumentError("taints are key[=value]:NoSchedule|PreferNoSchedule|NoExecute");
  return [...previous, { key: match[1]!, ...(match[2] !== undefined ? { value: match[2] } : {}), effect: match[3] as TaintArg["effect"] }];
}

function withConnection(command: Command): Command {
  return command
    .option(
      "--url <url>",
      "scaling API base URL (https with a private CA: set NODE_EXTRA_CA_CERTS to the CA's PEM file)",
      process.env.NODEFLEET_API_URL ?? "http://127.0.0.1:8080",
    )
    .option("--cluster <id>", "cluster id")
    .option("--stack <name>", "take the cluster id from stacks/Pulumi.<name>.yaml")
    .option("--token <token>", "API token (default NODEFLEET_API_TOKEN, or the token serve generated in --data-dir)")
    .option("--data-dir <dir>", "data directory of a local serve (for its generated token)", "./.nodefleet")
    .option("--json", "print one JSON document");
}

/** The validation issues of an API error (`details.issues`), one `path: message` line each. */
function issueLines(details: unknown): string[] {
  const issues = (details as { issues?: Array<{ path?: unknown; message?: unknown }> } | undefined)?.issues;
  return Array.isArray(issues) ? issues.map((i) => `  - ${String(i.path ?? "")}: ${String(i.message ?? "")}`) : [];
}

/** A refused token (401), reported by where it came from: the token itself is never printed. */
function tokenLines(error: NodefleetApiError, connection: Connection): string[] {
  if (error.status !== 401) return [];
  return [`  the token came from ${connection.token.source}, and the scaling API at ${connection.baseUrl} does not accept it`];
}

/**
 * Connects (a missing cluster or token is an error of its own, before any request), then runs the
 * action. API errors print their code, message, validation issues and, for a 401, where the token
 * came from (with --json: the API's error as one JSON document on stdout, details included); an
 * unreachable API prints the URL and the cause. The exit code is 1.
 */
async function run(options: ConnectionOptions, action: (client: NodefleetClient) => Promise<void>): Promise<void> {
  const connection = connect(options);
  try {
    await action(connection.client);
  } catch (error) {
    if (error instanceof NodefleetApiError) {
      if (options.json) {
        const { status, code, details } = error;
        const message = error.message.slice(`${status} ${code}: `.length);
        process.stdout.write(
          `${JSON.stringify({ status, error: { code, message, ...(details === undefined ? {} : { details }) } }, null, 2)}\n`,
        );
      }
      process.stderr.write(
        `nodefleet nodes: ${[error.message, ...issueLines(error.details), ...tokenLines(error, connection)].join("\n")}\n`,
      );
      process.exitCode = 1;
      return;
    }
    if (error instanceof NodefleetConnectionError) {
      if (options.json)
        process.stdout.write(`${JSON.stringify({ error: { code: "Unreachable", message: error.message, url: error.url } }, null, 2)}\n`);
      process.stderr.write(`nodefleet nodes: cannot reach the scaling API: ${error.message}\n`);
      process.exitCode = 1;
      return;
    }
    throw error;
  }
}

export function registerNodesCommand(program: Command): void {
  const nodes = program.command("nodes").description("list, inspect, create and delete autoscaled nodes through a running scaling API");

  withConnection(
    nodes
      .command("list")
      .description("nodes not yet confirmed gone, as a table")
      .option("--pool <name>", "only this pool")
      .addOption(
        new Option(
          "-o, --output <format>",
          "json (as --json), or wide: more columns (private IP, provider ID, instance ID, image, reason)",
        ).choices(["json", "wide"]),
      ),
  ).action((opts: ConnectionOptions & { pool?: string; output?: "json" | "wide" }) => {
    const options = { ...opts, json: opts.json || opts.output === "json" };
    return run(options, async (client) => {
      const list = await client.listNodes(opts.pool);
      print(options, { nodes: list }, () => (list.length === 0 ? "no nodes" : nodeTable(list, { wide: opts.output === "wide" })));
    });
  });

  withConnection(
    nodes
      .command("get")
      .description("one node, by its node ID or its uniqueID (the NodeClaim name)")
      .argument("<id>", "node ID or uniqueID"),
  ).action((id: string, opts: ConnectionOptions) =>
    run(opts, async (client) => {
      const node = await getNodeByIdOrUniqueId(client, id);
      print(opts, node, () => nodeDetails(node));
    }),
  );

  withConnection(
    nodes
      .command("create")
      .description("create a node (answers PENDING unless --wait-seconds)")
      .requiredOption("--unique-id <name>", "idempotency key (a NodeClaim name)")
      .requiredOption("--pool <name>", "autoscaled pool")
      .option("--instance-type <type>", "server type (default: the cheapest available that fits)")
      .option("--zone <zone>", "location")
      .option("--label <key=value>", "node label (repeatable)", keyValue)
      .option("--taint <key[=value]:effect>", "node taint (repeatable)", taint)
      .option("--wait-seconds <n>", "wait until RUNNING or FAILED (0-120)", parseWaitSeconds),
  ).action(
    (
      opts: ConnectionOptions & {
        uniqueId: string;
        pool: string;
        instanceType?: string;
        zone?: string;
        label?: Record<string, string>;
        taint?: TaintArg[];
        waitSeconds?: number;
      },
    ) =>
      run(opts, async (client) => {
        const { created, node } = await client.createNode(
          {
            uniqueID: opts.uniqueId,
            pool: opts.pool,
            ...(opts.instanceType ? { instanceType: opts.instanceType } : {}),
            ...(opts.zone ? { zone: opts.zone } : {}),
            ...(opts.label ? { labels: opts.label } : {}),
            ...(opts.taint ? { taints: opts.taint } : {}),
          },
          opts.waitSeconds !== undefined ? { waitSeconds: opts.waitSeconds } : {},
        );
        print(opts, node, () => `${created ? "created" : "exists"}: ${nodeLine(node)}`);
      }),
  );

  withConnection(nodes.command("delete").description("delete a node (repeat until it is gone)").argument("<nodeId>")).action(
    (nodeId: string, opts: ConnectionOptions) =>
      run(opts, async (client) => {
        const answer = await client.deleteNode(nodeId);
        print(opts, answer, () => `${answer.nodeID}: ${answer.status}`);
      }),
  );
}
