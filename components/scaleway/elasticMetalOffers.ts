/**
 * Which Elastic Metal offers run cloud-init, by offer name. Scaleway marks them with the `cloud-init`
 * tag in the offer list (`GET /baremetal/v1/zones/{zone}/offers`, field `tags`); the provider's
 * `getOffer` does not return tags, so the tags are recorded here. Source: the offer list recorded
 * in terraform-provider-scaleway's baremetal test cassettes (fr-par-2), and Scaleway's "With
 * cloud-init" server example (EM-I220E-NVME).
 *
 * To update: `scw baremetal offer list zone=fr-par-2 -o json | jq -r '.[] | [.name, (.tags | join(","))] | @tsv'`
 * and copy each offer's tags below. An offer missing here is treated as having no cloud-init tag.
 */
const ELASTIC_METAL_OFFER_TAGS: Readonly<Record<string, readonly string[]>> = {
  "EM-A215R-HDD": ["install-system-v2", "cloud-init", "new"],
  "EM-A610R-NVME": ["new", "install-system-v2", "cloud-init"],
  // Only its cloud-init tag is known (Scaleway's cloud-init example server uses this offer).
  "EM-I220E-NVME": ["cloud-init"],
  "EM-A116X-SSD": [],
  "EM-A315X-SSD": [],
  "EM-A410X-SSD": [],
  "EM-L101X-SATA": [],
  "EM-L105X-SATA": [],
};

/** The tag Scaleway puts on offers whose OS installer passes the server's `cloudInit` to cloud-init. */
const CLOUD_INIT_OFFER_TAG = "cloud-init";

/** Whether the offer is known to run cloud-init (its tags include `cloud-init`). */
export function offerRunsCloudInit(offer: string, tags: Readonly<Record<string, readonly string[]>> = ELASTIC_METAL_OFFER_TAGS): boolean {
  return (tags[offer] ?? []).includes(CLOUD_INIT_OFFER_TAG);
}
