/**
 * The local cloud's own access to its control plane (RBAC set-up, the node agent's bootstrap and
 * Node registration): JSON over HTTPS with a client certificate or a bearer token.
 */
import { Agent, request } from "node:https";

export interface KubeIdentity {
  readonly server: string;
  readonly caPem: string;
  readonly certPem?: string;
  readonly keyPem?: string;
  readonly token?: string;
}

export class KubeApiError extends Error {
  override readonly name = "KubeApiError";
  constructor(
    readonly status: number,
    readonly reason: string,
    message: string,
  ) {
    super(message);
  }
}

type Method = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";

/**
 * One keep-alive agent for every identity: connections are pooled per identity (its certificate is
 * part of the pool's key), so a thousand machines renewing their Leases reuse a thousand TLS
 * connections instead of opening one per renewal. Idle connections are kept a minute, past the
 * agent's renewal interval and short of kube-apiserver's idle timeout; up to 16 per identity, the agent's
 * bound on requests in flight.
 */
const keepAlive = new Agent({ keepAlive: true, timeout: 60_000, maxFreeSockets: 16, scheduling: "lifo" });

/** One request; resolves the parsed JSON answer, rejects with KubeApiError on a non-2xx status. */
export function kube(
  identity: KubeIdentity,
  method: Method,
  path: string,
  body?: unknown,
  patchType = "application/merge-patch+json",
): Promise<unknown> {
  const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
  const headers: Record<string, string> = { Accept: "application/json" };
  if (identity.token) headers.Authorization = `Bearer ${identity.token}`;
  if (payload) {
    headers["Content-Type"] = method === "PATCH" ? patchType : "application/json";
    headers["Content-Length"] = String(payload.length);
  }
  const url = new URL(path, identity.server);
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method, headers, ca: identity.caPem, cert: identity.certPem, key: identity.keyPem, timeout: 30_000, agent: keepAlive },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          let parsed: unknown = undefined;
          try {
            parsed = text ? JSON.parse(text) : undefined;
          } catch {
            parsed = text;
          }
          const status = res.statusCode ?? 0;
          if (status >= 200 && status < 300) return resolve(parsed);
          const status_ = parsed as { reason?: string; message?: string } | undefined;
          reject(
            new KubeApiError(
              status,
              status_?.reason ?? "",
              `${method} ${url.pathname}: HTTP ${status}: ${status_?.message ?? text.slice(0, 200)}`,
            ),
          );
        });
      },
    );
    req.on("timeout", () => req.destroy(new Error(`${method} ${url.pathname}: timed out after 30 s`)));
    req.on("error", reject);
    if (payload) req.write(payload);
    req.end();
  });
}

/** Creates the object, or leaves the existing one alone (409 AlreadyExists). */
export async function kubeCreate(identity: KubeIdentity, path: string, object: unknown): Promise<void> {
  try {
    await kube(identity, "POST", path, object);
  } catch (error) {
    if (!(error instanceof KubeApiError && error.status === 409)) throw error;
  }
}
