/**
 * The local cloud's SSH key: what a user uploads to their Hetzner project before naming it in a
 * pool's `sshKeys`. `local up` uploads one through the fake Hetzner API, as that user would, so the
 * local stack's servers are created with a key (no root password e-mailed, in reality) and the
 * hcloud provider's look-up of a key by name runs against the fake too. Nobody logs in to the fake
 * machines: the private half is never kept.
 */
import { generateKeyPairSync } from "node:crypto";
import type { HcloudClient } from "../hcloud/hcloudClient";

/** The key's name in the fake project, as the local stack's pools name it. */
export const LOCAL_SSH_KEY = "local";

/** An OpenSSH `ssh-ed25519` public key line for a fresh key pair. */
export function freshEd25519PublicKey(comment: string): string {
  const raw = Buffer.from(generateKeyPairSync("ed25519").publicKey.export({ format: "jwk" }).x!, "base64url");
  // The wire format: string "ssh-ed25519", then string <32-byte key>, each prefixed with its length.
  const field = (bytes: Buffer) => {
    const length = Buffer.alloc(4);
    length.writeUInt32BE(bytes.length);
    return Buffer.concat([length, bytes]);
  };
  return `ssh-ed25519 ${Buffer.concat([field(Buffer.from("ssh-ed25519")), field(raw)]).toString("base64")} ${comment}`;
}

/** Uploads the local key through `client` (the fake Hetzner API) unless a key of its name is there already (a restart). */
export async function ensureLocalSshKey(client: HcloudClient): Promise<void> {
  if (await client.findSshKey(LOCAL_SSH_KEY)) return;
  await client.createSshKey(LOCAL_SSH_KEY, freshEd25519PublicKey("nodefleet-local"));
}
