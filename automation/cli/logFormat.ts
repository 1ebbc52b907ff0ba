/**
 * How `serve` writes its log: `pretty` (one readable line per entry, for a person at a terminal)
 * or `json` (one JSON document per line, for log shippers and `jq`). The --log-format flag wins,
 * then NODEFLEET_LOG_FORMAT; otherwise a terminal gets `pretty` and anything else (a file, a pipe,
 * journald) gets `json`, so machines never have to parse prose.
 */
export const LOG_FORMATS = ["json", "pretty"] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

function isLogFormat(value: string): value is LogFormat {
  return (LOG_FORMATS as readonly string[]).includes(value);
}

/** `value` as a format, or an error naming where it came from (`--log-format`, `NODEFLEET_LOG_FORMAT`) and the choices. */
function parseLogFormat(value: string, source: string): LogFormat {
  if (isLogFormat(value)) return value;
  throw new Error(`${source} must be one of ${LOG_FORMATS.join(", ")} (got ${JSON.stringify(value)})`);
}

export function chooseLogFormat(choice: {
  readonly flag?: LogFormat;
  readonly env: NodeJS.ProcessEnv;
  readonly toTerminal: boolean;
}): LogFormat {
  if (choice.flag) return choice.flag;
  const fromEnv = choice.env.NODEFLEET_LOG_FORMAT;
  if (fromEnv !== undefined && fromEnv !== "") return parseLogFormat(fromEnv, "NODEFLEET_LOG_FORMAT");
  return choice.toTerminal ? "pretty" : "json";
}
