/**
 * Keeps a teardown of the fleet stack from pulling the shared network and firewall out from under
 * the scaling API's servers. Those servers live in the API's own stack but carry this stack's
 * firewall (Server.firewallIds) and sit in its subnet; Hetzner's provider deletes a firewall by first
 * removing it from every server, and a network by detaching them, so a plain `pulumi destroy` would
 * leave them running unfiltered and cut off from their peers. The guard is a local Command that
 * depends on the network, subnet and firewall, so a teardown deletes it before them; its delete
 * lists the cluster's servers outside this stack's static pools (the API's) and fails, naming them,
 * while any exist. Every fleet declares it, so dropping the autoscaled pools from the spec does not
 * delete it (and run its check) in the middle of an ordinary update. Nothing is protected and
 * nothing retained: with no API servers the teardown removes everything (docs/operations.md).
 */
import * as command from "@pulumi/command";
import type * as hcloud from "@pulumi/hcloud";
import * as pulumi from "@pulumi/pulumi";
import type { ClusterSpec } from "../fleet/fleetSpec";
import { OWNERSHIP_LABELS } from "../fleet/nodeMember";

export interface ApiMembersGuardArgs {
  readonly cluster: Pick<ClusterSpec, "id">;
  /** The static hcloud pools' names: their servers are this stack's, the cluster's others the scaling API's. */
  readonly staticPools: readonly string[];
  /** What the API's servers use and the guard's delete must precede. */
  readonly firewall: hcloud.Firewall;
  readonly network: hcloud.Network;
  readonly subnet: hcloud.NetworkSubnet;
}

/** The label selector for the cluster's servers that are not this stack's: the scaling API's. */
function apiMembersSelector(cluster: Pick<ClusterSpec, "id">, staticPools: readonly string[]): string {
  const ofCluster = `${OWNERSHIP_LABELS.cluster}=${cluster.id}`;
  return staticPools.length ? `${ofCluster},${OWNERSHIP_LABELS.pool} notin (${[...staticPools].sort().join(",")})` : ofCluster;
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
          "Remove them through the scaling API first (DELETE /clusters/{id}/nodes/{nodeId}), then run the teardown again.",
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
        NODEFLEET_API_MEMBERS: apiMembersSelector(args.cluster, args.staticPools),
        // From the stack's config when given there; else the plugin inherits the caller's environment.
        ...(endpoint ? { HCLOUD_ENDPOINT: endpoint } : {}),
        ...(token ? { HCLOUD_TOKEN: token } : {}),
      },
    },
    { ...opts, dependsOn: [args.firewall, args.network, args.subnet] },
  );
}
