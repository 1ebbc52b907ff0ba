/**
 * The scaling API's logger: pino JSON lines, synchronous (a line written before a crash is not lost),
 * at NODEFLEET_LOG_LEVEL (default info), with credentials redacted. `serve` writes to stderr; the
 * load benchmark writes the same lines to a file to measure what logging costs a request.
 */
import pino, { type Logger } from "pino";

export function serviceLogger(env: NodeJS.ProcessEnv, destination: number | string = 2): Logger {
  return pino(
    { name: "nodefleet", level: env.NODEFLEET_LOG_LEVEL ?? "info", redact: ["req.headers.authorization", "*.token", "*.kubeconfig"] },
    pino.destination(typeof destination === "number" ? destination : { dest: destination, sync: true }),
  );
}
