/**
 * A throwaway PostgreSQL cluster for the store tests: initdb in a temp directory, the server on
 * 127.0.0.1 at a free port (its socket in the same directory), trust authentication, fsync off;
 * stop() shuts it down fast and removes the directory, and the runner's reaper (reapOnExit.ts)
 * stops it if the run is cut short. PostgreSQL refuses to run as root: under root the cluster
 * belongs to the `postgres` user (Debian's package makes it) or else `nobody`.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import pg from "pg";
import { trackGroup, untrackGroup } from "./processGroups";

/** Where the PostgreSQL binaries are looked for, in order (Debian installs them per major version). */
const BIN_DIRS = ["/usr/local/bin", "/usr/lib/postgresql/15/bin", "/usr/lib/postgresql/16/bin", "/usr/lib/postgresql/17/bin"];

function postgresBinDir(): string | undefined {
  return BIN_DIRS.find((dir) => fs.existsSync(path.join(dir, "initdb")) && fs.existsSync(path.join(dir, "postgres")));
}

export interface PostgresServer {
  /** A `postgres://` URL of the cluster's `postgres` database. */
  readonly url: string;
  /** A fresh database of its own, as a URL (each test suite its own, so they do not see each other's claims). */
  createDatabase(name: string): Promise<string>;
  stop(): Promise<void>;
}

/** The user the cluster runs as: this process's own, or under root an unprivileged one. */
function serverUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const passwd = fs.readFileSync("/etc/passwd", "utf8").split("\n");
  for (const name of ["postgres", "nobody"]) {
    const entry = passwd.find((line) => line.startsWith(`${name}:`));
    if (entry) {
      const [, , uid, gid] = entry.split(":");
      return { uid: Number(uid), gid: Number(gid) };
    }
  }
  throw new Error("running as root and no postgres or nobody user to run PostgreSQL as");
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

async function waitReady(url: string, server: ChildProcess, log: () => string): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (server.exitCode !== null) throw new Error(`postgres exited with ${server.exitCode}:\n${log()}`);
    const client = new pg.Client({ connectionString: url });
    try {
      await client.connect();
      await client.end();
      return;
    } catch (error) {
      await client.end().catch(() => undefined);
      if (Date.now() > deadline) throw new Error(`postgres did not accept connections in 30 s (${String(error)}):\n${log()}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

async function startPostgres(binDir: string): Promise<PostgresServer> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "nodefleet-postgres-"));
  const data = path.join(dir, "data");
  const user = serverUser();
  if (user) fs.chownSync(dir, user.uid, user.gid);
  const initdb = spawnSync(
    path.join(binDir, "initdb"),
    ["-D", data, "-U", "nodefleet", "--auth=trust", "-E", "UTF8", "--no-sync", "--no-instructions"],
    { ...(user ?? {}), encoding: "utf8" },
  );
  if (initdb.status !== 0) {
    fs.rmSync(dir, { recursive: true, force: true });
    throw new Error(`initdb failed (${initdb.status}): ${initdb.stderr}`);
  }
  const port = await freePort();
  const logFile = path.join(dir, "postgres.log");
  const out = fs.openSync(logFile, "a");
  const server = spawn(
    path.join(binDir, "postgres"),
    ["-D", data, "-p", String(port), "-k", dir, "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "max_connections=50"],
    { ...(user ?? {}), detached: true, stdio: ["ignore", out, out] },
  );
  fs.closeSync(out);
  trackGroup(server.pid!);
  const exited = new Promise<void>((resolve) => server.once("exit", () => resolve()));
  const log = () => (fs.existsSync(logFile) ? fs.readFileSync(logFile, "utf8") : "");
  const urlOf = (database: string) => `postgres://nodefleet@127.0.0.1:${port}/${database}`;
  const stop = async () => {
    if (server.exitCode === null && server.signalCode === null) {
      server.kill("SIGINT"); // fast shutdown
      const timer = setTimeout(() => server.kill("SIGKILL"), 10_000);
      await exited;
      clearTimeout(timer);
    }
    untrackGroup(server.pid!);
    fs.rmSync(dir, { recursive: true, force: true });
  };
  try {
    await waitReady(urlOf("postgres"), server, log);
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    url: urlOf("postgres"),
    async createDatabase(name: string): Promise<string> {
      const client = new pg.Client({ connectionString: urlOf("postgres") });
      await client.connect();
      try {
        if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`not a plain database name: ${name}`);
        await client.query(`CREATE DATABASE ${name}`);
      } finally {
        await client.end();
      }
      return urlOf(name);
    },
    stop,
  };
}

/** A throwaway cluster for one suite: started by its before hook, stopped by its after hook; fresh databases in between. */
export interface SuitePostgres {
  before(): Promise<void>;
  after(): Promise<void>;
  /** A fresh database (a unique name made from `prefix`), as a URL. */
  createDatabase(prefix: string): Promise<string>;
}

/** A suite's cluster; `runsWhat` names the suite in the error when the binaries are missing (the suite needs them). */
export function suitePostgres(runsWhat: string): SuitePostgres {
  let server: PostgresServer | undefined;
  let databases = 0;
  return {
    async before() {
      const bin = postgresBinDir();
      if (!bin) throw new Error(`PostgreSQL binaries (initdb, postgres) not found: ${runsWhat} runs against PostgreSQL`);
      server = await startPostgres(bin);
    },
    async after() {
      await server?.stop();
      server = undefined;
    },
    createDatabase(prefix: string) {
      if (!server) throw new Error("the suite's PostgreSQL cluster is not running (before() did not run or failed)");
      databases += 1;
      return server.createDatabase(`${prefix}_${databases}`);
    },
  };
}
