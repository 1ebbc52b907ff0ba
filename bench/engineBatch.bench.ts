/**
 * One scaling-API batch (the preview guard, then the up) on the real engine (pulumi CLI from the
 * toolchain, file backend, passphrase secrets) and on the simulated engine, side by side in one run:
 * pulumi CLI processes per batch, the fixed cost of a batch that changes nothing, and seconds for a
 * batch adding 1, 10 and 40 members (the contract tests' cloud-free stand-in servers), each once with
 * the preview guard and once with the guard skipped as an unchanged guard fingerprint lets the
 * service skip it (the stored state read and the fingerprint taken before the up, the state read
 * again after it; docs/scaling-api.md, "When the preview guard runs"). The real engine's CLI is run
 * through a counting wrapper put in front of the toolchain's.
 */
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { cpus, tmpdir, totalmem } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { AutomationEngine } from "../automation/engine/automationEngine";
import type { StackDefinition, StackEngine } from "../automation/engine/stackEngine";
import { findTool, toolchainBinDir } from "../automation/engine/toolchain";
import { guardFingerprint } from "../automation/reconciler/guardFingerprint";
import { SimulatedEngine } from "../automation/simulated/simulatedEngine";

const PROGRAM_MODULE = join(__dirname, "..", "test", "support", "engineTestProgram.js");
const BATCHES = [1, 10, 40];

/** A toolchain dir whose `pulumi` logs each invocation's first argument, then runs the real one. */
function countingToolchain(root: string): { env: NodeJS.ProcessEnv; invocations: () => string[] } {
  const realPulumi = findTool("pulumi");
  if (!realPulumi) throw new Error("no pulumi CLI: run `npm run toolchain` first");
  const bin = join(root, "bin");
  mkdirSync(bin, { recursive: true });
  const log = join(root, "invocations.log");
  writeFileSync(log, "");
  writeFileSync(join(bin, "pulumi"), `#!/bin/sh\necho "$1" >> '${log}'\nexec '${realPulumi}' "$@"\n`);
  chmodSync(join(bin, "pulumi"), 0o755);
  for (const name of readdirSync(toolchainBinDir())) if (name !== "pulumi") symlinkSync(join(toolchainBinDir(), name), join(bin, name));
  // Only the counting wrapper may be found: PATH loses every directory with a pulumi of its own.
  const path = (process.env.PATH ?? "")
    .split(":")
    .filter((dir) => findTool("pulumi", { PATH: dir, NODEFLEET_TOOLCHAIN_DIR: "/nonexistent" }) === undefined)
    .join(":");
  return {
    // The toolchain's plugin doubles, as on the local cloud (docs/engines.md).
    env: { ...process.env, PATH: path, NODEFLEET_TOOLCHAIN_DIR: root, PULUMI_CONFIG_PASSPHRASE: "bench", NODEFLEET_PLUGINS: "toolchain" },
    invocations: () => readFileSync(log, "utf8").split("\n").filter(Boolean),
  };
}

function stack(count: number, stackName = "bench"): StackDefinition {
  return {
    stackName,
    program: { module: PROGRAM_MODULE, args: { mode: "local" } },
    config: { "enginetest:members": { value: Array.from({ length: count }, (_, i) => ({ name: `n${i}`, serverType: "cpx21" })) } },
  };
}

/** One batch: the guard's preview and the up, or (guard skipped) the fingerprint's reads around the up alone. */
async function batch(engine: StackEngine, def: StackDefinition, guarded = true): Promise<number> {
  const started = performance.now();
  if (guarded) await engine.preview(def);
  else {
    const state = await engine.storedState?.(def);
    if (state) guardFingerprint({ stack: def, state });
  }
  const result = await engine.up(def);
  if (!guarded) await engine.storedState?.(def);
  if (!result.succeeded) throw new Error(`batch of ${def.stackName} failed`);
  return (performance.now() - started) / 1000;
}

interface Row {
  engine: string;
  batch: string;
  seconds: number;
  cliProcesses: number | string;
}

async function measure(name: "real" | "simulated"): Promise<Row[]> {
  const root = mkdtempSync(join(tmpdir(), `nodefleet-bench-${name}-`));
  try {
    const counting = name === "real" ? countingToolchain(join(root, "toolchain")) : undefined;
    const engine: StackEngine =
      name === "real"
        ? await AutomationEngine.create({ dataDir: join(root, "data"), env: counting!.env })
        : new SimulatedEngine({ dataDir: join(root, "data"), bootDelayMs: 0, env: {}, banner: false });
    const rows: Row[] = [];
    const counted = async (label: string, def: StackDefinition, guarded: boolean) => {
      const before = counting?.invocations().length ?? 0;
      const seconds = await batch(engine, def, guarded);
      const processes = counting ? counting.invocations().slice(before) : undefined;
      rows.push({ engine: name, batch: label, seconds, cliProcesses: processes ? `${processes.length} (${processes.join(" ")})` : "n/a" });
    };
    // The same batches on two stacks of the same sizes: an up's cost grows with its stack.
    for (const guarded of [true, false]) {
      const stackName = guarded ? "bench" : "bench-unguarded";
      const suffix = guarded ? "" : ", guard skipped";
      await counted(`first (empty stack)${suffix}`, stack(0, stackName), guarded);
      await counted(`no change (fixed cost)${suffix}`, stack(0, stackName), guarded);
      let members = 0;
      for (const add of BATCHES) {
        members += add;
        await counted(`+${add} members${suffix}`, stack(members, stackName), guarded);
      }
    }
    return rows;
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  process.stdout.write(
    `machine: ${cpus().length} x ${cpus()[0]?.model ?? "cpu"}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, node ${process.version}\n`,
  );
  const rows = [...(await measure("real")), ...(await measure("simulated"))];
  process.stdout.write(`${"engine".padEnd(10)} ${"batch".padEnd(40)} ${"seconds".padStart(8)}  cli processes\n`);
  for (const r of rows)
    process.stdout.write(`${r.engine.padEnd(10)} ${r.batch.padEnd(40)} ${r.seconds.toFixed(2).padStart(8)}  ${r.cliProcesses}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
