/**
 * For real-engine tests of the local stack's Elastic Metal pool: the skip when this machine cannot
 * run the pool's machines, and reads of the fake Scaleway API as the tests check it.
 */
import { existsSync } from "node:fs";
import type { LocalCloud } from "../../automation/local/localCloud";
import { LOCAL_ELASTIC_METAL_POOL } from "../../automation/local/localStack";
import { SSHD } from "../../automation/local/machines/openSshServer";
import { LOCAL_CLOUD_TOOLS, missingTools, skipUnlessAvailable } from "./toolchainRequirement";

type Json = Record<string, any>;

/** Skips unless OpenSSH, unshare, root and the toolchain's Scaleway and command plugins are here. */
export function skipUnlessElasticMetalMachines(context: Mocha.Context): void {
  const missing = [SSHD, "/usr/bin/ssh", "/usr/bin/unshare"].filter((tool) => !existsSync(tool));
  skipUnlessAvailable(
    context,
    missing.length ? `${missing.join(", ")} not installed (Debian: openssh-server, openssh-client, util-linux)` : undefined,
  );
  skipUnlessAvailable(context, process.getuid?.() === 0 ? undefined : "the machines' sandbox needs root (mount namespaces, port 22)");
  skipUnlessAvailable(context, missingTools(...LOCAL_CLOUD_TOOLS, "pulumi-resource-scaleway", "pulumi-resource-command"));
}

/** GETs of the local cloud's fake Scaleway API, and the pool's servers of a zone. */
export function scalewayReads(cloud: () => LocalCloud, zone: string) {
  const scw = async (path: string): Promise<Json> => {
    const { env } = cloud();
    const response = await fetch(`${env.SCW_API_URL}${path}`, { headers: { "X-Auth-Token": env.SCW_SECRET_KEY! } });
    return (await response.json()) as Json;
  };
  const metalServers = async (): Promise<Json[]> =>
    ((await scw(`/baremetal/v1/zones/${zone}/servers?page_size=50`)).servers as Json[]).filter((s) =>
      (s.tags as string[]).includes(`nodefleet.io/pool=${LOCAL_ELASTIC_METAL_POOL}`),
    );
  return { scw, metalServers };
}
