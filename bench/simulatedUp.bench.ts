/**
 * Time and peak memory (the engine child's max RSS) of one simulated `up` from empty for fleets of
 * 10, 100 and 1000 members. Each member is 3 resources (component, random suffix, hcloud server),
 * plus a network and a subnet. Printed as a table with the machine it ran on.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, tmpdir, totalmem } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { SimulatedEngine } from "../automation/simulated/simulatedEngine";

const SIZES = [10, 100, 1000];
const PROGRAM_MODULE = join(__dirname, "..", "test", "support", "engineTestProgram.js");

async function measure(nodes: number): Promise<{ nodes: number; resources: number; seconds: number; peakRssMiB: number; servers: number }> {
  const dataDir = mkdtempSync(join(tmpdir(), "nodefleet-bench-"));
  try {
    const engine = new SimulatedEngine({ dataDir, bootDelayMs: 0, env: {}, banner: false });
    const stack = {
      stackName: "bench",
      program: { module: PROGRAM_MODULE, args: { mode: "hcloud" } },
      config: {
        "enginetest:members": { value: Array.from({ length: nodes }, (_, i) => ({ name: `n${i}`, serverType: "cpx21" })) },
        "enginetest:subnet": { value: "10.0.0.0/20" },
      },
    };
    const started = performance.now();
    const result = await engine.up(stack);
    const seconds = (performance.now() - started) / 1000;
    if (!result.succeeded) throw new Error(`up of ${nodes} nodes failed`);
    return {
      nodes,
      resources: result.steps.length,
      seconds,
      peakRssMiB: (engine.lastRunStats("bench")?.maxRssBytes ?? NaN) / 2 ** 20,
      servers: engine.cloud.listServers().length,
    };
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const cpu = cpus();
  console.log(`simulated up from empty (SIMULATION: no cloud involved)`);
  console.log(
    `machine: ${cpu[0]?.model ?? "unknown CPU"}, ${cpu.length} cores, ${(totalmem() / 2 ** 30).toFixed(1)} GiB RAM, node ${process.version}, ${process.platform}`,
  );
  const rows = [];
  for (const nodes of SIZES) rows.push(await measure(nodes));
  console.log("");
  console.log("| nodes | resources | time (s) | child peak RSS (MiB) | servers listed |");
  console.log("| ---: | ---: | ---: | ---: | ---: |");
  for (const r of rows)
    console.log(`| ${r.nodes} | ${r.resources} | ${r.seconds.toFixed(2)} | ${r.peakRssMiB.toFixed(0)} | ${r.servers} |`);
}

main().catch((error: Error) => {
  console.error(error.message);
  process.exitCode = 1;
});
