/**
 * The local cloud's SSH key: what a user uploads to their Hetzner project before naming it in a
 * pool's `sshKeys`. `local up` uploads one through the fake Hetzner API, as that user would, so the
 * local stack's servers are created with a key (no root password e-mailed, in reality) and the
 * hcloud provider's look-up of a key by name runs against the fake too. Nobody logs in to the fake
 * machines: the private half is never kept.
 */
import { execFileSync } from "node:child_process";
import { generateKeyPairSync } from "node:crypto";
import { existsSync, readFileSync, rmSync } from "node:fs";
import { sshWireString } from "../../components/shared/sshWireString";
import type { HcloudClient } from "../hcloud/hcloudClient";

/** The key's name in the fake project, as the local stack's pools name it. */
export const LOCAL_SSH_KEY = "local";

/** An OpenSSH `ssh-ed25519` public key line for a fresh key pair. */
export function freshEd25519PublicKey(comment: string): string {
  const raw = Buffer.from(generateKeyPairSync("ed25519").publicKey.export({ format: "jwk" }).x!, "base64url");
  return `ssh-ed25519 ${Buffer.concat([sshWireString("ssh-ed25519"), sshWireString(raw)]).toString("base64")} ${comment}`;
}

/** Uploads the local key through `client` (the fake Hetzner API) unless a key of its name is there already (a restart). */
export async function ensureLocalSshKey(client: HcloudClient): Promise<void> {
  if (await client.findSshKey(LOCAL_SSH_KEY)) return;
  await client.createSshKey(LOCAL_SSH_KEY, freshEd25519PublicKey("nodefleet-local"));
}

/**
 * The local bare-metal pools' key (the Elastic Metal pool's here): unlike the Hetzner one, its
 * private half is kept (0600, in the local cloud's directory), since the pool logs in to the
 * machines over SSH. Generated once
 * with ssh-keygen; its public half is uploaded to the fake Scaleway project's IAM as `local`
 * unless a key of that name and text is there. Returns the key's IAM id and private half.
 */
export async function ensureLocalScalewaySshKey(
  file: string,
  api: { readonly url: string; readonly secretKey: string },
): Promise<{ sshKeyId: string; privateKey: string }> {
  const { publicKey, privateKey } = localBareMetalKey(file);
  const call = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${api.url}${path}`, {
      method,
      headers: { "X-Auth-Token": api.secretKey, "Content-Type": "application/json" },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
    return (await response.json()) as { id?: string; ssh_keys?: Array<{ id: string; public_key: string }> };
  };
  const listed = await call("GET", `/iam/v1alpha1/ssh-keys?name=${LOCAL_SSH_KEY}`);
  const same = (listed.ssh_keys ?? []).find(
    (k) => k.public_key.trim().split(" ").slice(0, 2).join(" ") === publicKey.split(" ").slice(0, 2).join(" "),
  );
  const sshKeyId = same?.id ?? (await call("POST", "/iam/v1alpha1/ssh-keys", { name: LOCAL_SSH_KEY, public_key: publicKey })).id!;
  return { sshKeyId, privateKey };
}

/**
 * The SSH key pair of the local stack's bare-metal pools (Elastic Metal and Robot), generated once
 * with ssh-keygen (0600): the pools upload its public half and log in with its private half
 * (NODEFLEET_SSH_PRIVATE_KEY in the local env).
 */
export function localBareMetalKey(file: string): { privateKey: string; publicKey: string } {
  if (!existsSync(`${file}.pub`)) {
    rmSync(file, { force: true });
    execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", "nodefleet-local-bare-metal", "-f", file]);
  }
  return { privateKey: readFileSync(file, "utf8"), publicKey: readFileSync(`${file}.pub`, "utf8").trim() };
}
