/** Node routes: create (idempotent per uniqueID, optional waitSeconds), get, list, delete. */
import type { FastifyReply } from "fastify";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { ApiError } from "../apiError";
import {
  clusterParams,
  createNodeBodySchema,
  createNodeQuerySchema,
  deleteNodeResponseSchema,
  errorResponseSchema,
  listNodesQuerySchema,
  nodeListSchema,
  nodeParams,
  nodeSchema,
} from "../schemas";
import { clusterService, type ClusterServices } from "./clusterLookup";
import { errorResponses } from "./errorResponses";

/**
 * Answers with the serialisation of `value()` made by the route's own serializer (zod checks the
 * shape) once per `key`: the service hands out the same views while no claim changed, so repeated
 * polls of an unchanged fleet are not serialised again.
 */
function serializedOnce() {
  const answers = new WeakMap<object, string>();
  return (reply: FastifyReply, key: object, value: () => unknown): FastifyReply => {
    let json = answers.get(key);
    if (json === undefined) answers.set(key, (json = reply.serialize(value()) as string));
    return reply.type("application/json; charset=utf-8").send(json);
  };
}

export interface NodeRouteOptions {
  readonly clusters: ClusterServices;
  /** Asked once per committed create: true drops its answer by destroying the connection (droppedCreateAnswers.ts). */
  readonly dropCreateAnswer?: () => boolean;
}

export const nodeRoutes: FastifyPluginAsyncZod<NodeRouteOptions> = async (app, { clusters, dropCreateAnswer }) => {
  const answerNode = serializedOnce();
  const answerList = serializedOnce();
  app.post(
    "/clusters/:clusterId/nodes",
    {
      schema: {
        operationId: "createNode",
        tags: ["nodes"],
        summary: "Create a node (Karpenter Create); answers before the server exists",
        params: clusterParams,
        querystring: createNodeQuerySchema,
        body: createNodeBodySchema,
        response: {
          200: nodeSchema.describe("The node of an earlier create with the same uniqueID and body"),
          201: nodeSchema.describe("The node was accepted (status PENDING unless waitSeconds was given)"),
          ...errorResponses,
          404: errorResponseSchema.describe("PoolNotFound or ClusterNotFound"),
          409: errorResponseSchema.describe("Conflict (uniqueID reused with another body) or InsufficientCapacity"),
          413: errorResponseSchema,
          415: errorResponseSchema,
          422: errorResponseSchema.describe("NoCompatibleInstanceType"),
        },
      },
    },
    async (request, reply) => {
      const service = clusterService(clusters, request.params.clusterId);
      const { created, node } = await service.create(request.body);
      if (dropCreateAnswer?.()) {
        // Committed, never answered: the client sees its connection close (a fault knob, tests only).
        request.log.warn({ nodeID: node.nodeID }, "dropping the answer of a committed create (NODEFLEET_SIM_DROP_CREATE_ANSWERS)");
        reply.hijack();
        request.raw.socket.destroy();
        return reply;
      }
      const waitSeconds = request.query.waitSeconds ?? 0;
      if (waitSeconds > 0) {
        const claim = await service.waitForSettled(node.nodeID, waitSeconds);
        if (!claim || claim.status === "GONE") throw new ApiError("NodeNotFound", `node ${node.nodeID} was deleted while waiting`);
        if (claim.status === "FAILED" && claim.failureCode === "InsufficientCapacity") {
          throw new ApiError("InsufficientCapacity", claim.failureReason ?? "the offering is sold out", {
            nodeID: claim.nodeId,
            instanceType: claim.instanceType,
            zone: claim.zone,
          });
        }
        return reply.code(created ? 201 : 200).send(service.viewOf(claim));
      }
      return reply.code(created ? 201 : 200).send(node);
    },
  );

  app.get(
    "/clusters/:clusterId/nodes/:nodeId",
    {
      schema: {
        operationId: "getNode",
        tags: ["nodes"],
        summary: "Get a node (Karpenter Get)",
        params: nodeParams,
        response: {
          200: nodeSchema,
          ...errorResponses,
          404: errorResponseSchema.describe("NodeNotFound once the server is confirmed gone"),
        },
      },
    },
    async (request, reply) => {
      const node = await clusterService(clusters, request.params.clusterId).get(request.params.nodeId);
      return answerNode(reply, node, () => node);
    },
  );

  app.get(
    "/clusters/:clusterId/nodes",
    {
      schema: {
        operationId: "listNodes",
        tags: ["nodes"],
        summary: "List the nodes of the autoscaled pools not yet confirmed gone (Karpenter List)",
        params: clusterParams,
        querystring: listNodesQuerySchema,
        response: { 200: nodeListSchema, ...errorResponses },
      },
    },
    async (request, reply) => {
      const nodes = await clusterService(clusters, request.params.clusterId).list(request.query.pool);
      return answerList(reply, nodes, () => ({ nodes }));
    },
  );

  app.delete(
    "/clusters/:clusterId/nodes/:nodeId",
    {
      schema: {
        operationId: "deleteNode",
        tags: ["nodes"],
        summary: "Delete a node (Karpenter Delete); repeats while terminating start no new engine run",
        params: nodeParams,
        response: {
          202: deleteNodeResponseSchema,
          ...errorResponses,
          404: errorResponseSchema.describe("NodeNotFound once the server is confirmed gone"),
        },
      },
    },
    async (request, reply) => reply.code(202).send(await clusterService(clusters, request.params.clusterId).delete(request.params.nodeId)),
  );
};
