/**
 * The front of a service that serves several clusters: one listener, and each request under
 * /api/v1/clusters/{id} handed, in process, to that cluster's own server (its tokens, rate limit,
 * store and run queue), so one cluster's failing runs or broken stack never reach another's.
 * Probes answer for all of them (clustersReadiness.ts); /metrics merges theirs with the process's.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest, InjectOptions } from "fastify";
import { serializerCompiler, validatorCompiler } from "fastify-type-provider-zod";
import type { Logger } from "pino";
import { AggregatorRegistry, type MetricObjectWithValues, type MetricValue } from "prom-client";
import { ApiError } from "./apiError";
import { missingTokenError } from "./authPlugin";
import { clusterStates, clustersReadiness, type ClusterStatus } from "./clustersReadiness";
import { registerErrorHandling } from "./errorHandler";
import { generateOpenApiDocument } from "./openApiFile";
import { probeRoutes } from "./routes/probeRoutes";
import { httpServer, refuseWhileClosing, reloadTlsFiles, type BuildServerOptions } from "./server";
import { CLUSTER_STATE_METRIC, type ServiceMetrics } from "./serviceMetrics";

export interface FrontCluster extends ClusterStatus {
  /** Its own server (built, not listening), while serving. */
  readonly app?: FastifyInstance;
}

export interface ClusterFrontOptions {
  /** The clusters as they are now (clusterHosts.ts keeps them). */
  readonly clusters: () => readonly FrontCluster[];
  /** The front's own: the process's metrics, TLS reloads, and the clusters' states. */
  readonly metrics: ServiceMetrics;
  /** HTTPS, terminated here (the clusters' servers do not listen). */
  readonly tls?: BuildServerOptions["tls"];
  readonly logger?: Logger;
}

const CLUSTER_ROUTE = "/api/v1/clusters/:clusterId";
/** Headers of one connection, not of the request or answer: never handed on. */
const CONNECTION_HEADERS = new Set(["connection", "keep-alive", "transfer-encoding", "content-length", "upgrade", "date"]);

export async function buildClusterFront(options: ClusterFrontOptions): Promise<FastifyInstance> {
  const { metrics, logger } = options;
  const app = httpServer(options.tls ? { tls: options.tls } : {}, logger);
  if (options.tls) reloadTlsFiles(app, options.tls, logger, metrics);
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  registerErrorHandling(app);
  // Bodies pass through as bytes: each cluster's server parses and checks its own.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("*", { parseAs: "buffer" }, (_request, body, done) => done(null, body));

  const lifecycle = { closing: false };
  app.addHook("preClose", async () => {
    lifecycle.closing = true;
  });
  refuseWhileClosing(app, lifecycle);

  metrics.clusterStates = () => clusterStates(options.clusters());
  await app.register(probeRoutes, { readiness: () => clustersReadiness(options.clusters(), lifecycle.closing) });
  app.get("/metrics", { schema: { hide: true }, logLevel: "warn" }, async (_request, reply) =>
    reply.type(metrics.registry.contentType).send(await mergedMetrics(metrics, options.clusters())),
  );
  const document = await generateOpenApiDocument();
  app.get("/openapi.json", { schema: { hide: true } }, async () => document);
  const handOn = async (request: FastifyRequest<{ Params: { clusterId: string } }>, reply: FastifyReply) => {
    const target = servingCluster(options.clusters(), request.params.clusterId, request);
    const answer = await target.inject(handedOn(request));
    reply.code(answer.statusCode);
    for (const [name, value] of Object.entries(answer.headers)) {
      if (value !== undefined && !CONNECTION_HEADERS.has(name)) reply.header(name, value);
    }
    return reply.send(answer.rawPayload);
  };
  app.all(CLUSTER_ROUTE, handOn);
  app.all(`${CLUSTER_ROUTE}/*`, handOn);
  return app;
}

/** The request as the cluster's server receives it: same method, URL, headers, bytes and client address. */
function handedOn(request: FastifyRequest): InjectOptions {
  const headers = Object.fromEntries(
    Object.entries(request.headers).filter(([name, value]) => value !== undefined && !CONNECTION_HEADERS.has(name)),
  ) as Record<string, string | string[]>;
  return {
    method: request.method as NonNullable<InjectOptions["method"]>,
    url: request.url,
    headers,
    ...(Buffer.isBuffer(request.body) ? { payload: request.body } : {}),
    remoteAddress: request.ip,
  };
}

/**
 * The server of the cluster a request names. A cluster that is not serving answers 503 (Karpenter
 * retries) when it exists or may still appear, 404 when no stack declares it; both only to a
 * request that carries a token, as the cluster's own server would answer a request without one.
 */
function servingCluster(clusters: readonly FrontCluster[], clusterId: string, request: FastifyRequest): FastifyInstance {
  const named = clusters.find((cluster) => cluster.clusterId === clusterId);
  if (named?.phase === "serving" && named.app) return named.app;
  if (!request.headers.authorization) throw missingTokenError();
  if (named?.phase === "failed")
    throw new ApiError("Unavailable", `cluster ${clusterId} is not served: its stack ${named.stack} did not start (see /readyz)`);
  if (named) throw new ApiError("Unavailable", `cluster ${clusterId} is ${named.phase}; retry shortly`);
  if (clusters.some((cluster) => cluster.clusterId === undefined && cluster.phase === "starting"))
    throw new ApiError("Unavailable", "the service is still starting its clusters; retry shortly");
  throw new ApiError("ClusterNotFound", `this service does not serve cluster ${clusterId}`);
}

/**
 * The process's metrics and every serving cluster's, merged by family (counters and histograms
 * summed over equal labels, so request counts cover all clusters). Each cluster's own state is
 * left out: the front reports every cluster's, failed ones included.
 */
async function mergedMetrics(metrics: ServiceMetrics, clusters: readonly FrontCluster[]): Promise<string> {
  const own = await metrics.registry.getMetricsAsJSON();
  const served = await Promise.all(
    clusters.flatMap((cluster) =>
      cluster.phase === "serving" && cluster.app ? [cluster.app.nodefleet.metrics.registry.getMetricsAsJSON()] : [],
    ),
  );
  const withoutOwnState = served.map((families) =>
    families.filter((family) => family.name !== CLUSTER_STATE_METRIC),
  ) as MetricObjectWithValues<MetricValue<string>>[][];
  return AggregatorRegistry.aggregate([own as MetricObjectWithValues<MetricValue<string>>[], ...withoutOwnState]).metrics();
}
