/**
 * The identity of a kubeconfig's current context (server, CA, client certificate or token, inline
 * `*-data` or files), for the local cloud's own requests to a control plane it did not start itself
 * in this process (`nodefleet local karpenter` against a running `nodefleet local up`).
 */
import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { parse } from "yaml";
import type { KubeIdentity } from "./kubeClient";

type Entry = Record<string, string | undefined>;

export function kubeIdentityFromKubeconfig(file: string): KubeIdentity {
  const config = parse(readFileSync(file, "utf8")) as {
    "current-context"?: string;
    contexts?: Array<{ name: string; context?: { cluster?: string; user?: string } }>;
    clusters?: Array<{ name: string; cluster?: Entry }>;
    users?: Array<{ name: string; user?: Entry }>;
  } | null;
  const context = config?.contexts?.find((c) => c.name === config["current-context"])?.context ?? config?.contexts?.[0]?.context;
  const cluster = config?.clusters?.find((c) => c.name === context?.cluster)?.cluster ?? config?.clusters?.[0]?.cluster;
  const user = config?.users?.find((u) => u.name === context?.user)?.user ?? config?.users?.[0]?.user ?? {};
  if (!cluster?.server) throw new Error(`${file} names no cluster server`);
  const base = dirname(file);
  const pem = (entry: Entry, field: string): string | undefined => {
    const inline = entry[`${field}-data`];
    if (inline) return Buffer.from(inline, "base64").toString("utf8");
    const path = entry[field];
    return path ? readFileSync(resolve(base, path), "utf8") : undefined;
  };
  const caPem = pem(cluster, "certificate-authority");
  if (!caPem) throw new Error(`${file} has no certificate authority for ${cluster.server}`);
  const certPem = pem(user, "client-certificate");
  const keyPem = pem(user, "client-key");
  return {
    server: cluster.server,
    caPem,
    ...(certPem ? { certPem } : {}),
    ...(keyPem ? { keyPem } : {}),
    ...(user.token ? { token: user.token } : {}),
  };
}
