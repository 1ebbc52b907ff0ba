/**
 * What the side-by-side local-cloud benchmarks (elasticMetalReady, robotReady) share: the rounds of
 * the previous release and of this checkout at each install duration, and the time from a
 * `pulumi up` to a pool's Nodes Ready.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import type { LocalCloud } from "../automation/local/localCloud";
import { runPulumi } from "../automation/local/localStack";
import { UP, isReady, poolNodes } from "../test/support/localFleet";
import { REPOSITORY_ROOT } from "../test/support/serveProcess";
import { buildRelease } from "./previousRelease";

/**
 * For each install duration, a round of the previous release (`previous`, a commit compiled from git
 * history; `none` skips it), then one of this checkout; `round` gets the release's name and root.
 */
export async function roundsAcrossReleases<R>(
  previous: string,
  installMs: readonly number[],
  round: (release: string, root: string, installMs: number) => Promise<R>,
): Promise<R[]> {
  const dir = mkdtempSync(join(tmpdir(), "nodefleet-bench-releases-"));
  const rounds: R[] = [];
  try {
    const releases: Array<[string, string]> = [];
    if (previous !== "none") {
      buildRelease(previous, join(dir, "previous"));
      releases.push(["previous", join(dir, "previous")]);
    }
    releases.push(["this", REPOSITORY_ROOT]);
    for (const ms of installMs)
      for (const [release, root] of releases) {
        process.stderr.write(`${release}, install ${ms} ms...\n`);
        rounds.push(await round(release, root, ms));
      }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return rounds;
}

/** Runs `pulumi up --stack local` in `project`: seconds until `members` Nodes of `pool` are Ready, and of the whole run. */
export async function upToReady(
  cloud: LocalCloud,
  project: string,
  pool: string,
  members: number,
  release: string,
): Promise<{ readySeconds: number; upSeconds: number }> {
  const started = performance.now();
  let readySeconds: number | undefined;
  let running = true;
  const poll = (async () => {
    while (running && readySeconds === undefined) {
      if ((await poolNodes(cloud, pool)).filter(isReady).length === members) readySeconds = (performance.now() - started) / 1000;
      else await new Promise((resolve) => setTimeout(resolve, 250));
    }
  })();
  try {
    await runPulumi(UP, project, cloud.env);
  } finally {
    running = false;
    await poll;
  }
  const upSeconds = (performance.now() - started) / 1000;
  if (readySeconds === undefined) throw new Error(`${release}: pulumi up ended without ${members} Ready ${pool} Nodes`);
  return { readySeconds, upSeconds };
}
