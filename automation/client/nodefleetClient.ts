/**
 * Typed HTTP client of the scaling API, shared by the `nodefleet nodes` commands and the tests.
 * Types come from the same zod schemas the server validates with; errors surface as
 * NodefleetApiError with the API's code.
 */
import type { z } from "zod";
import type {
  clusterSchema,
  CreateNodeBody,
  deleteNodeResponseSchema,
  instanceTypeSchema,
  NodeView,
  operationSchema,
  readinessSchema,
} from "../api/schemas";
import { fetchFailureCause } from "../../components/shared/fetchFailureCause";
import { errorMessage } from "../../components/shared/errorMessage";

export type ClusterInfo = z.infer<typeof clusterSchema>;
export type InstanceType = z.infer<typeof instanceTypeSchema>;
export type OperationView = z.infer<typeof operationSchema>;
export type DeleteNodeResponse = z.infer<typeof deleteNodeResponseSchema>;
export type ReadinessView = z.infer<typeof readinessSchema>;
export type { CreateNodeBody, NodeView };

export class NodefleetApiError extends Error {
  override readonly name = "NodefleetApiError";
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: unknown,
  ) {
    super(`${status} ${code}: ${message}`);
  }
}

/** The request never got an HTTP answer (refused, reset, DNS, timeout): names the URL and the cause. */
export class NodefleetConnectionError extends Error {
  override readonly name = "NodefleetConnectionError";
  constructor(
    readonly method: string,
    readonly url: string,
    readonly reason: string,
  ) {
    super(`${method} ${url} got no answer: ${reason}`);
  }
}

/** fetch reports every network failure as "fetch failed"; what went wrong is in its cause. */
function failureReason(error: unknown, timeoutMs: number): string {
  if (error instanceof Error && (error.name === "TimeoutError" || error.name === "AbortError")) return `no answer within ${timeoutMs} ms`;
  return fetchFailureCause(error) ?? errorMessage(error);
}

export interface ClientOptions {
  /** e.g. http://127.0.0.1:8080 */
  readonly baseUrl: string;
  readonly token?: string;
  readonly clusterId: string;
  readonly timeoutMs?: number;
}

export interface RawResponse {
  readonly status: number;
  readonly body: unknown;
  readonly headers: Headers;
}

export class NodefleetClient {
  constructor(private readonly options: ClientOptions) {}

  /** Sends a request as is (tests use it for malformed bodies and odd headers). */
  async raw(method: string, path: string, init: { body?: string; headers?: Record<string, string> } = {}): Promise<RawResponse> {
    const headers: Record<string, string> = {
      ...(this.options.token ? { authorization: `Bearer ${this.options.token}` } : {}),
      ...init.headers,
    };
    const response = await fetch(`${this.options.baseUrl}${path}`, {
      method,
      headers,
      ...(init.body !== undefined ? { body: init.body } : {}),
      signal: AbortSignal.timeout(this.options.timeoutMs ?? 150_000),
    });
    const text = await response.text();
    let body: unknown = text;
    try {
      body = text ? (JSON.parse(text) as unknown) : undefined;
    } catch {
      // not JSON (e.g. /metrics)
    }
    return { status: response.status, body, headers: response.headers };
  }

  private async call<T>(method: string, path: string, body?: unknown, expected: number[] = [200]): Promise<{ status: number; value: T }> {
    let response: RawResponse;
    try {
      response = await this.raw(method, path, {
        ...(body !== undefined ? { body: JSON.stringify(body), headers: { "content-type": "application/json" } } : {}),
      });
    } catch (error) {
      throw new NodefleetConnectionError(method, `${this.options.baseUrl}${path}`, failureReason(error, this.options.timeoutMs ?? 150_000));
    }
    if (!expected.includes(response.status)) {
      const error = (response.body as { error?: { code?: string; message?: string; details?: unknown } } | undefined)?.error;
      throw new NodefleetApiError(response.status, error?.code ?? "Unknown", error?.message ?? String(response.body), error?.details);
    }
    return { status: response.status, value: response.body as T };
  }

  private get cluster(): string {
    return `/api/v1/clusters/${encodeURIComponent(this.options.clusterId)}`;
  }

  async getCluster(): Promise<ClusterInfo> {
    return (await this.call<ClusterInfo>("GET", this.cluster)).value;
  }

  async instanceTypes(): Promise<InstanceType[]> {
    return (await this.call<{ instanceTypes: InstanceType[] }>("GET", `${this.cluster}/instance-types`)).value.instanceTypes;
  }

  /** `created` is false when the same request had been made before (200). */
  async createNode(body: CreateNodeBody, options: { waitSeconds?: number } = {}): Promise<{ created: boolean; node: NodeView }> {
    const query = options.waitSeconds !== undefined ? `?waitSeconds=${options.waitSeconds}` : "";
    const { status, value } = await this.call<NodeView>("POST", `${this.cluster}/nodes${query}`, body, [200, 201]);
    return { created: status === 201, node: value };
  }

  async getNode(nodeId: string): Promise<NodeView> {
    return (await this.call<NodeView>("GET", `${this.cluster}/nodes/${encodeURIComponent(nodeId)}`)).value;
  }

  async listNodes(pool?: string): Promise<NodeView[]> {
    const query = pool !== undefined ? `?pool=${encodeURIComponent(pool)}` : "";
    return (await this.call<{ nodes: NodeView[] }>("GET", `${this.cluster}/nodes${query}`)).value.nodes;
  }

  async deleteNode(nodeId: string): Promise<DeleteNodeResponse> {
    return (await this.call<DeleteNodeResponse>("DELETE", `${this.cluster}/nodes/${encodeURIComponent(nodeId)}`, undefined, [202])).value;
  }

  async operations(): Promise<OperationView[]> {
    return (await this.call<{ operations: OperationView[] }>("GET", `${this.cluster}/operations`)).value.operations;
  }

  async readiness(): Promise<{ status: number; body: ReadinessView }> {
    const response = await this.raw("GET", "/readyz");
    return { status: response.status, body: response.body as ReadinessView };
  }
}
