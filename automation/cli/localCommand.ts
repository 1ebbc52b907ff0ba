/**
 * `nodefleet local up|env|karpenter`: the local cloud in the foreground (until SIGINT/SIGTERM), the
 * environment that uses it, as shell `export` lines or one JSON document with `--json`, and
 * Karpenter with nodefleet's driver against it (localKarpenterCommand.ts).
 */
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { type Command, InvalidArgumentError } from "commander";
import pino from "pino";
import { shellExport, startLocalCloud } from "../local/localCloud";
import { readLocalCloudEnv, runLocalKarpenter } from "./localKarpenterCommand";

function parsePort(value: string): number {
  const port = Number(value);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new InvalidArgumentError("port must be a whole number from 0 to 65535");
  return port;
}

export function registerLocalCommand(program: Command): void {
  const local = program
    .command("local")
    .description("a fake Hetzner Cloud, Scaleway and Hetzner Robot, a real Kubernetes control plane and a node agent on 127.0.0.1");
  local
    .command("up")
    .description("start the local cloud in the foreground and print the environment that uses it")
    .option("--data-dir <dir>", "where the local cloud keeps its state (under <dir>/local)", "./.nodefleet")
    .option("--hcloud-port <n>", "port of the fake Hetzner API", parsePort, 8081)
    .option("--scaleway-port <n>", "port of the fake Scaleway API (default 8082, a free one with --hcloud-port 0)", parsePort)
    .option("--robot-port <n>", "port of the fake Robot webservice (default 8083, a free one with --hcloud-port 0)", parsePort)
    .option("--project-dir <dir>", "the Pulumi project that gets the generated stacks/Pulumi.local.yaml", ".")
    .option("--robot-machines", "run the fake Robot servers as machines (root) and add a Robot pool of two to the local stack")
    .option("--json", 'print the environment as one JSON document {"env": {...}}')
    .action(
      async (opts: {
        dataDir: string;
        hcloudPort: number;
        scalewayPort?: number;
        robotPort?: number;
        projectDir: string;
        robotMachines?: boolean;
        json?: boolean;
      }) => {
        const logger = pino({ name: "nodefleet-local", level: process.env.NODEFLEET_LOG_LEVEL ?? "info" }, pino.destination(2));
        process.stderr.write(
          "nodefleet local: starting the fake Hetzner, Scaleway and Robot APIs, the control plane and the node agent...\n",
        );
        const projectDir = resolve(opts.projectDir);
        const hasProject = existsSync(join(projectDir, "Pulumi.yaml"));
        if (!hasProject)
          process.stderr.write(`nodefleet local: ${projectDir} has no Pulumi.yaml, so no local stack is written (--project-dir)\n`);
        const cloud = await startLocalCloud({
          dataDir: opts.dataDir,
          hcloudPort: opts.hcloudPort,
          ...(opts.scalewayPort !== undefined ? { scalewayPort: opts.scalewayPort } : {}),
          ...(opts.robotPort !== undefined ? { robotPort: opts.robotPort } : {}),
          logger,
          ...(opts.robotMachines ? { robotMachines: true } : {}),
          ...(hasProject ? { projectDir } : {}),
          // The generated stack's Elastic Metal pool, when machines can run here (as root).
          elasticMetalPool: true,
        });
        if (cloud.stackFile)
          process.stderr.write(`nodefleet local: stack \`local\` in ${cloud.stackFile}: run \`pulumi up --stack local\`\n`);
        process.stdout.write(opts.json ? `${JSON.stringify({ env: cloud.env })}\n` : `${shellExport(cloud.env)}\n`);
        process.stderr.write(
          `nodefleet local: ready; the environment is also in ${join(resolve(opts.dataDir), "local", "env")} (source it). Ctrl-C stops.\n`,
        );
        await new Promise<void>((done) => {
          const stop = () => void cloud.stop().then(done, done);
          process.once("SIGINT", stop);
          process.once("SIGTERM", stop);
        });
      },
    );
  local
    .command("env")
    .description("print the environment of the local cloud last started in this data directory")
    .option("--data-dir <dir>", "the local cloud's data directory", "./.nodefleet")
    .option("--json", 'print one JSON document {"env": {...}}')
    .action((opts: { dataDir: string; json?: boolean }) => {
      const env = readLocalCloudEnv(opts.dataDir);
      process.stdout.write(opts.json ? `${JSON.stringify({ env })}\n` : `${shellExport(env)}\n`);
    });
  local
    .command("karpenter")
    .description(
      "run Karpenter with nodefleet's driver against a running `local up` and `serve --stack local --engine automation`, " +
        "with a NodePool mirroring the local stack's autoscaled pool, in the foreground until Ctrl-C",
    )
    .option("--data-dir <dir>", "the local cloud's data directory (as given to `local up`)", "./.nodefleet")
    .option("--project-dir <dir>", "the project whose stacks/Pulumi.local.yaml `local up` wrote", ".")
    .option("--url <url>", "the scaling API's base URL, as the driver reaches it", process.env.NODEFLEET_API_URL || "http://127.0.0.1:8080")
    .option("--token <token>", "API token (default NODEFLEET_API_TOKEN, or the token serve generated in --serve-data-dir)")
    .option("--serve-data-dir <dir>", "serve's data directory, for the token it generated", "./.nodefleet/serve")
    .option("--pool <name>", "the autoscaled pool (default: the stack's only one)")
    .option("--node-pool <name>", "the NodePool's name (default: the pool's)")
    .option("--consolidate-after <duration>", "the NodePool's consolidateAfter", "30s")
    .action(
      async (opts: {
        dataDir: string;
        projectDir: string;
        url: string;
        token?: string;
        serveDataDir: string;
        pool?: string;
        nodePool?: string;
        consolidateAfter: string;
      }) => {
        await runLocalKarpenter(opts);
      },
    );
}
