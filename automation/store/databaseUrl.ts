/**
 * NODEFLEET_DATABASE_URL, the scale-out mode's switch: the PostgreSQL database several replicas
 * share (postgresStores.ts), as a URL in libpq's form. It may hold a password, so its value is never
 * logged, put in an error or passed on a command line; what is said of it is its host, port and
 * database (databaseLabel).
 */
const VARIABLE = "NODEFLEET_DATABASE_URL";

/** The URL when set (undefined: the embedded store); refused, naming the variable and the rule but not the value, when malformed. */
export function databaseUrlFromEnv(env: NodeJS.ProcessEnv): string | undefined {
  const value = env[VARIABLE];
  if (value === undefined || value === "") return undefined;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new Error(
      `${VARIABLE}: not a URL; expected postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE (the value is not shown: it may hold a password)`,
    );
  }
  if (url.protocol !== "postgres:" && url.protocol !== "postgresql:")
    throw new Error(
      `${VARIABLE}: the scheme must be postgres:// or postgresql:// (PostgreSQL is the only shared database), not ${url.protocol}//`,
    );
  if (url.pathname.length <= 1) throw new Error(`${VARIABLE}: names no database; expected postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE`);
  return value;
}

/** What logs and errors say of the database: `host:port/database`, never the user or the password. */
export function databaseLabel(connectionString: string): string {
  const url = new URL(connectionString);
  return `${url.hostname || "(local socket)"}${url.port ? `:${url.port}` : ""}${url.pathname}`;
}
