/**
 * Size limits of the user data a cloud accepts. Checked before anything is created so that the
 * error names the node instead of surfacing as a provider error halfway through an update.
 */
import { HCLOUD_MAX_USER_DATA_BYTES } from "../fleet/hcloudLocations";

/** Throws, naming the node, when the Hetzner Cloud user data is over 32 KiB (counted in UTF-8 bytes). */
export function assertHcloudUserDataSize(nodeName: string, userData: string): void {
  const bytes = Buffer.byteLength(userData, "utf8");
  if (bytes > HCLOUD_MAX_USER_DATA_BYTES) {
    throw new Error(
      `node ${nodeName}: the rendered user data is ${bytes} bytes, more than the ${HCLOUD_MAX_USER_DATA_BYTES} bytes (32 KiB) Hetzner Cloud accepts; reduce labels, taints or pinned files`,
    );
  }
}
