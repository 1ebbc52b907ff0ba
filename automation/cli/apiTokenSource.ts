/**
 * Which API token `nodefleet nodes` sends, and where it came from: --token, then
 * NODEFLEET_API_TOKEN, then the token `serve` generated in --data-dir (or, for a service with
 * several stacks, in that stack's own directory, `<data-dir>/<stack>`). The source is kept beside
 * the token so that a refused token (401) can be reported by where it came from, the one thing the
 * user needs to fix it, without ever printing the token itself.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { generatedTokenPath } from "./stackService";

export interface ApiToken {
  readonly token: string;
  /** For people: `--token`, `NODEFLEET_API_TOKEN` or `the token file <path>`. Never the token. */
  readonly source: string;
}

export function resolveApiToken(
  options: { readonly token?: string; readonly dataDir: string; readonly stack?: string },
  env: NodeJS.ProcessEnv,
): ApiToken {
  if (options.token) return { token: options.token, source: "--token" };
  if (env.NODEFLEET_API_TOKEN) return { token: env.NODEFLEET_API_TOKEN, source: "NODEFLEET_API_TOKEN" };
  const file = generatedTokenPath(options.dataDir);
  const files = [file, ...(options.stack ? [generatedTokenPath(path.join(options.dataDir, options.stack))] : [])];
  for (const candidate of files) {
    const generated = fs.existsSync(candidate) ? fs.readFileSync(candidate, "utf8").trim() : "";
    if (generated) return { token: generated, source: `the token file ${candidate}` };
  }
  throw new Error(
    `no API token: pass --token, set NODEFLEET_API_TOKEN, or run serve with this --data-dir (it keeps a generated token in ${file})`,
  );
}
