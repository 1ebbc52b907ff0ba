/**
 * For real-engine tests of the local stack's Elastic Metal pool: the skip (or, under
 * NODEFLEET_REQUIRE_TOOLCHAIN=1, the failure) when its machines cannot run here, and reads of the
 * fake Scaleway API.
 */
import { existsSync } from "node:fs";
import type { LocalCloud } from "../../automation/local/localCloud";
import { LOCAL_ELASTIC_METAL_POOL } from "../../automation/local/localStack";
import { SSHD } from "../../automation/local/machines/openSshServer";
import { LOCAL_CLOUD_TOOLS, missingTools, skipUnlessAvailable } from "./toolchainRequirement";

type Json = Record<string, any>;

/** Skips the suite unless the machines can run: OpenSSH, unshare, root, and the toolchain with the Scaleway and command plugins. */
export function skipUnlessElasticMetalMachines(context: Mocha.Context): void {
  const missing = [SSHD, "/usr/bin/ssh", "/usr/bin/unshare"].filter((tool) => !existsSync(tool));
  skipUnlessAvailable(
    context,
    missing.length ? `${missing.join(", ")} not installed (Debian: openssh-server, openssh-client, util-linux)` : undefined,
  );
  skipUnlessAvailable(context, process.getuid?.() === 0 ? undefined : "the machines' sandbox needs root (mount namespaces, port 22)");
  skipUnlessAvailable(context, missingTools(...LOCAL_CLOUD_TOOLS, "pulumi-resource-scaleway", "pulumi-resource-command"));
}

/** Authenticated GET against the local cloud's fake Scaleway API. */
export async function scalewayGet(cloud: LocalCloud, path: string): Promise<Json> {
  const response = await fetch(`${cloud.env.SCW_API_URL}${path}`, { headers: { "X-Auth-Token": cloud.env.SCW_SECRET_KEY! } });
  return (await response.json()) as Json;
}

/** The Elastic Metal servers of the zone tagged with the pool (default the local stack's). */
export async function elasticMetalPoolServers(cloud: LocalCloud, zone: string, pool = LOCAL_ELASTIC_METAL_POOL): Promise<Json[]> {
  return ((await scalewayGet(cloud, `/baremetal/v1/zones/${zone}/servers?per_page=50`)).servers as Json[]).filter((s) =>
    (s.tags as string[]).includes(`nodefleet.io/pool=${pool}`),
  );
}
