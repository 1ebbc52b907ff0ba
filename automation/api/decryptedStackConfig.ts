/**
 * The git stack's `secure:` config values for the API stack's program (the kubeconfig that mints
 * bootstrap tokens, above all). The committed stack file is read offline with its secure values
 * left out; the automation engine decrypts them through the real CLI with the stack's own secrets
 * provider, and they are handed on as secrets (never written to the API stack's files or argv).
 */
import type { ConfigMap } from "@pulumi/pulumi/automation";
import type { StackConfigValue } from "../engine/stackEngine";
import { API_TOKENS_KEY } from "./apiTokenSources";

function parsed(value: string): unknown {
  try {
    return JSON.parse(value);
  } catch {
    return value;
  }
}

/** `plain` with every secret value of `decrypted` (full keys) put in, marked secret; API tokens stay out. */
export function withDecryptedSecrets(
  plain: Readonly<Record<string, StackConfigValue>>,
  decrypted: ConfigMap,
): Record<string, StackConfigValue> {
  const out: Record<string, StackConfigValue> = { ...plain };
  for (const [key, entry] of Object.entries(decrypted)) {
    if (!entry.secret || key === API_TOKENS_KEY) continue;
    out[key] = { value: parsed(entry.value), secret: true };
  }
  return out;
}
