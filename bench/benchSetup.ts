/** What the benchmarks share: their command-line options, the stack they serve, percentiles. */
import * as os from "node:os";
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
  const pools = (config["nodefleet:pools"]!.value as Array<Record<string, unknown>>).filter(
    (p) => p.provider === "hcloud" && p.mode === "autoscaled",
  );
  config["nodefleet:pools"] = { value: pools };
  pools.find((p) => p.name === "hel1-burst")!.limits = { maxNodes: 100 };
  return config;
}

/** The value at rank floor(p% of n) of `values` (in any order; the largest for p = 100); NaN for none. */
export function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}

/**
 * The machine's CPU time so far (every core, busy and all), from os.cpus(): two readings give how
 * many cores were busy between them (busyCores), which tells whether a load test is bound by the
 * service or by the machine it shares with its load generator.
 */
export function machineCpuTimes(): { busyMs: number; totalMs: number } {
  let busyMs = 0;
  let totalMs = 0;
  for (const { times } of os.cpus()) {
    const all = times.user + times.nice + times.sys + times.idle + times.irq;
    totalMs += all;
    busyMs += all - times.idle;
  }
  return { busyMs, totalMs };
}

/** Cores busy on average between two machineCpuTimes() readings (0 to the core count). */
export function busyCores(before: { busyMs: number; totalMs: number }, after: { busyMs: number; totalMs: number }): number {
  const total = after.totalMs - before.totalMs;
  return total > 0 ? Math.round(((after.busyMs - before.busyMs) / total) * os.cpus().length * 100) / 100 : NaN;
}

/** p50, p99 and max of latencies in ms, to 0.1 ms. */
export function quantiles(latencies: readonly number[]): { p50: number; p99: number; max: number } {
  const at = (p: number) => Math.round(percentile(latencies, p) * 10) / 10;
  return { p50: at(50), p99: at(99), max: at(100) };
}

/** CPU milliseconds per request, to a microsecond. */
export function perRequest(cpuMs: number, requests: number): number {
  return Math.round((cpuMs / Math.max(requests, 1)) * 1000) / 1000;
}
