/**
 * Runs every compiled benchmark (dist/bench/*.bench.js) in turn, each in its own process so one
 * benchmark's memory does not skew the next. `npm run bench` builds first.
 */
import { spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { join } from "node:path";

const benches = readdirSync(__dirname)
  .filter((f) => f.endsWith(".bench.js"))
  .sort();
let failed = 0;
for (const file of benches) {
  process.stdout.write(`\n=== ${file} ===\n`);
  const result = spawnSync(process.execPath, [join(__dirname, file)], { stdio: "inherit" });
  if (result.status !== 0) {
    failed += 1;
    process.stdout.write(`${file} failed (exit ${result.status ?? result.signal})\n`);
  }
}
process.exitCode = failed > 0 ? 1 : 0;
