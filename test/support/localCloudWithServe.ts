/**
 * The local cloud with its `local` stack applied and `nodefleet serve --engine automation` on it:
 * where the scaling API's real-engine tests start from, in one temporary directory per suite.
 */
import { rmSync } from "node:fs";
import { join } from "node:path";
import { type LocalCloud, startLocalCloud } from "../../automation/local/localCloud";
import { runPulumi } from "../../automation/local/localStack";
import { UP } from "./localFleet";
import { localStackProject } from "./localStackProject";
import { type ServeProcess, serveOnLocalCloud, stopServe } from "./serveProcess";

const quiet = { info() {}, warn() {} };

export interface LocalCloudWithServe {
  readonly project: string;
  readonly cloud: LocalCloud;
  readonly serve: ServeProcess;
}

/**
 * In `dir`: the project, the cloud (`prepare` edits it before the stack is applied; `cloudEnv`
 * adds to the environment its fakes read, a fault knob say), then serve.
 */
export async function startLocalCloudWithServe(
  dir: string,
  prepare: (cloud: LocalCloud) => void = () => {},
  cloudEnv: Record<string, string> = {},
): Promise<LocalCloudWithServe> {
  const project = localStackProject(join(dir, "project"));
  const cloud = await startLocalCloud({
    dataDir: join(dir, "data"),
    hcloudPort: 0,
    agentIntervalMs: 500,
    logger: quiet,
    projectDir: project,
    ...(Object.keys(cloudEnv).length > 0 ? { env: { ...process.env, ...cloudEnv } } : {}),
  });
  try {
    prepare(cloud);
    await runPulumi(UP, project, cloud.env);
    return { project, cloud, serve: await serveOnLocalCloud(join(dir, "serve"), cloud.env, project) };
  } catch (error) {
    await cloud.stop();
    throw error;
  }
}

/** Stops what startLocalCloudWithServe started (nothing, after a failed start) and removes `dir`. */
export async function stopLocalCloudWithServe(dir: string | undefined, started: LocalCloudWithServe | undefined): Promise<void> {
  await stopServe(started?.serve);
  await started?.cloud.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
}
