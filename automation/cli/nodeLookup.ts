/**
 * `nodes get` by a node's ID or by its uniqueID (the NodeClaim name, what `kubectl get nodeclaims`
 * shows). A node's ID is derived from its uniqueID (api/nodeIdentity.ts), so a uniqueID is looked
 * up by asking for the ID it derives: one request, exact, and no listing of the whole fleet.
 */
import { nodeIdFor } from "../api/nodeIdentity";
import { NodefleetApiError, type NodefleetClient, type NodeView } from "../client/nodefleetClient";

/** The API's limit on a node ID (the path parameter); a longer name can only be a uniqueID. */
const NODE_ID_MAX = 63;

function notFound(error: unknown): boolean {
  return error instanceof NodefleetApiError && error.code === "NodeNotFound";
}

export async function getNodeByIdOrUniqueId(client: NodefleetClient, id: string): Promise<NodeView> {
  if (id.length <= NODE_ID_MAX) {
    try {
      return await client.getNode(id);
    } catch (error) {
      if (!notFound(error)) throw error;
    }
  }
  const derived = nodeIdFor(id);
  try {
    return await client.getNode(derived);
  } catch (error) {
    if (!notFound(error)) throw error;
    throw new NodefleetApiError(
      404,
      "NodeNotFound",
      `no node has the ID or the uniqueID ${id} (as a uniqueID its node ID would be ${derived})`,
    );
  }
}
