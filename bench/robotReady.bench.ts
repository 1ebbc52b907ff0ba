/**
 * Issue #38's benchmark: seconds from `pulumi up --stack local` to every Robot Node Ready, on the
 * local cloud (real engine, nodefleet's Robot plugin against the fake Robot webservice, the Robot
 * machines over real SSH: rescue, the installimage stand-in, the self-join), with the stand-in's
 * install lasting `--install-ms` (NODEFLEET_SIM_ROBOT_INSTALL_MS; default 0 and 30000), and per
 * member the Robot webservice requests the run made (in all and by method and route: Robot's rate
 * limits are per route and tight) and the SSH sessions the machines let in. The local stack keeps
 * only its Robot pool (2 adopted servers). The previous release (`--previous`, a commit; `none`
 * skips it), compiled from git history, runs the same rounds on fresh local clouds of this checkout
 * (the knob lives in the machines, so both releases get it) in the same run.
 * Root only (the machines' sandbox). Command: `node dist/bench/robotReady.bench.js`.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, tmpdir, totalmem } from "node:os";
import { join } from "node:path";
import { startLocalCloud } from "../automation/local/localCloud";
import { LOCAL_ROBOT_POOL } from "../automation/local/localStack";
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
  /** Seconds from the start of `pulumi up` to every Robot Node Ready. */
  readonly readySeconds: number;
  /** Seconds `pulumi up` took. */
  readonly upSeconds: number;
  readonly sshSessionsPerMember: number;
  readonly robotRequestsPerMember: number;
  /** Robot requests per member by `METHOD /route` (the fake's route, `{n}` for parameters). */
  readonly robotRequestsPerMemberByRoute: Record<string, number>;
}

/** One round: a fresh local cloud with the Robot pool alone, one `pulumi up` of `root`'s program. */
async function round(release: string, root: string, installMs: number): Promise<Round> {
  const dir = mkdtempSync(join(tmpdir(), "nodefleet-robot-bench-"));
  const cloud = await startLocalCloud({
    dataDir: join(dir, "data"),
    hcloudPort: 0,
    agentIntervalMs: 300,
    logger: { info() {}, warn() {} },
    projectDir: localStackProject(join(dir, "project"), root),
    robotMachines: true,
    env: { ...process.env, NODEFLEET_SIM_ROBOT_INSTALL_MS: String(installMs) },
  });
  try {
    const machines = cloud.robotMachines;
    if (!machines) throw new Error("the Robot machines cannot run here (root, sshd and unshare needed)");
    editLocalPools(cloud, (pools) => pools.filter((p) => p.name === LOCAL_ROBOT_POOL));
    const before = new Map(cloud.robot.requestCounts);
    const { readySeconds, upSeconds } = await upToReady(cloud, join(dir, "project"), LOCAL_ROBOT_POOL, MEMBERS, release);
    const byRoute: Record<string, number> = {};
    for (const [route, count] of [...cloud.robot.requestCounts].sort(([a], [b]) => a.localeCompare(b))) {
      const made = count - (before.get(route) ?? 0);
      if (made > 0) byRoute[route] = made / MEMBERS;
    }
    // The pool adopts the account's first two servers with an address (localCloud.ts).
    const servers = cloud.robot.state
      .servers()
      .filter((s) => s.ip !== null)
      .slice(0, MEMBERS);
    const sessions = servers.reduce((sum, server) => sum + machines.machine(server.serverNumber).acceptedSshSessions(), 0);
    return {
      release,
      installMs,
      readySeconds,
      upSeconds,
      sshSessionsPerMember: sessions / MEMBERS,
      robotRequestsPerMember: Object.values(byRoute).reduce((a, b) => a + b, 0),
      robotRequestsPerMemberByRoute: byRoute,
    };
  } finally {
    await cloud.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  if (process.getuid?.() !== 0) throw new Error("the Robot machines' sandbox needs root");
  const rounds = await roundsAcrossReleases(PREVIOUS, INSTALL_MS, round);
  const routes = [...new Set(rounds.flatMap((r) => Object.keys(r.robotRequestsPerMemberByRoute)))].sort();
  const lines = [
    `machine: ${cpus().length} cores, ${Math.round(totalmem() / 2 ** 30)} GiB; ${MEMBERS} Robot members; previous = ${PREVIOUS.slice(0, 12)}`,
    "| release | install | every Node Ready | pulumi up | SSH sessions/member | Robot requests/member |",
    "| --- | ---: | ---: | ---: | ---: | ---: |",
    ...rounds.map(
      (r) =>
        `| ${r.release} | ${r.installMs / 1000} s | ${r.readySeconds.toFixed(1)} s | ${r.upSeconds.toFixed(1)} s | ${r.sshSessionsPerMember} | ${r.robotRequestsPerMember} |`,
    ),
    "",
    `| Robot requests/member by route | ${rounds.map((r) => `${r.release}, ${r.installMs / 1000} s`).join(" | ")} |`,
    `| --- |${rounds.map(() => " ---: |").join("")}`,
    ...routes.map((route) => `| \`${route}\` | ${rounds.map((r) => r.robotRequestsPerMemberByRoute[route] ?? 0).join(" | ")} |`),
  ];
  process.stdout.write(`${JSON.stringify({ benchmark: "robotReady", rounds, lines }, null, 2)}\n`);
}

void main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exitCode = 1;
});
