/**
 * `nodefleet local up`: the kwok of nodefleet. A fake Hetzner Cloud API, a fake Scaleway API, a fake
 * Hetzner Robot webservice, a real control plane from
 * the toolchain and the node agent, all on 127.0.0.1 and kept in `<dataDir>/local/` (a restart
 * keeps the fake cloud's servers and the cluster), plus the environment that points Pulumi, the
 * hcloud provider, kubectl and the scaling API at them.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { userInfo } from "node:os";
import { join, resolve } from "node:path";
import { acquireDataDirLock } from "../store/dataDirLock";
import { fileBackendUrl } from "../engine/fileBackendState";
import { resolvePassphrase } from "../engine/passphrase";
import { findTool, pulumiProcessEnv, pulumiSdkDir, toolchainBinDir } from "../engine/toolchain";
import { localPath } from "./localPath";
import { knobsFromEnv } from "../simulated/simulationKnobs";
import { type ControlPlane, controlPlaneBinaries, startControlPlane } from "./controlPlane";
import { type FakeHcloud, buildFakeHcloud } from "./fakeHcloud/fakeHcloudApi";
import { type FakeScaleway, buildFakeScaleway } from "./fakeScaleway/fakeScalewayApi";
import { type FakeRobot, buildFakeRobot } from "./fakeRobot/fakeRobotApi";
import { NodeAgent, type NodeAgentLogger } from "./nodeAgent";
import { type LocalRobotPool, writeLocalStack } from "./localStack";
import { ensureLocalScalewaySshKey, ensureLocalSshKey, localBareMetalKey } from "./localSshKey";
import { HcloudClient } from "../hcloud/hcloudClient";
import { RobotMachines } from "./robotMachines/robotMachines";
import { machinesCanRun } from "./fakeScaleway/fakeScalewayMachines";

export interface LocalCloudOptions {
  readonly dataDir: string;
  /** Port of the fake Hetzner API. Default 8081; 0 picks a free one. */
  readonly hcloudPort?: number;
  /** Port of the fake Scaleway API. Default 8082, or a free one when `hcloudPort` is 0; 0 picks a free one. */
  readonly scalewayPort?: number;
  /** Port of the fake Robot webservice. Default 8083, or a free one when `hcloudPort` is 0; 0 picks a free one. */
  readonly robotPort?: number;
  /** Node agent pass interval. Default 2 s. */
  readonly agentIntervalMs?: number;
  readonly env?: NodeJS.ProcessEnv;
  readonly logger: NodeAgentLogger;
  /** Called with the fake Hetzner API before it listens (tests record its exchanges). */
  readonly onFakeHcloud?: (fake: FakeHcloud) => void;
  /** Called with the fake Scaleway API before it listens. */
  readonly onFakeScaleway?: (fake: FakeScaleway) => void;
  /** Called with the fake Robot webservice before it listens. */
  readonly onFakeRobot?: (fake: FakeRobot) => void;
  /**
   * Run the fake Robot servers as machines (robotMachines/: rescue, installimage, the boot cycle;
   * root only) and give the `local` stack a Robot pool of the first two (`local up --robot-machines`).
   * Default false: the machines take port 22 of 127.0.3.x, so one local cloud of a host can have them.
   */
  readonly robotMachines?: boolean;
  /** The Pulumi project (a folder with Pulumi.yaml) that gets the generated `local` stack; none: no stack file. */
  readonly projectDir?: string;
  /**
   * Whether the generated stack has the Elastic Metal pool, when machines can run here (root).
   * `nodefleet local up` asks for it; default false, for tests that do not need it (its two installs
   * and SSH joins add to every `pulumi up`, and its machines take the 127.0.4.x addresses).
   */
  readonly elasticMetalPool?: boolean;
  /**
   * The second octet of the Elastic Metal machines' loopback block, 127.<n>.4.0/22 (default 0):
   * local clouds whose machines run at once on one host (test files in parallel) each need their own.
   */
  readonly machineBlock?: number;
}

export interface LocalCloud {
  readonly plane: ControlPlane;
  readonly hcloud: FakeHcloud;
  readonly scaleway: FakeScaleway;
  readonly robot: FakeRobot;
  /** The Robot servers' machines, with `robotMachines`. */
  readonly robotMachines?: RobotMachines;
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

/** A fake API's secret: generated once, kept 0600 in the data directory. */
function fakeApiToken(file: string, generate: () => string = () => randomBytes(32).toString("hex")): string {
  if (!existsSync(file)) writeFileSync(file, `${generate()}\n`, { mode: 0o600, flag: "wx" });
  return readFileSync(file, "utf8").trim();
}

/** A Scaleway access key's shape: `SCW` and 17 upper-case letters or digits (it only names the key). */
function scalewayAccessKey(): string {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  return `SCW${[...randomBytes(17)].map((b) => alphabet[b % alphabet.length]).join("")}`;
}

/** A Robot webservice user's shape: `#ws+` and 8 letters or digits. */
function robotWebserviceUser(): string {
  const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  return `#ws+${[...randomBytes(8)].map((b) => alphabet[b % alphabet.length]).join("")}`;
}

/** Starts a fake API on 127.0.0.1, naming it in the error when the port is taken. */
async function listenOnLoopback(
  app: { listen(o: { port: number; host: string }): Promise<string> },
  port: number,
  what: string,
): Promise<string> {
  try {
    return await app.listen({ port, host: "127.0.0.1" });
  } catch (error) {
    throw new LocalCloudError(`the fake ${what} API cannot listen on 127.0.0.1:${port}: ${(error as Error).message}`);
  }
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
  let scaleway: FakeScaleway | undefined;
  let robot: FakeRobot | undefined;
  let robotMachines: RobotMachines | undefined;
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
      ...(knobs.hcloudRateLimit !== undefined ? { rateLimitPerHour: knobs.hcloudRateLimit } : {}),
    });
    options.onFakeHcloud?.(hcloud);
    const port = options.hcloudPort ?? 8081;
    const address = await listenOnLoopback(hcloud.app, port, "Hetzner");
    // The Scaleway project: a secret key (a UUID, as Scaleway's are), an access key and a project id.
    const scwSecretKey = fakeApiToken(join(dir, "scaleway-secret-key"), () => randomUUID());
    const scwAccessKey = fakeApiToken(join(dir, "scaleway-access-key"), scalewayAccessKey);
    const scwProjectId = fakeApiToken(join(dir, "scaleway-project-id"), () => randomUUID());
    scaleway = buildFakeScaleway({
      secretKey: scwSecretKey,
      projectId: scwProjectId,
      stateFile: join(dir, "scaleway-state.json"),
      installMs: knobs.scwInstallMs,
      vlanDelayMs: knobs.scwVlanDelayMs,
      missingPermissions: knobs.scwMissingPermissions,
      outOfStock: knobs.outOfStock,
      // Installed Elastic Metal servers become machines you SSH into (when run as root).
      machinesDir: join(dir, "scaleway-machines"),
      ...(options.machineBlock !== undefined ? { machineBlock: options.machineBlock } : {}),
      log: (message) => options.logger.warn({ fake: "scaleway" }, message),
    });
    options.onFakeScaleway?.(scaleway);
    const scwAddress = await listenOnLoopback(scaleway.app, options.scalewayPort ?? (port === 0 ? 0 : 8082), "Scaleway");
    // Machines run here (as root): the Elastic Metal pool's key, which it logs in to them with.
    const scwKey = scaleway.machines
      ? await ensureLocalScalewaySshKey(join(dir, "bare-metal-ssh-key"), { url: scwAddress, secretKey: scwSecretKey })
      : undefined;
    // The Robot account: a webservice user and its password, generated once (0600).
    const robotUser = fakeApiToken(join(dir, "robot-user"), robotWebserviceUser);
    const robotPassword = fakeApiToken(join(dir, "robot-password"));
    robot = buildFakeRobot({
      user: robotUser,
      password: robotPassword,
      stateFile: join(dir, "robot-state.json"),
      servers: knobs.robotServers,
      rateLimit: knobs.robotRateLimit,
      loginRevoked: knobs.robotLoginRevoked,
    });
    options.onFakeRobot?.(robot);
    const robotAddress = await listenOnLoopback(robot.app, options.robotPort ?? (port === 0 ? 0 : 8083), "Robot");
    let robotPool: { env: Record<string, string>; pool: LocalRobotPool } | undefined;
    if (options.robotMachines) {
      if (!machinesCanRun())
        throw new LocalCloudError("the Robot machines need root (their sandbox uses mount namespaces, overlay mounts and port 22)");
      const startedRobot = robot;
      const key = localBareMetalKey(join(dir, "bare-metal-ssh-key"));
      robotMachines = await RobotMachines.start({
        robot: startedRobot,
        dir: join(dir, "robot-machines"),
        // Delivered with the key deposited (as Robot's order form offers), so the ssh-reboot rung can log in.
        deliveredAuthorizedKeys: [key.publicKey],
        // Off long enough between systems for a 5-second probe to see the reboot (a real one takes minutes).
        rebootOffMs: 6000,
        resetsNotTaking: knobs.robotResetsNotTaking,
        hang: knobs.robotHang,
        bios: knobs.robotBios,
        installMs: knobs.robotInstallMs,
      });
      robotMachines.startKubelets((message) => options.logger.warn({ fake: "robot" }, message));
      const serverNumbers = startedRobot.state
        .servers()
        .filter((s) => s.ip !== null)
        .slice(0, 2)
        .map((s) => s.serverNumber);
      robotPool = { env: { NODEFLEET_SSH_PRIVATE_KEY: key.privateKey }, pool: { serverNumbers, publicKey: key.publicKey } };
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
      networkRoutes: (id) =>
        (fake.state.objects("networks").find((n) => n.id === id)?.routes as Array<{ destination: string; gateway: string }>) ?? [],
      // Machines read their metadata (server id) from the fake, as themselves.
      metadataAddress: address,
    });
    agent.start();
    const localEnv: Record<string, string> = {
      HCLOUD_ENDPOINT: `${address}`,
      HCLOUD_TOKEN: token,
      // The variables scaleway-sdk-go and the Scaleway provider read (scw/env.go).
      SCW_API_URL: scwAddress,
      SCW_ACCESS_KEY: scwAccessKey,
      SCW_SECRET_KEY: scwSecretKey,
      SCW_DEFAULT_PROJECT_ID: scwProjectId,
      SCW_DEFAULT_ORGANIZATION_ID: scwProjectId,
      SCW_DEFAULT_REGION: "fr-par",
      SCW_DEFAULT_ZONE: "fr-par-2",
      // The Robot webservice credentials robotClient.ts reads, and the address to give a Robot pool (robotBaseUrl).
      HROBOT_URL: robotAddress,
      HROBOT_USER: robotUser,
      HROBOT_PASSWORD: robotPassword,
      // The bare-metal pools' SSH private key (a pool reads it after the secret config nodefleet:sshPrivateKey): one
      // key for the Elastic Metal and the Robot pools.
      ...(scwKey ? { NODEFLEET_SSH_PRIVATE_KEY: scwKey.privateKey } : {}),
      ...robotPool?.env,
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
    const startedScaleway = scaleway;
    const startedRobot = robot;
    const elasticMetal =
      scwKey && options.elasticMetalPool === true ? { sshKeyId: scwKey.sshKeyId, sshUser: userInfo().username } : undefined;
    const startedRobotMachines = robotMachines;
    const stackFile = options.projectDir
      ? await writeLocalStack(options.projectDir, startedPlane, localEnv, {
          ...(elasticMetal ? { elasticMetal } : {}),
          ...(robotPool ? { robot: robotPool.pool } : {}),
        })
      : undefined;
    return {
      stackFile,
      plane: startedPlane,
      hcloud: fake,
      scaleway: startedScaleway,
      robot: startedRobot,
      ...(startedRobotMachines ? { robotMachines: startedRobotMachines } : {}),
      agent: startedAgent,
      env: localEnv,
      stop: async () => {
        startedAgent.stop();
        await fake.app.close();
        await startedScaleway.app.close();
        await startedRobotMachines?.stop();
        await startedRobot.app.close();
        await startedPlane.stop();
        lock.release();
      },
    };
  } catch (error) {
    agent?.stop();
    await hcloud?.app.close();
    await scaleway?.app.close();
    await robotMachines?.stop();
    await robot?.app.close();
    await plane?.stop();
    lock.release();
    throw error;
  }
}
