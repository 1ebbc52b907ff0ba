/**
 * The MD5 fingerprint by which Robot names an SSH key (`15:28:b0:...`): MD5 of the key's wire blob,
 * colon-separated hex, as `ssh-keygen -l -E md5` prints it
 * (https://robot.hetzner.com/doc/webservice/en.html#ssh-keys).
 */
import { createHash } from "node:crypto";

/** The fingerprint of a key blob. */
export function md5FingerprintOfBlob(blob: Buffer): string {
  return createHash("md5").update(blob).digest("hex").match(/../g)!.join(":");
}

/** The fingerprint of an OpenSSH public key line (`type base64 [comment]`). */
export function md5FingerprintOfOpenSshKey(line: string): string {
  const [, base64] = line.trim().split(/\s+/);
  if (!base64 || !/^[A-Za-z0-9+/]+=*$/.test(base64)) throw new Error("not an OpenSSH public key line (type base64 [comment])");
  return md5FingerprintOfBlob(Buffer.from(base64, "base64"));
}
