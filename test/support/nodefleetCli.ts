/**
 * Runs `node bin/nodefleet.js ARGS` from the repository's root to its end, collecting stdout and
 * stderr: the CLI exactly as a user runs it. The environment is this process's, with `env` on top
 * (an empty string there stands for "unset" to code that treats empty as missing).
 */
import { spawn } from "node:child_process";
import { BIN, REPOSITORY_ROOT } from "./serveProcess";

export interface CliResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

export function runNodefleet(
  args: readonly string[],
  env: Record<string, string> = {},
  options: { readonly timeoutMs?: number; /** Default: the repository's root. */ readonly cwd?: string } = {},
): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      cwd: options.cwd ?? REPOSITORY_ROOT,
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`nodefleet ${args.join(" ")} did not exit within ${options.timeoutMs ?? 60_000} ms:\n${stderr}`));
    }, options.timeoutMs ?? 60_000);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}
