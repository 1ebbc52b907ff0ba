/**
 * The service's Prometheus metrics, in a registry of its own (several servers can run in one
 * process, as in the tests). HTTP request counts and latencies come from fastify-metrics; these
 * are the product's: engine runs, run durations, nodes by status, reconcile queue depth, cloud API
 * requests, orphan-reclaimer decisions and launch backoffs; and the API's own: TokenReview
 * outcomes and TLS certificate reloads; bare-metal healing actions; and each served cluster's state.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import type { OperationKind } from "../store/operationLog";
import type { RunObserver } from "../reconciler/clusterReconciler";
import type { TokenReviewResult } from "./serviceAccountTokens";

export interface ClusterGaugeSource {
  readonly clusterId: string;
  /** Read from the claims, which may live in a database on the network (claimRepository.ts). */
  nodesByStatus(): Promise<Record<string, number>>;
  queueDepth(): Promise<number>;
}

/** One served cluster's state as readyz reports it, or `failed` when its stack did not start. */
export interface ClusterState {
  readonly cluster: string;
  readonly state: "starting" | "ready" | "degraded" | "failed" | "stopping";
}

export const CLUSTER_STATE_METRIC = "nodefleet_cluster_state";

export class ServiceMetrics implements RunObserver {
  readonly registry = new Registry();
  readonly engineRuns: Counter<"cluster" | "kind" | "result">;
  readonly runDuration: Histogram<"cluster" | "kind">;
  readonly cloudApiRequests: Counter<"provider" | "operation">;
  readonly orphanDecisions: Counter<"cluster" | "action">;
  readonly launchBackoffs: Counter<"cluster" | "kind" | "scope">;
  readonly tokenReviews: Counter<"result">;
  readonly tlsReloads: Counter<"result">;
  readonly remediations: Counter<"cluster" | "pool" | "action">;
  private readonly sources: ClusterGaugeSource[] = [];
  /** The served clusters' states (the service's readiness, or the front's view of its clusters); none until set. */
  clusterStates: (() => readonly ClusterState[]) | undefined;

  constructor(options: { defaultMetrics?: boolean } = {}) {
    if (options.defaultMetrics !== false) collectDefaultMetrics({ register: this.registry, prefix: "nodefleet_" });
    this.engineRuns = new Counter({
      name: "nodefleet_engine_runs_total",
      help: "Engine runs by cluster, kind (up, preview, refresh) and result",
      labelNames: ["cluster", "kind", "result"],
      registers: [this.registry],
    });
    this.runDuration = new Histogram({
      name: "nodefleet_engine_run_duration_seconds",
      help: "Duration of engine runs",
      labelNames: ["cluster", "kind"],
      buckets: [0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600],
      registers: [this.registry],
    });
    this.cloudApiRequests = new Counter({
      name: "nodefleet_cloud_api_requests_total",
      help: "Requests this service made to cloud provider APIs (Hetzner allows 3600 per hour per project)",
      labelNames: ["provider", "operation"],
      registers: [this.registry],
    });
    this.orphanDecisions = new Counter({
      name: "nodefleet_orphan_servers_total",
      help: "Orphan reclaimer decisions: servers labelled with the cluster that neither the store nor the stack knows",
      labelNames: ["cluster", "action"],
      registers: [this.registry],
    });
    this.launchBackoffs = new Counter({
      name: "nodefleet_launch_backoffs_total",
      help: "Creates that failed in a way the next would repeat (kind: soldOut, quota, image, poolLimit), backing off an offering or a whole pool (scope)",
      labelNames: ["cluster", "kind", "scope"],
      registers: [this.registry],
    });
    this.tokenReviews = new Counter({
      name: "nodefleet_api_token_reviews_total",
      help: "ServiceAccount tokens checked, by result: accepted (reviewed), cached, refused_token, refused_audience, refused_account, review_failed",
      labelNames: ["result"],
      registers: [this.registry],
    });
    this.tlsReloads = new Counter({
      name: "nodefleet_tls_reloads_total",
      help: "Changed TLS certificate files, by result: reloaded, or refused (the previous pair stays in use)",
      labelNames: ["result"],
      registers: [this.registry],
    });
    this.remediations = new Counter({
      name: "nodefleet_remediations_total",
      help: "Bare-metal healing actions on NotReady Nodes, by pool and action: ssh-reboot, sw-reset, hw-reset, recovered, failed (dry runs count what they would do)",
      labelNames: ["cluster", "pool", "action"],
      registers: [this.registry],
    });
    const sources = this.sources;
    new Gauge({
      name: "nodefleet_nodes",
      help: "Nodes of autoscaled pools by status",
      labelNames: ["cluster", "status"],
      registers: [this.registry],
      async collect() {
        const counts = await Promise.all(sources.map((source) => source.nodesByStatus()));
        this.reset();
        sources.forEach((source, i) => {
          for (const [status, count] of Object.entries(counts[i]!)) {
            if (status !== "GONE") this.set({ cluster: source.clusterId, status }, count);
          }
        });
      },
    });
    const states = () => this.clusterStates?.() ?? [];
    new Gauge({
      name: CLUSTER_STATE_METRIC,
      help: "Each served cluster's state, 1 for the current one: starting, ready, degraded (serving, saying why in readyz), failed (its stack did not start), stopping",
      labelNames: ["cluster", "state"],
      registers: [this.registry],
      collect() {
        this.reset();
        for (const { cluster, state } of states()) this.set({ cluster, state }, 1);
      },
    });
    new Gauge({
      name: "nodefleet_reconcile_queue_depth",
      help: "Claims waiting for the next engine run",
      labelNames: ["cluster"],
      registers: [this.registry],
      async collect() {
        const depths = await Promise.all(sources.map((source) => source.queueDepth()));
        this.reset();
        sources.forEach((source, i) => this.set({ cluster: source.clusterId }, depths[i]!));
      },
    });
  }

  addCluster(source: ClusterGaugeSource): void {
    this.sources.push(source);
  }

  runFinished(clusterId: string, kind: OperationKind, result: "succeeded" | "failed", durationMs: number): void {
    this.engineRuns.inc({ cluster: clusterId, kind, result });
    this.runDuration.observe({ cluster: clusterId, kind }, durationMs / 1000);
  }

  launchBackoff(clusterId: string, kind: string, scope: string): void {
    this.launchBackoffs.inc({ cluster: clusterId, kind, scope });
  }

  tokenReview(result: TokenReviewResult): void {
    this.tokenReviews.inc({ result });
  }

  remediation(clusterId: string, pool: string, action: string): void {
    this.remediations.inc({ cluster: clusterId, pool, action });
  }

  tlsReload(result: "reloaded" | "refused"): void {
    this.tlsReloads.inc({ result });
  }

  cloudRequest(provider: string, operation: string): void {
    this.cloudApiRequests.inc({ provider, operation });
  }
}
