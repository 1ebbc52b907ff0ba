/**
 * Values derived from a seed instead of entropy (numbers, Hetzner-style ids, documentation
 * addresses, SSH host keys): what every deterministic mock output is built from, so the same
 * resource name always gets the same value.
 */
import { sha256Hex } from "../../components/shared/canonicalJson";

/** A number in [0, modulo) derived from the text. */
export function hashNumber(text: string, modulo: number): number {
  return parseInt(sha256Hex(text).slice(0, 12), 16) % modulo;
}

/** Hetzner-style numeric id (ids are numbers in hcloud's args, strings in `.id`). */
export function numericId(text: string): string {
  return String(1_000_000 + hashNumber(text, 90_000_000));
}

/** A public address in the documentation range 203.0.113.0/24 (RFC 5737). */
export function documentationIpv4(text: string): string {
  return `203.0.113.${1 + hashNumber(text, 254)}`;
}

/** A well-formed ed25519 public key (authorized_keys line) derived from the seed. */
export function mockEd25519HostKey(seed: string): string {
  const u32 = (n: number) => {
    const b = Buffer.alloc(4);
    b.writeUInt32BE(n);
    return b;
  };
  const key = Buffer.from(sha256Hex(seed).slice(0, 64), "hex");
  const blob = Buffer.concat([u32(11), Buffer.from("ssh-ed25519"), u32(32), key]);
  return `ssh-ed25519 ${blob.toString("base64")} root@${seed}`;
}
