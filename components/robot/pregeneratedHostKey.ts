/**
 * The installed system's SSH host key, known before the install runs: an Ed25519 key pair whose
 * 32-byte seed is the SHA-256 of a random secret the program keeps in the stack's state (a
 * `random.RandomPassword` of HOST_KEY_SECRET_LENGTH letters and digits, about 380 bits, one per
 * member generation; the toolchain's random plugin has no RandomBytes). The install script
 * (robotRescueInstall.ts) puts the private half in place through installimage's post-install hook;
 * the program pins the public half from the first connection on. Because the key does not come from the box, an install whose run was killed (the
 * `-install` create left pending) is found again by the next run without learning a key on first
 * use: the script sees the installed system answering with this key and installs nothing, and every
 * later command connects pinned to it (docs/operations.md, "A killed `pulumi up`").
 *
 * The private key is written in OpenSSH's own format (PROTOCOL.key in OpenSSH's source:
 * "openssh-key-v1", no cipher, one key, the private section padded to 8 bytes), which sshd reads
 * for Ed25519 host keys; the output depends on the seed and comment only, so the rendered script,
 * and with it the `-install` inputs, stay the same from run to run.
 */
import { createHash, createPrivateKey, createPublicKey } from "node:crypto";
import { sshWireString as sshString } from "../shared/sshWireString";

/** DER of a PKCS#8 Ed25519 private key up to its 32-byte seed (RFC 8410 section 7). */
const PKCS8_ED25519_PREFIX = Buffer.from("302e020100300506032b657004220420", "hex");
/** The length of the random secret the seed is hashed from. */
export const HOST_KEY_SECRET_LENGTH = 64;

export interface HostKeyPair {
  /** OpenSSH private key (`-----BEGIN OPENSSH PRIVATE KEY-----`); a secret. */
  readonly privateKey: string;
  /** `ssh-ed25519 <base64> <comment>`. */
  readonly publicKey: string;
}

/** The key pair of a random secret (at least 32 characters), with `comment` (the hostname). */
export function hostKeyPairFromSecret(secret: string, comment: string): HostKeyPair {
  if (secret.length < 32) throw new Error(`a host key secret has at least 32 characters, got ${secret.length}`);
  const seed = createHash("sha256").update("nodefleet host key\0").update(secret).digest();
  const key = createPrivateKey({ key: Buffer.concat([PKCS8_ED25519_PREFIX, seed]), format: "der", type: "pkcs8" });
  const spki = createPublicKey(key).export({ format: "der", type: "spki" });
  const publicBytes = spki.subarray(spki.length - 32);
  const publicBlob = Buffer.concat([sshString("ssh-ed25519"), sshString(publicBytes)]);
  // The check integers only tell a wrong passphrase; derived from the seed so the output is stable.
  const check = createHash("sha256").update("nodefleet host key check").update(seed).digest().subarray(0, 4);
  let section = Buffer.concat([
    check,
    check,
    sshString("ssh-ed25519"),
    sshString(publicBytes),
    sshString(Buffer.concat([seed, publicBytes])),
    sshString(comment),
  ]);
  const padding = Buffer.from(Array.from({ length: (8 - (section.length % 8)) % 8 }, (_, i) => i + 1));
  section = Buffer.concat([section, padding]);
  const body = Buffer.concat([
    Buffer.from("openssh-key-v1\0"),
    sshString("none"),
    sshString("none"),
    sshString(""),
    Buffer.from([0, 0, 0, 1]),
    sshString(publicBlob),
    sshString(section),
  ]).toString("base64");
  const lines = body.match(/.{1,70}/g) ?? [];
  return {
    privateKey: ["-----BEGIN OPENSSH PRIVATE KEY-----", ...lines, "-----END OPENSSH PRIVATE KEY-----", ""].join("\n"),
    publicKey: `ssh-ed25519 ${publicBlob.toString("base64")} ${comment}`,
  };
}
