/**
 * The scale-out mode's Temporal switch: NODEFLEET_TEMPORAL_ADDRESS (`host:port` of the frontend) makes
 * `serve` carry out claims as stack-runs workflows (stackRunsWorkflow.ts), with
 * NODEFLEET_TEMPORAL_NAMESPACE, NODEFLEET_TEMPORAL_TASK_QUEUE and, for TLS, the CA and client
 * certificate files. It needs the shared database (NODEFLEET_DATABASE_URL): a worker on another
 * replica must see the claims it runs. Read, and refused when malformed, before anything starts.
 */
import * as fs from "node:fs";
import { DEFAULT_STACK_RUNS_TASK_QUEUE } from "./stackRunsContract";

export interface TemporalTls {
  /** PEM of the CA the frontend's certificate chains to (default: the system's roots). */
  readonly serverRootCa?: Buffer;
  /** mTLS: the client certificate and key (PEM), as Temporal Cloud's namespaces ask. */
  readonly clientCertificate?: { readonly crt: Buffer; readonly key: Buffer };
}

export interface TemporalSettings {
  readonly address: string;
  readonly namespace: string;
  readonly taskQueue: string;
  /** Plain gRPC when undefined. */
  readonly tls?: TemporalTls;
}

const ADDRESS = "NODEFLEET_TEMPORAL_ADDRESS";
const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$/;

function nameEnv(env: NodeJS.ProcessEnv, variable: string, fallback: string): string {
  const value = env[variable] || fallback;
  if (!NAME.test(value)) throw new Error(`${variable}: "${value}" is not a name (letters, digits, '.', '_' and '-', at most 255)`);
  return value;
}

function pemFile(variable: string, file: string): Buffer {
  try {
    return fs.readFileSync(file);
  } catch (error) {
    throw new Error(`${variable}: cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? "unreadable"}`);
  }
}

function tlsSettings(env: NodeJS.ProcessEnv): TemporalTls | undefined {
  const ca = env.NODEFLEET_TEMPORAL_TLS_CA_FILE;
  const cert = env.NODEFLEET_TEMPORAL_TLS_CERT_FILE;
  const key = env.NODEFLEET_TEMPORAL_TLS_KEY_FILE;
  if (Boolean(cert) !== Boolean(key))
    throw new Error(
      "NODEFLEET_TEMPORAL_TLS_CERT_FILE and NODEFLEET_TEMPORAL_TLS_KEY_FILE: set both (a client certificate and its key) or neither",
    );
  const tls = env.NODEFLEET_TEMPORAL_TLS === "true" || ca || cert;
  if (env.NODEFLEET_TEMPORAL_TLS && !["true", "false"].includes(env.NODEFLEET_TEMPORAL_TLS))
    throw new Error(`NODEFLEET_TEMPORAL_TLS: must be true or false, not "${env.NODEFLEET_TEMPORAL_TLS}"`);
  if (!tls) return undefined;
  return {
    ...(ca ? { serverRootCa: pemFile("NODEFLEET_TEMPORAL_TLS_CA_FILE", ca) } : {}),
    ...(cert && key
      ? {
          clientCertificate: {
            crt: pemFile("NODEFLEET_TEMPORAL_TLS_CERT_FILE", cert),
            key: pemFile("NODEFLEET_TEMPORAL_TLS_KEY_FILE", key),
          },
        }
      : {}),
  };
}

/** The settings when NODEFLEET_TEMPORAL_ADDRESS is set (undefined: runs in process, the default). */
export function temporalSettingsFromEnv(env: NodeJS.ProcessEnv): TemporalSettings | undefined {
  const address = env[ADDRESS];
  if (address === undefined || address === "") return undefined;
  const match = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/.exec(address);
  if (!match || Number(match[2]) < 1 || Number(match[2]) > 65535)
    throw new Error(`${ADDRESS}: "${address}" is not HOST:PORT (the Temporal frontend's gRPC address, such as temporal-frontend:7233)`);
  if (!env.NODEFLEET_DATABASE_URL)
    throw new Error(
      `${ADDRESS}: needs NODEFLEET_DATABASE_URL too; workers on other replicas run the claims, so the claims must be in the shared database`,
    );
  const tls = tlsSettings(env);
  return {
    address,
    namespace: nameEnv(env, "NODEFLEET_TEMPORAL_NAMESPACE", "default"),
    taskQueue: nameEnv(env, "NODEFLEET_TEMPORAL_TASK_QUEUE", DEFAULT_STACK_RUNS_TASK_QUEUE),
    ...(tls ? { tls } : {}),
  };
}
