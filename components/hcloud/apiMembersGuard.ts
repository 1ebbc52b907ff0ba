/**
 * Keeps a teardown of the fleet stack from pulling the shared network and firewall out from under
 * the scaling API's servers. Those servers live in the API's own stack but carry this stack's
 * firewall (Server.firewallIds) and sit in its subnet; Hetzner's provider deletes a firewall by first
 * removing it from every server, and a network by detaching them, so a plain `pulumi destroy` would
 * leave them running unfiltered and cut off from their peers. The guard is a local Command that
 * depends on the network, subnet and firewall, so a teardown deletes it before them; its delete
 * lists the autoscaled pools' servers and fails, naming them, while any exist. Nothing is protected
 * and nothing retained: with no API members the teardown removes everything (docs/operations.md).
 */
import * as command from "@pulumi/command";
import type * as hcloud from "@pulumi/hcloud";
import * as pulumi from "@pulumi/pulumi";
import type { ClusterSpec } from "../fleet/fleetSpec";
import { OWNERSHIP_LABELS } from "../fleet/nodeMember";

export interface ApiMembersGuardArgs {
  readonly cluster: Pick<ClusterSpec, "id">;
  /** The autoscaled hcloud pools' names: their servers are the scaling API's. */
  readonly autoscaledPools: readonly string[];
  /** What the API's servers use and the guard's delete must precede. */
  readonly firewall: hcloud.Firewall;
  readonly network: hcloud.Network;
  readonly subnet: hcloud.NetworkSubnet;
}

/** The label selector for the scaling API's servers of the cluster. */
function apiMembersSelector(cluster: Pick<ClusterSpec, "id">, autoscaledPools: readonly string[]): string {
  return `${OWNERSHIP_LABELS.cluster}=${cluster.id},${OWNERSHIP_LABELS.pool} in (${[...autoscaledPools].sort().join(",")})`;
}

// Run by the command plugin at delete, with node from PATH (a Pulumi Node.js program's machine has
// it). Kept free of quotes the shell would see: it travels in an environment variable.
const CHECK = `
const base = (process.env.HCLOUD_ENDPOINT || "https://api.hetzner.cloud/v1").replace(/\\/$/, "");
const selector = process.env.NODEFLEET_API_MEMBERS;
const fail = (text) => { console.error("nodefleet teardown: " + text); process.exit(1); };
if (!process.env.HCLOUD_TOKEN) fail("cannot check for the scaling API's servers (" + selector + "): set HCLOUD_TOKEN or hcloud:token");
fetch(base + "/servers?per_page=50&label_selector=" + encodeURIComponent(selector), { headers: { Authorization: "Bearer " + process.env.HCLOUD_TOKEN } })
  .then(async (response) => {
    if (!response.ok) fail("listing the scaling API's servers (" + selector + ") failed: HTTP " + response.status + " " + (await response.text()));
    const body = await response.json();
    const total = body.meta && body.meta.pagination ? body.meta.pagination.total_entries : body.servers.length;
    if (total > 0)
      fail(
        total + " server(s) of the scaling API still use this stack's firewall and network (" + body.servers.map((s) => s.name).join(", ") + "; selector " + selector + "). " +
          "Deleting them now would leave those servers without a firewall and off the private network. " +
          "Remove them through the scaling API (DELETE /clusters/{id}/nodes/{nodeId}) or drop the autoscaled pools and let the API drain them, then run the teardown again.",
      );
  })
  .catch((error) => fail("listing the scaling API's servers (" + selector + ") failed: " + error.message));
`;

export function apiMembersGuard(name: string, args: ApiMembersGuardArgs, opts: pulumi.CustomResourceOptions = {}): command.local.Command {
  const hcloudConfig = new pulumi.Config("hcloud");
  const endpoint = hcloudConfig.get("endpoint");
  const token = hcloudConfig.getSecret("token");
  return new command.local.Command(
    name,
    {
      delete: 'node -e "$NODEFLEET_API_MEMBERS_CHECK"',
      environment: {
        NODEFLEET_API_MEMBERS_CHECK: CHECK,
        NODEFLEET_API_MEMBERS: apiMembersSelector(args.cluster, args.autoscaledPools),
        // From the stack's config when given there; else the plugin inherits the caller's environment.
        ...(endpoint ? { HCLOUD_ENDPOINT: endpoint } : {}),
        ...(token ? { HCLOUD_TOKEN: token } : {}),
      },
    },
    { ...opts, dependsOn: [args.firewall, args.network, args.subnet] },
  );
}
