/**
 * An S3-compatible server on loopback for the object-storage state tests: the toolchain's gofakes3
 * (a wrapper module in toolchain/s3), in memory, with one bucket, stopped by the test.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { freePort } from "../../automation/local/freePort";
import { findTool } from "../../automation/engine/toolchain";
import { until } from "./until";

export interface S3Server {
  /** `127.0.0.1:<port>`. */
  readonly endpoint: string;
  readonly bucket: string;
  /** The Pulumi backend URL of the bucket (and `prefix`, when given). */
  backendUrl(prefix?: string): string;
  /** The keys the bucket holds under `prefix`. */
  keys(prefix?: string): Promise<string[]>;
  stop(): Promise<void>;
}

export async function startS3Server(bucket = "nodefleet-state"): Promise<S3Server> {
  const binary = findTool("gofakes3");
  if (!binary) throw new Error("gofakes3 is not in the toolchain: run `npm run toolchain`");
  const port = await freePort();
  const endpoint = `127.0.0.1:${port}`;
  const child: ChildProcess = spawn(binary, ["-host", endpoint, "-backend", "memory", "-initialbucket", bucket, "-quiet"], {
    stdio: "ignore",
  });
  const keys = async (prefix = "") => {
    const listed = await (await fetch(`http://${endpoint}/${bucket}?list-type=2&prefix=${encodeURIComponent(prefix)}`)).text();
    return [...listed.matchAll(/<Key>([^<]+)<\/Key>/g)].map((m) => m[1]!);
  };
  await until(
    "gofakes3 to answer",
    async () => ((await keys().catch(() => undefined)) ? true : undefined),
    10_000,
    () => endpoint,
    100,
  );
  return {
    endpoint,
    bucket,
    backendUrl: (prefix = "") =>
      `s3://${bucket}${prefix ? `/${prefix}` : ""}?endpoint=${endpoint}&disableSSL=true&s3ForcePathStyle=true&region=us-east-1`,
    keys,
    stop: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGKILL");
      await exited;
    },
  };
}
