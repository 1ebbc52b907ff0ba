/**
 * Deletes a member's Kubernetes Node when the member leaves its pool. The Node is named by the
 * member (not by server generation), so one of these exists per member: a server replacement
 * leaves it alone, and removing the member deletes it after the server (the server depends on it).
 *
 * A `pulumi.dynamic` resource: its provider is serialized into the state, so `delete` only uses
 * Node built-ins and the connection details the program extracted from the kubeconfig.
 */
import { readFileSync } from "node:fs";
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
  if (!cluster || typeof cluster.server !== "string") throw new Error(`the kubeconfig has no server for cluster ${JSON.stringify(context.cluster)}`);
  const token =
    typeof user.token === "string" ? user.token : typeof user.tokenFile === "string" ? readFileSync(user.tokenFile, "utf8").trim() : undefined;
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
 * DELETE /api/v1/nodes/<name>; a Node that is already gone (404) is a success. Self-contained
 * (built-ins only, required inside) because it runs from the serialized provider.
 */
export async function deleteKubernetesNode(credentialsJson: string, nodeName: string): Promise<void> {
  if (!credentialsJson) {
    throw new Error(`cannot delete Kubernetes Node ${nodeName}: no usable kubeconfig was configured when the node was declared`);
  }
  const creds = JSON.parse(credentialsJson) as KubernetesCredentials;
  const url = new URL(`${creds.server.replace(/\/+$/, "")}/api/v1/nodes/${encodeURIComponent(nodeName)}`);
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const transport = url.protocol === "http:" ? require("node:http") : require("node:https");
  const headers: Record<string, string> = { Accept: "application/json" };
  if (creds.token) headers.Authorization = `Bearer ${creds.token}`;
  await new Promise<void>((resolve, reject) => {
    const request = transport.request(
      url,
      {
        method: "DELETE",
        headers,
        timeout: 30_000,
        ...(url.protocol === "https:"
          ? {
              ca: creds.caPem,
              cert: creds.clientCertPem,
              key: creds.clientKeyPem,
              rejectUnauthorized: creds.insecureSkipTlsVerify !== true,
            }
          : {}),
      },
      (response: import("node:http").IncomingMessage) => {
        let body = "";
        response.setEncoding("utf8");
        response.on("data", (chunk: string) => {
          if (body.length < 4096) body += chunk;
        });
        response.on("end", () => {
          const status = response.statusCode ?? 0;
          if ((status >= 200 && status < 300) || status === 404) return resolve();
          let reason = "";
          try {
            reason = String((JSON.parse(body) as { message?: unknown }).message ?? "");
          } catch {
            reason = "";
          }
          reject(new Error(`deleting Kubernetes Node ${nodeName} failed: HTTP ${status}${reason ? `: ${reason}` : ""}`));
        });
      },
    );
    request.on("timeout", () => request.destroy(new Error("timed out after 30 s")));
    request.on("error", (error: Error) => reject(new Error(`deleting Kubernetes Node ${nodeName} failed: ${error.message}`)));
    request.end();
  });
}

interface NodeRemovalState {
  nodeName: string;
  credentials: string;
}

/** Exported for tests, which run its serialized form as the engine would. */
export const nodeRemovalProvider: pulumi.dynamic.ResourceProvider = {
  async create(inputs: NodeRemovalState) {
    return { id: inputs.nodeName, outs: inputs };
  },
  // New credentials are stored in place; only a different node name means another Node.
  async diff(_id: string, olds: NodeRemovalState, news: NodeRemovalState) {
    return {
      changes: olds.nodeName !== news.nodeName || olds.credentials !== news.credentials,
      replaces: olds.nodeName !== news.nodeName ? ["nodeName"] : [],
      deleteBeforeReplace: false,
    };
  },
  async update(_id: string, _olds: NodeRemovalState, news: NodeRemovalState) {
    return { outs: news };
  },
  async delete(_id: string, props: NodeRemovalState) {
    await deleteKubernetesNode(props.credentials, props.nodeName);
  },
};

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

export interface KubernetesNodeRemovalArgs {
  /** The Kubernetes Node name (the member's hostname). */
  readonly nodeName: string;
  /** Kubeconfig allowed to delete Nodes (token or client certificate users); a secret. */
  readonly kubeconfig: pulumi.Input<string>;
}

/** `pulumi-nodejs:dynamic/nodefleet:KubernetesNodeRemoval`: deleting it deletes the Node. */
export class KubernetesNodeRemoval extends pulumi.dynamic.Resource {
  constructor(name: string, args: KubernetesNodeRemovalArgs, opts?: pulumi.CustomResourceOptions) {
    const credentials = secretCredentialsJson(args.kubeconfig, `node ${args.nodeName}: its Node cannot be deleted on removal`);
    super(nodeRemovalProvider, name, { nodeName: args.nodeName, credentials }, { ...opts, additionalSecretOutputs: ["credentials"] }, "nodefleet", "KubernetesNodeRemoval");
  }
}
