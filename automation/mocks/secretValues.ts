/**
 * Pulumi's mock runtime hands resource inputs over with secrets still wrapped as
 * `{ <secret signature>: <secret sig value>, value }`. These helpers find, unwrap and mask them.
 */
const SPECIAL_SIG_KEY = "4dabf18193072939515e22adb298388d";
const SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270";

export const SECRET_MASK = "[secret]";

export function isWrappedSecret(value: unknown): value is { value: unknown } {
  return typeof value === "object" && value !== null && (value as Record<string, unknown>)[SPECIAL_SIG_KEY] === SECRET_SIG;
}

/** A copy of the value with every wrapped secret replaced by `replace(secret)`. */
export function mapSecrets(value: unknown, replace: (secret: { value: unknown }) => unknown): unknown {
  if (isWrappedSecret(value)) return replace(value);
  if (Array.isArray(value)) return value.map((v) => mapSecrets(v, replace));
  if (typeof value === "object" && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, mapSecrets(v, replace)]));
  }
  return value;
}

/** Replaces every wrapped secret by its plain value (`reveal`) or by the mask. */
export function resolveSecrets(value: unknown, reveal: boolean): unknown {
  return mapSecrets(value, (secret) => (reveal ? resolveSecrets(secret.value, true) : SECRET_MASK));
}

/** True when the value holds a wrapped secret anywhere inside it. */
export function containsSecret(value: unknown): boolean {
  if (isWrappedSecret(value)) return true;
  if (Array.isArray(value)) return value.some(containsSecret);
  if (typeof value === "object" && value !== null) return Object.values(value).some(containsSecret);
  return false;
}
