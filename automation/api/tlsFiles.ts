/**
 * The API's TLS certificate and key, from files (NODEFLEET_TLS_CERT_FILE, NODEFLEET_TLS_KEY_FILE),
 * reloaded when they change: cert-manager and Kubernetes Secret volumes replace them in place
 * (a symlink swap), and the service keeps serving across a renewal without a restart. Changes are
 * found by polling the files' stat (it follows the symlinks) rather than fs.watch, which misses
 * replaced files; the new pair goes to Node's `server.setSecureContext`
 * (https://nodejs.org/api/tls.html#serversetsecurecontextoptions), so new connections get it and
 * open ones keep theirs. A pair that cannot be read or does not match is refused, naming the file
 * and the rule (never its content), and the last good pair stays in use.
 */
import { readFileSync, statSync } from "node:fs";
import { createSecureContext } from "node:tls";
import type { Logger } from "pino";
import { errorMessage } from "../../components/shared/errorMessage";

/** Where the certificate chain and its private key are, both PEM. */
export interface TlsFiles {
  readonly certFile: string;
  readonly keyFile: string;
}

export interface TlsPair {
  readonly cert: Buffer;
  readonly key: Buffer;
}

export class TlsFilesError extends Error {
  override readonly name = "TlsFilesError";
}

function readPem(file: string, variable: string): Buffer {
  try {
    return readFileSync(file);
  } catch (error) {
    throw new TlsFilesError(`${variable} ${file} cannot be read (${(error as NodeJS.ErrnoException).code ?? errorMessage(error)})`);
  }
}

/** Reads and checks the pair: both readable PEM, the key the certificate's. */
export function readTlsFiles(files: TlsFiles): TlsPair {
  const cert = readPem(files.certFile, "NODEFLEET_TLS_CERT_FILE");
  const key = readPem(files.keyFile, "NODEFLEET_TLS_KEY_FILE");
  try {
    createSecureContext({ cert, key });
  } catch (error) {
    // OpenSSL's reasons (e.g. "key values mismatch", "no start line") name no content.
    throw new TlsFilesError(
      `NODEFLEET_TLS_CERT_FILE ${files.certFile} and NODEFLEET_TLS_KEY_FILE ${files.keyFile} must be a PEM certificate and its private key (${errorMessage(error)})`,
    );
  }
  return { cert, key };
}

/** The variables as a pair, both or neither; undefined for plain HTTP. */
export function tlsFilesFromEnv(env: NodeJS.ProcessEnv): TlsFiles | undefined {
  const certFile = env.NODEFLEET_TLS_CERT_FILE;
  const keyFile = env.NODEFLEET_TLS_KEY_FILE;
  if (!certFile && !keyFile) return undefined;
  if (!certFile || !keyFile) {
    throw new TlsFilesError(
      "NODEFLEET_TLS_CERT_FILE and NODEFLEET_TLS_KEY_FILE must be set together (HTTPS needs the certificate and its key)",
    );
  }
  return { certFile, keyFile };
}

export interface TlsReloaderArgs {
  readonly files: TlsFiles;
  /** Installs a new pair (the HTTPS server's setSecureContext). */
  readonly apply: (pair: TlsPair) => void;
  /** How often the files' stat is compared (default 5 s). */
  readonly intervalMs?: number;
  readonly logger?: Logger;
  /** Told how each change of the files ended (the service's metrics). */
  readonly observe?: (result: "reloaded" | "refused") => void;
}

/** Polls the pair's files and applies a changed, valid pair. */
export class TlsReloader {
  private timer: NodeJS.Timeout | undefined;
  private seen: string;

  constructor(private readonly args: TlsReloaderArgs) {
    this.seen = this.fingerprint();
  }

  /** Inode, size and modification time of both files: any replacement changes one of them. */
  private fingerprint(): string {
    return [this.args.files.certFile, this.args.files.keyFile]
      .map((file) => {
        try {
          const stat = statSync(file);
          return `${stat.ino}:${stat.size}:${stat.mtimeMs}`;
        } catch {
          return "missing";
        }
      })
      .join("|");
  }

  start(): void {
    this.timer ??= setInterval(() => this.check(), this.args.intervalMs ?? 5000).unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Applies the files when they changed since the last look; a bad pair is logged and retried at the next change. */
  check(): void {
    const now = this.fingerprint();
    if (now === this.seen) return;
    this.seen = now;
    try {
      this.args.apply(readTlsFiles(this.args.files));
      this.args.logger?.info({ certFile: this.args.files.certFile }, "TLS certificate reloaded");
      this.args.observe?.("reloaded");
    } catch (error) {
      this.args.observe?.("refused");
      this.args.logger?.error({ err: errorMessage(error) }, "TLS certificate not reloaded; the previous one stays in use");
    }
  }
}
