/**
 * For real-engine tests of the local stack's Elastic Metal pool: the skip (or, under
 * NODEFLEET_REQUIRE_TOOLCHAIN=1, the failure) when its machines cannot run here, the local cloud
 * with the pool, and reads of the fake Scaleway API and the pool's Nodes.
 */
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { type LocalCloud, startLocalCloud } from "../../automation/local/localCloud";
import { LOCAL_ELASTIC_METAL_POOL } from "../../automation/local/localStack";
import { SSHD } from "../../automation/local/machines/openSshServer";
import { type PoolNode, isReady, poolNodes } from "./localFleet";
import { LOCAL_CLOUD_TOOLS, missingTools, skipUnlessAvailable } from "./toolchainRequirement";
import { until } from "./until";

type Json = Record<string, any>;

/** The local stack's Elastic Metal zone. */
export const METAL_ZONE = "fr-par-2";

/** Skips the suite unless the machines can run: OpenSSH, unshare, python3 (cloud-init's runner), root, and the Scaleway and command plugins. */
export function skipUnlessElasticMetalMachines(context: Mocha.Context): void {
  const missing = [SSHD, "/usr/bin/ssh", "/usr/bin/unshare", "/usr/bin/python3"].filter((tool) => !existsSync(tool));
  skipUnlessAvailable(
    context,
    missing.length ? `${missing.join(", ")} not installed (Debian: openssh-server, openssh-client, util-linux, python3)` : undefined,
  );
  skipUnlessAvailable(context, process.getuid?.() === 0 ? undefined : "the machines' sandbox needs root (mount namespaces, port 22)");
  skipUnlessAvailable(context, missingTools(...LOCAL_CLOUD_TOOLS, "pulumi-resource-scaleway", "pulumi-resource-command"));
}

/** The local cloud with the Elastic Metal pool in its stack, its warnings kept in `logged`. */
export function startLocalMetalCloud(dir: string, project: string, logged: string[]): Promise<LocalCloud> {
  return startLocalCloud({
    dataDir: join(dir, "data"),
    hcloudPort: 0,
    agentIntervalMs: 300,
    logger: { info() {}, warn: (_fields: unknown, message: string) => logged.push(message) },
    projectDir: project,
    elasticMetalPool: true,
  });
}

/** A request to the local cloud's fake Scaleway API; a non-2xx answer fails, naming it. */
export async function scalewayApi(cloud: LocalCloud, path: string, method = "GET", body?: unknown): Promise<Json> {
  const response = await fetch(`${cloud.env.SCW_API_URL}${path}`, {
    method,
    headers: { "X-Auth-Token": cloud.env.SCW_SECRET_KEY!, ...(body !== undefined ? { "Content-Type": "application/json" } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const json = (await response.json()) as Json;
  assert.ok(response.ok, `${method} ${path}: ${response.status} ${JSON.stringify(json)}`);
  return json;
}

/** Authenticated GET against the local cloud's fake Scaleway API. */
export function scalewayGet(cloud: LocalCloud, path: string): Promise<Json> {
  return scalewayApi(cloud, path);
}

/** The Elastic Metal servers of the zone tagged with the pool (default the local stack's). */
export async function elasticMetalPoolServers(cloud: LocalCloud, zone = METAL_ZONE, pool = LOCAL_ELASTIC_METAL_POOL): Promise<Json[]> {
  return ((await scalewayGet(cloud, `/baremetal/v1/zones/${zone}/servers?per_page=50`)).servers as Json[]).filter((s) =>
    (s.tags as string[]).includes(`nodefleet.io/pool=${pool}`),
  );
}

/** Waits (2 minutes at most) for exactly `count` Ready Nodes of the pool. */
export function readyMetalNodes(cloud: LocalCloud, count: number, logged: readonly string[]): Promise<PoolNode[]> {
  return until(
    `${count} Ready ${LOCAL_ELASTIC_METAL_POOL} Nodes`,
    async () => {
      const nodes = (await poolNodes(cloud, LOCAL_ELASTIC_METAL_POOL)).filter(isReady);
      return nodes.length === count ? nodes : undefined;
    },
    120_000,
    () => logged.join("\n"),
  );
}
