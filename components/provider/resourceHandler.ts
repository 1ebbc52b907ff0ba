/**
 * What one resource type of nodefleet's provider plugin implements, and the values it shares across
 * types: the cluster access from the provider's configuration, and the engine's secret envelope.
 */

/** What the provider was configured with. */
export interface ClusterAccess {
  /**
   * The cluster credentials: the JSON of a KubernetesCredentials (kubernetes/kubernetesApiClient.ts),
   * or "" when the kubeconfig had no usable user.
   */
  readonly credentialsJson: string;
  /** The Robot webservice credentials of a Robot pool's provider: the JSON of a RobotCredentials, or "" when not given. */
  readonly robotCredentialsJson?: string;
}

export interface CheckFailure {
  readonly property: string;
  readonly reason: string;
}

export interface ResourceHandler {
  /** Validates new inputs; failures name the property and the rule. */
  check(news: Record<string, unknown>): { inputs: Record<string, unknown>; failures: CheckFailure[] };
  /**
   * Input properties that differ, and those among them that need a new resource; `deleteBeforeReplace`:
   * the old resource is deleted before its replacement is created.
   */
  diff(
    olds: Record<string, unknown>,
    news: Record<string, unknown>,
  ): { changed: string[]; replaces: string[]; deleteBeforeReplace?: boolean };
  create(inputs: Record<string, unknown>, access: ClusterAccess): Promise<{ id: string; outs: Record<string, unknown> }>;
  update(id: string, olds: Record<string, unknown>, news: Record<string, unknown>, access: ClusterAccess): Promise<Record<string, unknown>>;
  delete(id: string, props: Record<string, unknown>, access: ClusterAccess): Promise<void>;
  /** Output properties the state keeps as secrets. */
  readonly secretOutputs?: readonly string[];
}

/** An update with nothing to do outside the state: the new inputs become the outputs. */
export async function keepNewInputs(
  _id: string,
  _olds: Record<string, unknown>,
  news: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  return news;
}

/** The access the configuration values give; absent: none. */
export function clusterAccessFromConfig(credentialsJson: string | undefined, robotCredentialsJson?: string): ClusterAccess {
  return { credentialsJson: credentialsJson ?? "", robotCredentialsJson: robotCredentialsJson ?? "" };
}

// The engine's marker for a secret value in a property struct (pulumi/sdk resource/properties.go).
const SIGNATURE_KEY = "4dabf18193072939515e22adb298388d";
const SECRET_SIGNATURE = "1b47061264138c4ac30d75fd1eb44270";

/** The value with every secret envelope replaced by what it holds. */
export function revealSecrets(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(revealSecrets);
  if (value === null || typeof value !== "object") return value;
  const record = value as Record<string, unknown>;
  if (record[SIGNATURE_KEY] === SECRET_SIGNATURE) return revealSecrets(record.value);
  return Object.fromEntries(Object.entries(record).map(([key, inner]) => [key, revealSecrets(inner)]));
}

/** `outs` with the named properties in secret envelopes, so the state encrypts them. */
export function wrapSecretOutputs(outs: Record<string, unknown>, secret: readonly string[] = []): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(outs).map(([key, value]) => [key, secret.includes(key) ? { [SIGNATURE_KEY]: SECRET_SIGNATURE, value } : value]),
  );
}

/** The properties whose values differ between `olds` and `news`, among `keys`. */
export function changedKeys(olds: Record<string, unknown>, news: Record<string, unknown>, keys: readonly string[]): string[] {
  return keys.filter((key) => JSON.stringify(olds[key] ?? null) !== JSON.stringify(news[key] ?? null));
}
