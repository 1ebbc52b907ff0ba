/** What the benchmarks share: their command-line options, the stack they serve, percentiles. */
import type { StackConfigValue } from "../automation/engine/stackEngine";
import { projectRoot, readStackConfigFile } from "../automation/stackConfigFile";

/** The value of `--name`, or the fallback. */
export function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1]! : fallback;
}

/** The example stack's Hetzner Cloud autoscaled pool alone, no static servers: it may use the whole network (100). */
export function benchConfig(): Record<string, StackConfigValue> {
  const config = structuredClone(readStackConfigFile("example", projectRoot()).config);
  const pools = (config["nodefleet:pools"]!.value as Array<Record<string, unknown>>).filter((p) => p.provider === "hcloud" && p.mode === "autoscaled");
  config["nodefleet:pools"] = { value: pools };
  pools.find((p) => p.name === "hel1-burst")!.limits = { maxNodes: 100 };
  return config;
}

/** The value at rank floor(p% of n) of `values` (in any order; the largest for p = 100); NaN for none. */
export function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}
