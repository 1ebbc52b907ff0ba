/**
 * The keys of the `nodefleet:` config namespace, and the check that refuses any other. Pulumi hands
 * a program every key of a stack's config, known or not, and a program that reads only the keys it
 * knows would take `nodefleet:pool` (meant as `nodefleet:pools`) for a fleet with no pools and
 * plan to delete every server. So an unknown key in the namespace is an error, with the nearest
 * valid name.
 */
import { nearestName } from "../shared/nearestName";

const NODEFLEET_NAMESPACE = "nodefleet";

/**
 * Keys of the namespace that are not fleet spec input but are read elsewhere: valid in a stack's
 * config, never passed to the spec (some are secrets).
 */
export const NON_SPEC_CONFIG_KEYS: Readonly<Record<string, string>> = {
  "nodefleet:apiTokens": "the scaling API's tokens (nodefleet serve)",
  "nodefleet:sshPrivateKey": "the SSH key of the bare-metal self-join",
  "nodefleet:hrobotUser": "the Hetzner Robot webservice user",
  "nodefleet:hrobotPassword": "the Hetzner Robot webservice password",
};

/** Whether `key` is in the `nodefleet:` namespace (other namespaces, such as `hcloud:`, belong to others). */
export function isNodefleetKey(key: string): boolean {
  return key.startsWith(`${NODEFLEET_NAMESPACE}:`);
}

/**
 * One problem per key of the `nodefleet:` namespace that is neither a spec key (`specKeys`, full
 * keys such as `nodefleet:pools`) nor one of NON_SPEC_CONFIG_KEYS, naming the nearest valid key.
 */
export function unknownConfigKeyProblems(
  keys: Iterable<string>,
  specKeys: readonly string[],
): Array<{ path: PropertyKey[]; message: string }> {
  const known = [...specKeys, ...Object.keys(NON_SPEC_CONFIG_KEYS)];
  const prefix = `${NODEFLEET_NAMESPACE}:`;
  const problems: Array<{ path: PropertyKey[]; message: string }> = [];
  for (const key of keys) {
    if (!isNodefleetKey(key) || known.includes(key)) continue;
    // Compared without the namespace, which every key shares: it would make any two keys look alike.
    const nearest = nearestName(
      key.slice(prefix.length),
      known.map((k) => k.slice(prefix.length)),
    );
    const hint = nearest === undefined ? "" : ` (did you mean ${prefix}${nearest}?)`;
    problems.push({ path: [key], message: `unknown key in the ${NODEFLEET_NAMESPACE} namespace${hint}; the keys are ${known.join(", ")}` });
  }
  return problems;
}
