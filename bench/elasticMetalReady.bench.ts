/**
 * Issue #37's benchmark: seconds from `pulumi up --stack local` to every Elastic Metal Node Ready,
 * on the local cloud (real engine, the Scaleway and command plugin doubles, machines over real
 * SSH), with the fake's install lasting `--install-ms` (default 0 and 30000), and per member the
 * SSH sessions the machines let in and the Scaleway requests the run made. The local stack keeps
 * only its Elastic Metal pool (2 members). The previous release (`--previous`, a commit; `none`
 * skips it), compiled from git history, runs the same rounds on fresh local clouds in the same run.
 * Root only (the machines' sandbox). Command: `node dist/bench/elasticMetalReady.bench.js`.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, tmpdir, totalmem } from "node:os";
import { join } from "node:path";
import { startLocalCloud } from "../automation/local/localCloud";
import { LOCAL_ELASTIC_METAL_POOL } from "../automation/local/localStack";
import { editLocalPools } from "../test/support/localFleet";
import { localStackProject } from "../test/support/localStackProject";
import { arg } from "./benchSetup";
import { ELASTIC_METAL_POOL_RELEASE } from "./previousRelease";
import { roundsAcrossReleases, upToReady } from "./releaseRounds";

const INSTALL_MS = arg("install-ms", "0,30000")
  .split(",")
  .map((v) => Number(v));
const PREVIOUS = arg("previous", ELASTIC_METAL_POOL_RELEASE);
const MEMBERS = 2;

interface Round {
  readonly release: string;
  readonly installMs: number;
  /** Seconds from the start of `pulumi up` to every Elastic Metal Node Ready. */
  readonly readySeconds: number;
  /** Seconds `pulumi up` took. */
  readonly upSeconds: number;
  readonly sshSessionsPerMember: number;
  readonly scalewayRequestsPerMember: number;
}

/** One round: a fresh local cloud with the Elastic Metal pool alone, one `pulumi up` of `root`'s program. */
async function round(release: string, root: string, installMs: number): Promise<Round> {
  const dir = mkdtempSync(join(tmpdir(), "nodefleet-em-bench-"));
  const cloud = await startLocalCloud({
    dataDir: join(dir, "data"),
    hcloudPort: 0,
    agentIntervalMs: 300,
    logger: { info() {}, warn() {} },
    projectDir: localStackProject(join(dir, "project"), root),
    elasticMetalPool: true,
    env: { ...process.env, NODEFLEET_SIM_SCW_INSTALL_MS: String(installMs) },
  });
  try {
    if (!cloud.scaleway.machines) throw new Error("the Elastic Metal machines cannot run here (root, sshd and unshare needed)");
    editLocalPools(cloud, (pools) => pools.filter((p) => p.name === LOCAL_ELASTIC_METAL_POOL));
    const requestsBefore = [...cloud.scaleway.requestCounts.values()].reduce((a, b) => a + b, 0);
    const { readySeconds, upSeconds } = await upToReady(cloud, join(dir, "project"), LOCAL_ELASTIC_METAL_POOL, MEMBERS, release);
    const requests = [...cloud.scaleway.requestCounts.values()].reduce((a, b) => a + b, 0) - requestsBefore;
    const listed = await fetch(`${cloud.env.SCW_API_URL}/baremetal/v1/zones/fr-par-2/servers?per_page=50`, {
      headers: { "X-Auth-Token": cloud.env.SCW_SECRET_KEY! },
    });
    const servers = ((await listed.json()) as { servers: Array<{ id: string }> }).servers;
    const machines = cloud.scaleway.machines;
    const sessions = servers.reduce((sum, server) => sum + (machines.machine(server.id)?.acceptedSshSessions() ?? 0), 0);
    return {
      release,
      installMs,
      readySeconds,
      upSeconds,
      sshSessionsPerMember: sessions / MEMBERS,
      scalewayRequestsPerMember: requests / MEMBERS,
    };
  } finally {
    await cloud.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  if (process.getuid?.() !== 0) throw new Error("the Elastic Metal machines' sandbox needs root");
  const rounds = await roundsAcrossReleases(PREVIOUS, INSTALL_MS, round);
  const lines = [
    `machine: ${cpus().length} cores, ${Math.round(totalmem() / 2 ** 30)} GiB; ${MEMBERS} Elastic Metal members; previous = ${PREVIOUS.slice(0, 12)}`,
    "| release | install | every Node Ready | pulumi up | SSH sessions/member | Scaleway requests/member |",
    "| --- | ---: | ---: | ---: | ---: | ---: |",
    ...rounds.map(
      (r) =>
        `| ${r.release} | ${r.installMs / 1000} s | ${r.readySeconds.toFixed(1)} s | ${r.upSeconds.toFixed(1)} s | ${r.sshSessionsPerMember} | ${r.scalewayRequestsPerMember} |`,
    ),
  ];
  process.stdout.write(`${JSON.stringify({ benchmark: "elasticMetalReady", rounds, lines }, null, 2)}\n`);
}

void main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exitCode = 1;
});
