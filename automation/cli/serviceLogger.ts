/**
 * The scaling API's logger: pino, synchronous (a line written before a crash is not lost), at
 * NODEFLEET_LOG_LEVEL (default info), with credentials redacted. Its lines are JSON, or readable
 * lines for a person at a terminal (logFormat.ts decides). Redaction happens in pino, before either
 * format sees an entry, so both carry the same "[Redacted]". `serve` writes to stderr; the load
 * benchmark writes the same lines to a file to measure what logging costs a request.
 */
import { isatty } from "node:tty";
import pino, { type DestinationStream, type Logger } from "pino";
import pinoPretty from "pino-pretty";
import { chooseLogFormat, type LogFormat } from "./logFormat";

const REDACTED_PATHS = ["req.headers.authorization", "*.token", "*.kubeconfig"];

/** The file descriptor 2, or a file path (the benchmark's). */
type LogDestination = number | string;

function isTerminal(destination: LogDestination): boolean {
  return typeof destination === "number" && isatty(destination);
}

function jsonStream(destination: LogDestination): DestinationStream {
  return pino.destination(typeof destination === "number" ? destination : { dest: destination, sync: true });
}

function prettyStream(destination: LogDestination, env: NodeJS.ProcessEnv): DestinationStream {
  return pinoPretty({
    destination,
    sync: true,
    // Colours only where a person reads them, and never when NO_COLOR asks (https://no-color.org).
    colorize: isTerminal(destination) && !env.NO_COLOR,
    translateTime: "SYS:HH:MM:ss.l",
    // Every line is nodefleet's and this process's: the name, pid and host only take room.
    ignore: "pid,hostname,name",
    // One line per entry, its fields appended as JSON: grep-able, and a burst stays readable.
    singleLine: true,
  });
}

export function serviceLogger(
  env: NodeJS.ProcessEnv,
  destination: LogDestination = 2,
  options: { readonly format?: LogFormat } = {},
): Logger {
  const format = chooseLogFormat({ ...(options.format ? { flag: options.format } : {}), env, toTerminal: isTerminal(destination) });
  return pino(
    { name: "nodefleet", level: env.NODEFLEET_LOG_LEVEL ?? "info", redact: REDACTED_PATHS },
    format === "pretty" ? prettyStream(destination, env) : jsonStream(destination),
  );
}
