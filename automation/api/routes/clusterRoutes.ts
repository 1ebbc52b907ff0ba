/** Cluster description, instance types and the engine-run log. */
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { clusterParams, clusterSchema, instanceTypeListSchema, operationListSchema } from "../schemas";
import { clusterService, type ClusterServices } from "./clusterLookup";
import { errorResponses } from "./errorResponses";

export const clusterRoutes: FastifyPluginAsyncZod<{ clusters: ClusterServices }> = async (app, { clusters }) => {
  app.get(
    "/clusters/:clusterId",
    {
      schema: {
        operationId: "getCluster",
        tags: ["clusters"],
        summary: "The cluster: kind, providerID scheme, autoscaled pools with limits, usage and their template's labels and taints",
        params: clusterParams,
        response: { 200: clusterSchema, ...errorResponses },
      },
    },
    async (request) => clusterService(clusters, request.params.clusterId).describe(),
  );

  app.get(
    "/clusters/:clusterId/instance-types",
    {
      schema: {
        operationId: "listInstanceTypes",
        tags: ["clusters"],
        summary: "Every server type of every autoscaled pool, unavailable ones included (Karpenter GetInstanceTypes)",
        params: clusterParams,
        response: { 200: instanceTypeListSchema, ...errorResponses },
      },
    },
    async (request) => ({ instanceTypes: await clusterService(clusters, request.params.clusterId).instanceTypes() }),
  );

  app.get(
    "/clusters/:clusterId/operations",
    {
      schema: {
        operationId: "listOperations",
        tags: ["clusters"],
        summary: "Every engine run of the cluster, newest first, persisted across restarts",
        params: clusterParams,
        response: { 200: operationListSchema, ...errorResponses },
      },
    },
    async (request) => ({ operations: await clusterService(clusters, request.params.clusterId).operationList() }),
  );
};
