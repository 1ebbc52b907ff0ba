/**
 * The generation suffix of a Hetzner Cloud server: a short hash of every input that forces Hetzner
 * to replace the server (location, image, server type, ssh keys, user data), and whether it joins the
 * private network and a spread placement group (a pool moving to public addresses, or out of
 * spread groups, rolls to new servers instead of changing the running ones). Server names are
 * unique per Hetzner project, so a replacement must carry a new name: with the suffix in both the
 * Pulumi resource name and the server name, Pulumi creates the new server before deleting the old
 * one, and the new generation gets its own bootstrap token.
 *
 * The bootstrap token itself is left out: it is random per generation, i.e. derived from it.
 */
import { canonicalHash } from "../shared/canonicalJson";

export const GENERATION_SUFFIX_LENGTH = 6;
/** Hetzner server names are RFC 1123 hostnames. */
export const MAX_SERVER_NAME_LENGTH = 63;

export interface GenerationInputs {
  readonly location: string;
  readonly image: string;
  readonly serverType: string;
  /** Order kept: Hetzner receives the list as given. */
  readonly sshKeys: readonly string[];
  /** Every non-secret input of the rendered user data (see workerUserDataInputs). */
  readonly userData: unknown;
  /** The pool's `network`. Default private, which leaves the hash as it was before the setting existed. */
  readonly network?: "private" | "public";
  /** The pool's `placement`. Default spread, likewise (Hetzner moves a server between groups only powered off). */
  readonly placement?: "spread" | "none";
  /** The pool's `publicIpv4`. Default true, which leaves the hash as it was (Hetzner changes primary IPs only powered off). */
  readonly publicIpv4?: boolean;
  /** The pool's `publicIpv6`. Default true, likewise. */
  readonly publicIpv6?: boolean;
}

/** `[a-z0-9]{6}` from the canonical hash of a value: how every server generation is named. */
export function generationHash(value: unknown): string {
  const digest = canonicalHash(value);
  return BigInt(`0x${digest.slice(0, 16)}`)
    .toString(36)
    .padStart(GENERATION_SUFFIX_LENGTH, "0")
    .slice(-GENERATION_SUFFIX_LENGTH);
}

/** `[a-z0-9]{6}`, a pure function of the replace-forcing inputs. */
export function generationSuffix(inputs: GenerationInputs): string {
  return generationHash({
    location: inputs.location,
    image: inputs.image,
    serverType: inputs.serverType,
    sshKeys: inputs.sshKeys,
    userData: inputs.userData,
    ...(inputs.network === "public" ? { network: "public" } : {}),
    ...(inputs.placement === "none" ? { placement: "none" } : {}),
    ...(inputs.publicIpv4 === false ? { publicIpv4: false } : {}),
    ...(inputs.publicIpv6 === false ? { publicIpv6: false } : {}),
  });
}

/** `<hostname>-<generation>`; fails, naming the node, when that is not a valid server name. */
export function generationServerName(hostname: string, generation: string): string {
  const name = `${hostname}-${generation}`;
  if (name.length > MAX_SERVER_NAME_LENGTH) {
    throw new Error(
      `node ${hostname}: the server name ${name} is ${name.length} characters, more than the ${MAX_SERVER_NAME_LENGTH} Hetzner allows; shorten the cluster id, pool name or node name`,
    );
  }
  return name;
}
