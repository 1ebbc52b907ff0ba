/** Cluster description, instance types and the engine-run log. */
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { MAX_URL_LENGTH } from "../errorHandler";
import { clusterParams, clusterSchema, errorResponseSchema, instanceTypeListSchema, operationListSchema } from "../schemas";
import { clusterService, type ClusterServices } from "./clusterLookup";

const errors = {
  400: errorResponseSchema,
  401: errorResponseSchema,
  403: errorResponseSchema,
  404: errorResponseSchema,
  414: errorResponseSchema.describe(`UriTooLong: the URL is longer than ${MAX_URL_LENGTH} characters, or a path parameter longer than the service accepts`),
  429: errorResponseSchema,
  503: errorResponseSchema.describe("Unavailable: the service is shutting down or cannot write its store; retry"),
};

export const clusterRoutes: FastifyPluginAsyncZod<{ clusters: ClusterServices }> = async (app, { clusters }) => {
  app.get(
    "/clusters/:clusterId",
    {
      schema: {
        operationId: "getCluster",
        tags: ["clusters"],
        summary: "The cluster: kind, providerID scheme, autoscaled pools with limits and usage",
        params: clusterParams,
        response: { 200: clusterSchema, ...errors },
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
        response: { 200: instanceTypeListSchema, ...errors },
      },
    },
    async (request) => ({ instanceTypes: clusterService(clusters, request.params.clusterId).instanceTypes() }),
  );

  app.get(
    "/clusters/:clusterId/operations",
    {
      schema: {
        operationId: "listOperations",
        tags: ["clusters"],
        summary: "Every engine run of the cluster, newest first, persisted across restarts",
        params: clusterParams,
        response: { 200: operationListSchema, ...errors },
      },
    },
    async (request) => ({ operations: clusterService(clusters, request.params.clusterId).operationList() }),
  );
};
