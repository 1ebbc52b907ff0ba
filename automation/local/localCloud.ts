/**
 * `nodefleet local up`: the kwok of nodefleet. A fake Hetzner Cloud API, a real control plane from
 * the toolchain and the node agent, all on 127.0.0.1 and kept in `<dataDir>/local/` (a restart
 * keeps the fake cloud's servers and the cluster), plus the environment that points Pulumi, the
 * hcloud provider, kubectl and the scaling API at them.
 */
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { acquireDataDirLock } from "../store/dataDirLock";
import { fileBackendUrl } from "../engine/fileBackendState";
import { resolvePassphrase } from "../engine/passphrase";
import { findTool, pulumiProcessEnv, pulumiSdkDir, toolchainBinDir } from "../engine/toolchain";
import { localPath } from "./localPath";
import { knobsFromEnv } from "../simulated/simulationKnobs";
import { type ControlPlane, controlPlaneBinaries, startControlPlane } from "./controlPlane";
import { type FakeHcloud, buildFakeHcloud } from "./fakeHcloud/fakeHcloudApi";
import { NodeAgent, type NodeAgentLogger } from "./nodeAgent";
import { writeLocalStack } from "./localStack";
import { ensureLocalSshKey } from "./localSshKey";
import { HcloudClient } from "../hcloud/hcloudClient";

export interface LocalCloudOptions {
  readonly dataDir: string;
  /** Port of the fake Hetzner API. Default 8081; 0 picks a free one. */
  readonly hcloudPort?: number;
  /** Node agent pass interval. Default 2 s. */
  readonly agentIntervalMs?: number;
  readonly env?: NodeJS.ProcessEnv;
  readonly logger: NodeAgentLogger;
  /** Called with the fake Hetzner API before it listens (tests record its exchanges). */
  readonly onFakeHcloud?: (fake: FakeHcloud) => void;
  /** The Pulumi project (a folder with Pulumi.yaml) that gets the generated `local` stack; none: no stack file. */
  readonly projectDir?: string;
}

export interface LocalCloud {
  readonly plane: ControlPlane;
  readonly hcloud: FakeHcloud;
  readonly agent: NodeAgent;
  /** The environment to use the local cloud with. */
  readonly env: Record<string, string>;
  /** The generated stack file, when a project was given. */
  readonly stackFile?: string;
  stop(): Promise<void>;
}

export class LocalCloudError extends Error {
  override readonly name = "LocalCloudError";
}

/** The fake API's token: generated once, kept 0600 in the data directory. */
function fakeApiToken(file: string): string {
  if (!existsSync(file)) writeFileSync(file, `${randomBytes(32).toString("hex")}\n`, { mode: 0o600, flag: "wx" });
  return readFileSync(file, "utf8").trim();
}

export function shellExport(env: Record<string, string>): string {
  return Object.entries(env)
    .map(([k, v]) => `export ${k}='${v.replace(/'/g, "'\\''")}'`)
    .join("\n");
}

export async function startLocalCloud(options: LocalCloudOptions): Promise<LocalCloud> {
  const env = options.env ?? process.env;
  // Every tool it will need, before anything is started (a start that fails late leaves nothing running either).
  controlPlaneBinaries(env);
  if (options.projectDir && !findTool("pulumi", env)) throw new LocalCloudError("the pulumi CLI not found: run `npm run toolchain`");
  const dir = join(resolve(options.dataDir), "local");
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  // One local cloud per data directory; refused before anything is started.
  const lock = acquireDataDirLock(dir);
  let plane: ControlPlane | undefined;
  let hcloud: FakeHcloud | undefined;
  let agent: NodeAgent | undefined;
  try {
    const token = fakeApiToken(join(dir, "hcloud-token"));
    // Generated once into the local directory, as the engine does for its data directory.
    const passphrase = resolvePassphrase(dir, {}).envVars;
    // The simulated cloud's knobs (docs/design.md §4.4), when set, shape the fake the same way.
    const knobs = knobsFromEnv(env);
    hcloud = buildFakeHcloud({
      token,
      stateFile: join(dir, "hcloud-state.json"),
      outOfStock: knobs.outOfStock,
      quotaExceeded: knobs.quotaExceeded,
      bootDelayMs: knobs.bootDelayMs,
      privateNicDelayMs: knobs.privateNicDelayMs,
      failCreateRate: knobs.failCreateRate,
      seed: knobs.seed,
    });
    options.onFakeHcloud?.(hcloud);
    const port = options.hcloudPort ?? 8081;
    let address: string;
    try {
      address = await hcloud.app.listen({ port, host: "127.0.0.1" });
    } catch (error) {
      throw new LocalCloudError(`the fake Hetzner API cannot listen on 127.0.0.1:${port}: ${(error as Error).message}`);
    }
    // The key the local stack's pools name, uploaded as a user would before their first `pulumi up`.
    await ensureLocalSshKey(new HcloudClient({ token, baseUrl: address }));
    // The admin kubeconfig beside env, where `kubectl --kubeconfig <dataDir>/local/admin.kubeconfig` finds it.
    plane = await startControlPlane({ dir: join(dir, "control-plane"), env, adminKubeconfig: join(dir, "admin.kubeconfig") });
    const fake = hcloud;
    agent = new NodeAgent(() => fake.state.servers, options.logger, {
      intervalMs: options.agentIntervalMs ?? 2000,
      stateDir: join(dir, "machines"),
      // One list of Nodes and Pods a pass for all machines; each machine still writes as itself.
      cluster: plane.admin,
      // Machines read their metadata (server id) from the fake, as themselves.
      metadataAddress: address,
    });
    agent.start();
    const localEnv: Record<string, string> = {
      HCLOUD_ENDPOINT: `${address}`,
      HCLOUD_TOKEN: token,
      KUBECONFIG: plane.adminKubeconfig,
      PULUMI_BACKEND_URL: fileBackendUrl(join(dir, "pulumi-state")),
      ...passphrase,
      // The local cloud runs the toolchain's plugin doubles (upstream's are not built here;
      // docs/engines.md): selected for the engine and every command run with this env.
      NODEFLEET_PLUGINS: "toolchain",
      // The dynamic-provider plugin on NODE_PATH, PULUMI_HOME, no downloads; PATH with the toolchain first.
      ...pulumiProcessEnv(dir, { ...env, NODEFLEET_PLUGINS: "toolchain" }),
      PATH: localPath(env.PATH ?? "", toolchainBinDir(env), pulumiSdkDir()),
    };
    mkdirSync(join(dir, "pulumi-state"), { recursive: true, mode: 0o700 });
    writeFileSync(join(dir, "env"), `${shellExport(localEnv)}\n`, { mode: 0o600 });
    writeFileSync(join(dir, "env.json"), `${JSON.stringify({ env: localEnv }, null, 2)}\n`, { mode: 0o600 });
    const startedPlane = plane;
    const startedAgent = agent;
    const stackFile = options.projectDir ? await writeLocalStack(options.projectDir, startedPlane, localEnv) : undefined;
    return {
      stackFile,
      plane: startedPlane,
      hcloud: fake,
      agent: startedAgent,
      env: localEnv,
      stop: async () => {
        startedAgent.stop();
        await fake.app.close();
        await startedPlane.stop();
        lock.release();
      },
    };
  } catch (error) {
    agent?.stop();
    await hcloud?.app.close();
    await plane?.stop();
    lock.release();
    throw error;
  }
}
