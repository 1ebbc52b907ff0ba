/**
 * The local cloud's SSH key: what a user uploads to their Hetzner project before naming it in a
 * pool's `sshKeys`. `local up` uploads one through the fake Hetzner API, as that user would, so the
 * local stack's servers are created with a key (no root password e-mailed, in reality) and the
 * hcloud provider's look-up of a key by name runs against the fake too. Nobody logs in to the fake
 * machines: the private half is never kept.
 */
import { generateKeyPairSync } from "node:crypto";

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

/** Uploads the local key to the fake Hetzner API at `endpoint` unless a key of its name is there already (a restart). */
export async function ensureLocalSshKey(endpoint: string, token: string): Promise<void> {
  const call = async (method: "GET" | "POST", path: string, body?: unknown) => {
    const response = await fetch(`${endpoint}${path}`, {
      method,
      headers: { Authorization: `Bearer ${token}`, ...(body ? { "Content-Type": "application/json" } : {}) },
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
    if (!response.ok) throw new Error(`${method} ${path} on the fake Hetzner API answered ${response.status}: ${await response.text()}`);
    return (await response.json()) as { ssh_keys?: unknown[] };
  };
  const existing = await call("GET", `/ssh_keys?name=${LOCAL_SSH_KEY}`);
  if ((existing.ssh_keys ?? []).length > 0) return;
  await call("POST", "/ssh_keys", { name: LOCAL_SSH_KEY, public_key: freshEd25519PublicKey("nodefleet-local") });
}
