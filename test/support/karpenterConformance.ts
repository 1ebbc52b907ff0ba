/**
 * The Karpenter-style conformance drive of the scaling API, driven only through HTTP as the
 * CloudProvider driver does, one phase a function so that the same checks run on every engine (the
 * fake and simulated engines in-process, the automation engine as `nodefleet serve` on the local
 * cloud, with kills between the phases there): Creates with Karpenter's retries (every 4th
 * NodeClaim sent twice, concurrently), Get polled until RUNNING, List, and Delete repeated until
 * NodeClaimNotFound (404).
 */
import assert from "node:assert/strict";
import { type CreateNodeBody, NodefleetApiError, type NodefleetClient, type NodeView } from "../../automation/client/nodefleetClient";

/**
 * What the drive calls: a NodefleetClient, or one spreading its calls over several replicas of the
 * service (scaleOutOnLocalCloud.test.ts).
 */
export type ConformanceClient = Pick<NodefleetClient, "createNode" | "getNode" | "listNodes" | "deleteNode">;

/** Polls `probe` until it returns a value; fails (naming `what`) when its budget is spent. */
export type WaitFor = <T>(what: string, probe: () => Promise<T | undefined>) => Promise<T>;

/** NodeClaim names `<prefix>-<n>`, numbered from 0. */
export function claimNames(prefix: string, count: number): string[] {
  return Array.from({ length: count }, (_, i) => `${prefix}-${i.toString().padStart(3, "0")}`);
}

/**
 * Creates one node per name as Karpenter does on timeouts (every 4th name twice, concurrently):
 * exactly one 201 per name, every answer for a name the same node, no two names one node. Returns
 * the node ids in the order of `names`.
 */
export async function createClaims(
  client: ConformanceClient,
  names: readonly string[],
  body: Omit<CreateNodeBody, "uniqueID">,
): Promise<string[]> {
  const requests = [...names, ...names.filter((_, i) => i % 4 === 0)];
  const answers = await Promise.all(requests.map((uniqueID) => client.createNode({ ...body, uniqueID })));
  const byName = new Map<string, Set<string>>();
  answers.forEach((answer, i) => byName.set(requests[i]!, (byName.get(requests[i]!) ?? new Set()).add(answer.node.nodeID)));
  assert.equal(answers.filter((a) => a.created).length, names.length, "exactly one 201 per NodeClaim");
  for (const [name, ids] of byName) assert.equal(ids.size, 1, `${name} maps to one node`);
  const nodeIds = names.map((name) => [...byName.get(name)!][0]!);
  assert.equal(new Set(nodeIds).size, names.length, "no two NodeClaims share a node");
  return nodeIds;
}

/**
 * Polls Get for every node until all are RUNNING, as the launch and registration loop does; each
 * has an instance id and its own providerID `<scheme>:///<cluster>/<nodeID>`, and List (what
 * garbage collection reads) names every one of them. Returns the RUNNING views.
 */
export async function awaitRunning(
  client: ConformanceClient,
  nodeIds: readonly string[],
  waitFor: WaitFor,
  providerIdPrefix: string,
): Promise<NodeView[]> {
  const running = await waitFor(`all ${nodeIds.length} RUNNING`, async () => {
    const nodes = await Promise.all(nodeIds.map((id) => client.getNode(id)));
    return nodes.every((n) => n.status === "RUNNING") ? nodes : undefined;
  });
  for (const node of running) {
    assert.ok(node.instanceID, `${node.nodeID} has an instance id`);
    assert.equal(node.providerID, `${providerIdPrefix}${node.nodeID}`);
  }
  const providerIds = new Set(running.map((n) => n.providerID));
  assert.equal(providerIds.size, nodeIds.length, "one providerID per node");
  assert.deepEqual(new Set((await client.listNodes()).map((n) => n.providerID)), providerIds, "List names exactly these nodes");
  return running;
}

/**
 * Deletes every node, each Delete repeated at `waitFor`'s pace (answered TERMINATING) until it is
 * answered 404 NodeNotFound, as Karpenter's termination loop does; List is empty afterwards.
 */
export async function deleteUntilGone(client: ConformanceClient, nodeIds: readonly string[], waitFor: WaitFor): Promise<void> {
  // A probe's throw only means "not yet" to waitFor: a wrong answer is handed out and thrown here instead.
  const outcomes = await Promise.all(
    nodeIds.map((id) =>
      waitFor(`${id} answered 404 to its Delete`, async (): Promise<{ wrong?: unknown } | undefined> => {
        try {
          const answer = await client.deleteNode(id);
          return answer.status === "TERMINATING"
            ? undefined
            : { wrong: new Error(`Delete of ${id} answered status ${answer.status}, not TERMINATING`) };
        } catch (error) {
          if (error instanceof NodefleetApiError && error.status === 404 && error.code === "NodeNotFound") return {};
          return { wrong: error };
        }
      }),
    ),
  );
  for (const outcome of outcomes) if (outcome.wrong !== undefined) throw outcome.wrong;
  assert.deepEqual(await client.listNodes(), []);
}
