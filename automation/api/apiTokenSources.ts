/**
 * Where the API's tokens come from (docs/design.md §5.2): NODEFLEET_API_TOKENS (`<clusterId>:<token>`
 * pairs, any cluster) and the served stack's secret config `nodefleet:apiTokens` (tokens for its own
 * cluster; several for rotation), combined. A plain (not `secure:`) value in the committed stack
 * file is refused at start, naming only its config path. Decrypting needs the pulumi CLI, so that
 * one step is injected (`ReadSecretConfig`) and the rest stays plain and testable; without it (the
 * simulated engine) the configured tokens are reported unusable and the other sources apply.
 */
import * as fs from "node:fs";
import { parse } from "yaml";
import { hashToken, parseApiTokens, type TokenEntry } from "./apiTokens";

export const API_TOKENS_KEY = "nodefleet:apiTokens";

/** A token shorter than this is refused (the same floor as NODEFLEET_API_TOKENS). */
const MIN_TOKEN_LENGTH = 16;

/** One decrypted config value as the Automation API returns it (`pulumi config --json --show-secrets`). */
export interface DecryptedConfigValue {
  /** The value; for a list, its JSON text. */
  readonly value: string;
  readonly secret?: boolean;
  /** For structured values, the parsed value (set by `pulumi config --json`). */
  readonly objectValue?: unknown;
}

/** Reads one config key of the served git stack, decrypted with the stack's own secrets provider. */
export type ReadSecretConfig = (key: string) => Promise<DecryptedConfigValue | undefined>;

/** What the stack file holds under `nodefleet:apiTokens`, judged without decrypting anything. */
export interface ConfigTokenDeclaration {
  readonly shape: "absent" | "list" | "single";
  /** How many `secure:` tokens are declared. */
  readonly secretCount: number;
  /** Config paths holding something other than a `secure:` value (never the values themselves). */
  readonly plainPaths: readonly string[];
}

function isSecure(value: unknown): boolean {
  return (
    typeof value === "object" &&
    value !== null &&
    !Array.isArray(value) &&
    Object.keys(value).length === 1 &&
    typeof (value as { secure?: unknown }).secure === "string"
  );
}

/** Classifies the raw (still encrypted) `config:` map of a stack file. */
export function declaredConfigTokens(rawConfig: Readonly<Record<string, unknown>> | undefined): ConfigTokenDeclaration {
  if (!rawConfig || !(API_TOKENS_KEY in rawConfig)) return { shape: "absent", secretCount: 0, plainPaths: [] };
  const raw = rawConfig[API_TOKENS_KEY];
  if (isSecure(raw)) return { shape: "single", secretCount: 1, plainPaths: [] };
  if (!Array.isArray(raw)) return { shape: "list", secretCount: 0, plainPaths: [API_TOKENS_KEY] };
  const plainPaths = raw.flatMap((element, index) => (isSecure(element) ? [] : [`${API_TOKENS_KEY}[${index}]`]));
  return { shape: "list", secretCount: raw.length - plainPaths.length, plainPaths };
}

/** The start-up error for plain values: which paths, and the command that stores a token as a secret. */
export function plainTokenErrors(declaration: ConfigTokenDeclaration, stackName: string): string[] {
  if (declaration.plainPaths.length === 0) return [];
  return [
    `${declaration.plainPaths.join(", ")} in stacks/Pulumi.${stackName}.yaml ${declaration.plainPaths.length === 1 ? "is not a secret" : "are not secrets"}: ` +
      `API tokens in ${API_TOKENS_KEY} must be Pulumi secrets (the stack file is committed). Replace each with ` +
      `\`pulumi config set --secret --path '${API_TOKENS_KEY}[0]' <token> --stack ${stackName}\` (index 0, 1, ... per token) and rotate any token that was committed in plain text`,
  ];
}

/** The decrypted tokens, or the problems with them (by path, never by value). */
function decryptedTokens(declaration: ConfigTokenDeclaration, decrypted: DecryptedConfigValue): { tokens: string[]; errors: string[] } {
  let values: unknown[];
  if (declaration.shape === "single") {
    values = [decrypted.value];
  } else if (Array.isArray(decrypted.objectValue)) {
    values = decrypted.objectValue;
  } else {
    try {
      const parsed: unknown = JSON.parse(decrypted.value);
      values = Array.isArray(parsed) ? parsed : [];
    } catch {
      values = [];
    }
    if (values.length === 0) return { tokens: [], errors: [`${API_TOKENS_KEY} did not decrypt to a list of tokens`] };
  }
  const tokens: string[] = [];
  const errors: string[] = [];
  values.forEach((value, index) => {
    const at = declaration.shape === "single" ? API_TOKENS_KEY : `${API_TOKENS_KEY}[${index}]`;
    if (typeof value !== "string") errors.push(`${at} must be a string token`);
    else if (value.trim().length < MIN_TOKEN_LENGTH) errors.push(`${at} must be a token of at least ${MIN_TOKEN_LENGTH} characters`);
    else tokens.push(value.trim());
  });
  return { tokens, errors };
}

export interface TokenSourceInput {
  /** The served stack's name (for messages). */
  readonly stackName: string;
  /** The served stack's cluster: `nodefleet:apiTokens` tokens belong to it. */
  readonly clusterId: string;
  /** The `config:` map of stacks/Pulumi.<stack>.yaml as written, `secure:` values still encrypted. */
  readonly rawConfig: Readonly<Record<string, unknown>> | undefined;
  /** NODEFLEET_API_TOKENS. */
  readonly envTokens: string | undefined;
  /** Whether this engine can decrypt the stack's secrets at all (false: the simulated engine). */
  readonly canDecrypt: boolean;
  /** The decrypted `nodefleet:apiTokens`, when it was read (see loadApiTokens). */
  readonly decrypted?: DecryptedConfigValue | undefined;
  /** Why reading it failed, when it did (no values in it). */
  readonly readError?: string | undefined;
}

export interface TokenSources {
  /** Hashed tokens of every source, combined. */
  readonly entries: TokenEntry[];
  /** How many came from each source (for the log line; never the tokens). */
  readonly counts: { readonly env: number; readonly stackConfig: number };
  /** Start-up must fail when there are any. */
  readonly errors: string[];
  /** For stderr: configured tokens this engine cannot use. */
  readonly notices: string[];
  /** No source yielded a token: the caller falls back to the token generated in the data directory. */
  readonly needsGeneratedToken: boolean;
}

/** Combines both sources; pure (the decrypted value is passed in). */
export function combineApiTokens(input: TokenSourceInput): TokenSources {
  const errors: string[] = [];
  const notices: string[] = [];
  let envEntries: TokenEntry[] = [];
  try {
    envEntries = parseApiTokens(input.envTokens);
  } catch (error) {
    errors.push((error as Error).message);
  }
  const declaration = declaredConfigTokens(input.rawConfig);
  errors.push(...plainTokenErrors(declaration, input.stackName));
  let configEntries: TokenEntry[] = [];
  if (declaration.shape !== "absent" && declaration.plainPaths.length === 0 && declaration.secretCount > 0) {
    if (!input.canDecrypt) {
      notices.push(
        `stacks/Pulumi.${input.stackName}.yaml sets ${API_TOKENS_KEY} (${declaration.secretCount} secret token${declaration.secretCount === 1 ? "" : "s"}), ` +
          "but secret config cannot be decrypted without the pulumi CLI (simulated engine): those tokens are not accepted; " +
          "tokens come from NODEFLEET_API_TOKENS or the token generated in the data directory",
      );
    } else if (!input.decrypted) {
      errors.push(
        `${API_TOKENS_KEY} of stack ${input.stackName} could not be read through the Automation API${input.readError ? `: ${input.readError}` : ""}`,
      );
    } else {
      const { tokens, errors: tokenErrors } = decryptedTokens(declaration, input.decrypted);
      errors.push(...tokenErrors);
      configEntries = tokens.map((token) => ({ clusterId: input.clusterId, hash: hashToken(token) }));
    }
  }
  const entries = [...envEntries, ...configEntries];
  return {
    entries,
    counts: { env: envEntries.length, stackConfig: configEntries.length },
    errors,
    notices,
    needsGeneratedToken: errors.length === 0 && entries.length === 0,
  };
}

/**
 * combineApiTokens, reading `nodefleet:apiTokens` through `readSecretConfig` first when the stack
 * declares secret tokens and the engine can decrypt. A failed read is an error that carries the
 * CLI's stderr only (its stdout could hold decrypted values).
 */
export async function loadApiTokens(
  input: Omit<TokenSourceInput, "canDecrypt" | "decrypted" | "readError">,
  readSecretConfig: ReadSecretConfig | undefined,
): Promise<TokenSources> {
  const declaration = declaredConfigTokens(input.rawConfig);
  const wanted = readSecretConfig !== undefined && declaration.secretCount > 0 && declaration.plainPaths.length === 0;
  let decrypted: DecryptedConfigValue | undefined;
  let readError: string | undefined;
  if (wanted) {
    try {
      decrypted = await readSecretConfig(API_TOKENS_KEY);
    } catch (error) {
      const stderr = (error as { commandResult?: { stderr?: unknown } }).commandResult?.stderr;
      // Never the CLI's stdout, nor a JSON parser's excerpt of it: either could hold decrypted values.
      readError =
        typeof stderr === "string"
          ? stderr.trim()
          : error instanceof SyntaxError
            ? "the pulumi CLI's output was not JSON"
            : (error as Error).message;
    }
  }
  return combineApiTokens({ ...input, canDecrypt: readSecretConfig !== undefined, decrypted, readError });
}

/** The `config:` map of a stack file as written (secure values stay encrypted). */
export function readRawStackConfig(file: string): Record<string, unknown> {
  const document = parse(fs.readFileSync(file, "utf8")) as { config?: Record<string, unknown> } | null;
  return document?.config ?? {};
}
