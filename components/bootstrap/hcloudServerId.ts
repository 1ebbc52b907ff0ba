/**
 * The `hcloud://<server id>` providerID (cluster.hcloudProviderIds: hcloud): the server id exists
 * only once the server does, after its user data is fixed, so the node reads it at boot from
 * Hetzner's metadata service, as the hcloud cloud controller manager's own metadata client does
 * (github.com/hetznercloud/hcloud-go, hcloud/metadata: `<endpoint>/instance-id` under
 * http://169.254.169.254/hetzner/v1/metadata; https://docs.hetzner.cloud/reference/cloud#server-metadata).
 * The rendered bash sets `hcloud_server_id`; the kubelet flag then names `${hcloud_server_id}`.
 */
import { HCLOUD_PROVIDER_ID_FROM_METADATA } from "../fleet/naming";

/** The metadata service's instance-id document: the server's numeric id, as plain text. */
export const HCLOUD_INSTANCE_ID_URL = "http://169.254.169.254/hetzner/v1/metadata/instance-id";

/** The shell variable the discovery sets; the local cloud's user-data reader looks for it by name. */
export const HCLOUD_SERVER_ID_VARIABLE = "hcloud_server_id";

/** Whether a member's providerID is read at boot (HCLOUD_PROVIDER_ID_FROM_METADATA) rather than fixed. */
export function providerIdFromMetadata(providerID: string): boolean {
  return providerID === HCLOUD_PROVIDER_ID_FROM_METADATA;
}

/** The kubelet's providerID flag as the rendered bash expands it (inside double quotes). */
export const HCLOUD_PROVIDER_ID_FLAG = `--provider-id=hcloud://\${${HCLOUD_SERVER_ID_VARIABLE}}`;

/**
 * Bash that sets `hcloud_server_id` from the metadata service: retried while the link-local route
 * comes up, and refused unless it is a positive decimal number (anything else would register a
 * Node the controller cannot match). Uses only curl, which every script here already needs.
 */
export function renderHcloudServerIdDiscovery(): string {
  return `# The providerID hcloud://<server id>: the id is only known once the server exists, so it comes from the metadata service.
${HCLOUD_SERVER_ID_VARIABLE}="$(curl --fail --silent --show-error --retry 30 --retry-delay 2 --retry-connrefused --max-time 10 ${HCLOUD_INSTANCE_ID_URL})"
if ! [[ "$${HCLOUD_SERVER_ID_VARIABLE}" =~ ^[1-9][0-9]*$ ]]; then
  printf 'nodefleet: the metadata service gave no server id (instance-id %s), so the kubelet has no providerID\\n' "$${HCLOUD_SERVER_ID_VARIABLE}" >&2
  exit 1
fi`;
}
