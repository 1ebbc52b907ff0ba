/**
 * The Kubernetes API access of nodefleet's dynamic providers (Node removal, local PVC removal):
 * the program extracts the server and credentials from the kubeconfig (kept in state as a secret
 * JSON string), and the serialized provider's `delete` talks to the API server with Node built-ins.
 */
import { readFileSync } from "node:fs";
import type { IncomingMessage } from "node:http";
import * as pulumi from "@pulumi/pulumi";
import { parseDocument } from "yaml";

/** What the delete call needs from a kubeconfig (current context); PEM/data fields as base64 or text. */
export interface KubernetesCredentials {
  readonly server: string;
  /** PEM of the cluster CA; absent: the system trust store. */
  readonly caPem?: string;
  readonly insecureSkipTlsVerify?: boolean;
  readonly token?: string;
  readonly clientCertPem?: string;
  readonly clientKeyPem?: string;
}

interface KubeconfigDoc {
  "current-context"?: string;
  clusters?: Array<{ name: string; cluster: Record<string, unknown> }>;
  contexts?: Array<{ name: string; context: { cluster: string; user: string } }>;
  users?: Array<{ name: string; user: Record<string, unknown> }>;
}

function dataOrFile(entry: Record<string, unknown>, dataKey: string, fileKey: string): string | undefined {
  const data = entry[dataKey];
  if (typeof data === "string") return Buffer.from(data, "base64").toString("utf8");
  const file = entry[fileKey];
  return typeof file === "string" ? readFileSync(file, "utf8") : undefined;
}

/**
 * Parses without yaml's own error text, which quotes the offending line (a token, a key) verbatim;
 * only the error code and line number are reported.
 */
function parseKubeconfig(kubeconfig: string): KubeconfigDoc | null {
  const document = parseDocument(kubeconfig, { prettyErrors: false });
  const [first] = document.errors;
  if (first) {
    const line = kubeconfig.slice(0, first.pos[0]).split("\n").length;
    throw new Error(`the kubeconfig is not valid YAML (${first.code} at line ${line}; content not shown)`);
  }
  return document.toJS() as KubeconfigDoc | null;
}

/**
 * The current context's server and credentials. Token and client-certificate users are supported;
 * exec plugins and auth providers are not (they need tools the delete step cannot count on).
 * Errors never contain credential values.
 */
export function kubeconfigCredentials(kubeconfig: string): KubernetesCredentials {
  const doc = parseKubeconfig(kubeconfig);
  if (!doc || typeof doc !== "object") throw new Error("the kubeconfig is not a YAML document");
  const contextName = doc["current-context"] ?? doc.contexts?.[0]?.name;
  const context = doc.contexts?.find((c) => c.name === contextName)?.context;
  if (!context) throw new Error(`the kubeconfig has no context ${JSON.stringify(contextName ?? "")}`);
  const cluster = doc.clusters?.find((c) => c.name === context.cluster)?.cluster;
  const user = doc.users?.find((u) => u.name === context.user)?.user ?? {};
  if (!cluster || typeof cluster.server !== "string")
    throw new Error(`the kubeconfig has no server for cluster ${JSON.stringify(context.cluster)}`);
  const token =
    typeof user.token === "string"
      ? user.token
      : typeof user.tokenFile === "string"
        ? readFileSync(user.tokenFile, "utf8").trim()
        : undefined;
  const clientCertPem = dataOrFile(user, "client-certificate-data", "client-certificate");
  const clientKeyPem = dataOrFile(user, "client-key-data", "client-key");
  if (!token && !(clientCertPem && clientKeyPem)) {
    throw new Error(
      `the kubeconfig user ${JSON.stringify(context.user)} has neither a token nor a client certificate and key (exec plugins and auth providers are not supported for node removal)`,
    );
  }
  const caPem = dataOrFile(cluster, "certificate-authority-data", "certificate-authority");
  return {
    server: cluster.server,
    ...(caPem ? { caPem } : {}),
    ...(cluster["insecure-skip-tls-verify"] === true ? { insecureSkipTlsVerify: true } : {}),
    ...(token ? { token } : {}),
    ...(clientCertPem && clientKeyPem ? { clientCertPem, clientKeyPem } : {}),
  };
}

/**
 * The kubeconfig's credentials as the JSON a dynamic provider keeps in state, a secret. An unusable
 * kubeconfig yields "" and a warning starting with `warning`: declaring still succeeds, and only the
 * delete that needs the credentials fails, with the reason (never a credential).
 */
export function secretCredentialsJson(kubeconfig: pulumi.Input<string>, warning: string): pulumi.Output<string> {
  return pulumi.secret(
    pulumi.output(kubeconfig).apply((text) => {
      try {
        return JSON.stringify(kubeconfigCredentials(text));
      } catch (error) {
        void pulumi.log.warn(`${warning}: ${(error as Error).message}`);
        return "";
      }
    }),
  );
}

/**
 * One JSON request to the API server; 404 answers `undefined` (already gone). Errors start with
 * `<what> failed:` (default `<METHOD> <path>`), carry the API's message, never a credential, and
 * have the HTTP status as `status` (0 without an answer). `body` is sent as JSON with its content
 * type (e.g. `application/merge-patch+json` for a PATCH). `timeoutMs` (default 30 s) bounds a
 * request that gets no answer; a caller that must answer its own client sooner passes less.
 * Self-contained (built-ins required inside) because it runs from the serialized providers.
 */
export async function kubernetesApiRequest(
  creds: KubernetesCredentials,
  method: "GET" | "DELETE" | "POST" | "PATCH",
  path: string,
  what?: string,
  body?: { readonly contentType: string; readonly value: unknown },
  timeoutMs = 30_000,
): Promise<unknown> {
  const url = new URL(`${creds.server.replace(/\/+$/, "")}${path}`);
  const action = what ?? `${method} ${url.pathname}`;
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const transport = url.protocol === "http:" ? require("node:http") : require("node:https");
  const headers: Record<string, string> = { Accept: "application/json" };
  if (creds.token) headers.Authorization = `Bearer ${creds.token}`;
  const payload = body === undefined ? undefined : JSON.stringify(body.value);
  if (body !== undefined && payload !== undefined) {
    headers["Content-Type"] = body.contentType;
    headers["Content-Length"] = String(Buffer.byteLength(payload));
  }
  return new Promise<unknown>((resolve, reject) => {
    const request = transport.request(
      url,
      {
        method,
        headers,
        timeout: timeoutMs,
        ...(url.protocol === "https:"
          ? {
              ca: creds.caPem,
              cert: creds.clientCertPem,
              key: creds.clientKeyPem,
              rejectUnauthorized: creds.insecureSkipTlsVerify !== true,
            }
          : {}),
      },
      (response: IncomingMessage) => {
        let text = "";
        response.setEncoding("utf8");
        response.on("data", (chunk: string) => {
          text += chunk;
        });
        response.on("end", () => {
          const status = response.statusCode ?? 0;
          if (status === 404) return resolve(undefined);
          let parsed: unknown;
          try {
            parsed = text ? JSON.parse(text) : undefined;
          } catch {
            parsed = undefined;
          }
          if (status >= 200 && status < 300) return resolve(parsed);
          const reason = String((parsed as { message?: unknown } | undefined)?.message ?? "");
          reject(Object.assign(new Error(`${action} failed: HTTP ${status}${reason ? `: ${reason}` : ""}`), { status }));
        });
      },
    );
    request.on("timeout", () => request.destroy(new Error(`timed out after ${timeoutMs / 1000} s`)));
    request.on("error", (error: Error) => reject(Object.assign(new Error(`${action} failed: ${error.message}`), { status: 0 })));
    request.end(payload);
  });
}
