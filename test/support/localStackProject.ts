/**
 * For end-to-end tests on the local cloud: a throw-away Pulumi project with this repository's
 * settings and its compiled program (so the local stack file lands in a temporary folder, never in
 * the working copy), the real CLI run in it, and polling with a deadline.
 */
import { spawn } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "yaml";
import { findTool } from "../../automation/engine/toolchain";
import { REPOSITORY_ROOT } from "./serveProcess";

/** Creates `<dir>` as a project whose program is `dist/stacks/index.js` of this repository. */
export function localStackProject(dir: string): string {
  mkdirSync(join(dir, "stacks"), { recursive: true });
  const settings = parse(readFileSync(join(REPOSITORY_ROOT, "Pulumi.yaml"), "utf8")) as Record<string, unknown>;
  writeFileSync(join(dir, "Pulumi.yaml"), JSON.stringify({ ...settings, runtime: "nodejs", main: join(REPOSITORY_ROOT, "dist", "stacks", "index.js") }));
  return dir;
}

/** Runs the toolchain's pulumi CLI; resolves with its output, rejects with the output's tail. */
export function runPulumi(args: string[], cwd: string, env: Record<string, string>): Promise<string> {
  return new Promise((done, fail) => {
    const child = spawn(findTool("pulumi", { ...process.env, ...env })!, args, { cwd, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (c: Buffer) => (out += c.toString()));
    child.stderr.on("data", (c: Buffer) => (out += c.toString()));
    child.on("exit", (code) => (code === 0 ? done(out) : fail(new Error(`pulumi ${args.join(" ")} exited ${code}:\n${out.slice(-4000)}`))));
  });
}

/** Polls `probe` until it yields a value; the error names what was awaited and adds `context()`. */
export async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs: number, context: () => string = () => "", intervalMs = 500): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${context() ? `:\n${context()}` : ""}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
