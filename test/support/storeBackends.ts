/**
 * The two homes of the claims and the engine runs, for suites that run through the scaling API on
 * both: the embedded SQLite store of the data directory, and PostgreSQL (a throwaway cluster on
 * loopback, postgresServer.ts, one database per service started; postgresStores.ts). A suite calls
 * `hooks()` inside its describe and starts its services with `startApi` instead of startTestApi.
 */
import { openPostgresStores } from "../../automation/store/postgresStores";
import { startTestApi, type TestApi } from "./apiHarness";
import { suitePostgres } from "./postgresServer";

type ApiOptions = NonNullable<Parameters<typeof startTestApi>[0]>;

export interface StoreBackend {
  readonly name: string;
  /** Registers the suite's before and after hooks (the PostgreSQL cluster's start and stop). */
  hooks(): void;
  /** startTestApi on this backend: a fresh database, or the one `again` used (a restart on the same data). */
  startApi(options?: ApiOptions, again?: TestApi): Promise<TestApi>;
}

const sqlite: StoreBackend = {
  name: "SQLite",
  hooks: () => undefined,
  startApi: (options = {}) => startTestApi(options),
};

function postgres(): StoreBackend {
  const cluster = suitePostgres("this suite");
  const urls = new WeakMap<TestApi, string>();
  return {
    name: "PostgreSQL",
    hooks() {
      before(async function () {
        this.timeout(60_000);
        await cluster.before();
      });
      after(() => cluster.after());
    },
    async startApi(options = {}, again) {
      const url = (again && urls.get(again)) ?? (await cluster.createDatabase("service"));
      const api = await startTestApi({ ...options, shared: await openPostgresStores({ connectionString: url }) });
      urls.set(api, url);
      return api;
    },
  };
}

export function storeBackends(): StoreBackend[] {
  return [sqlite, postgres()];
}
