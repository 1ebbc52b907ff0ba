/**
 * The installed nodefleet package's version, for `nodefleet --version` and the provider plugin. Read from its package.json
 * at run time, found by walking up from this file: the compiled CLI runs from dist/, the sources
 * from the repository, and an installed package from node_modules/nodefleet, each at a different depth.
 */
import * as fs from "node:fs";
import * as path from "node:path";

const PACKAGE_NAME = "nodefleet";

export function packageVersion(from: string = __dirname): string {
  for (let dir = path.resolve(from); ; dir = path.dirname(dir)) {
    const file = path.join(dir, "package.json");
    if (fs.existsSync(file)) {
      const manifest = JSON.parse(fs.readFileSync(file, "utf8")) as { name?: unknown; version?: unknown };
      if (manifest.name === PACKAGE_NAME && typeof manifest.version === "string") return manifest.version;
    }
    if (path.dirname(dir) === dir) throw new Error(`no package.json of ${PACKAGE_NAME} above ${from}`);
  }
}
