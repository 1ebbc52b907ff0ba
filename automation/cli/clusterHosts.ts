/**
 * The clusters of a service that serves several: one stack service each (stackService.ts), in a
 * data directory of its own (`<data-dir>/<stack>`), started and stopped apart. Every recheck reads
 * the stacks/ folder again: a stack file that appears (and matches --stack) starts its cluster, one
 * that goes stops it, and the others never notice. A cluster that fails to start stays listed as
 * failed, saying why, and is tried again when its file changes.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import type { Logger } from "pino";
import type { FrontCluster } from "../api/clusterFront";
import { errorMessage } from "../../components/shared/errorMessage";
import { declaredClusterId, stackConfigPath } from "../stackConfigFile";
import { walSyncOf } from "../store/walSync";
import { servedStackNames, stackNamesOfFiles } from "./servedStacks";
import type { StackService, StackServiceOptions } from "./stackService";

export interface ClusterHostsArgs {
  /** The --stack arguments: names and patterns. */
  readonly stacks: readonly string[];
  /** The project's stacks/ folder. */
  readonly stacksDir: string;
  /** Each cluster's data directory is `<dataDir>/<stack>`. */
  readonly dataDir: string;
  readonly engine?: StackServiceOptions["engine"];
  /** Starts one stack's service, not listening (startStackService; tests may wrap it). */
  readonly start: (options: StackServiceOptions, logger: Logger) => Promise<StackService>;
  /** How often the stacks/ folder is read again (default 10 s). */
  readonly recheckMs?: number;
  readonly logger: Logger;
}

interface Hosted {
  stack: string;
  clusterId?: string;
  phase: FrontCluster["phase"];
  error?: string;
  service?: StackService;
  /** The stack file's size and modification time when it was last started, to retry a failed start on a change. */
  fileStamp: string;
}

export class ClusterHosts {
  private readonly hosted = new Map<string, Hosted>();
  private timer: NodeJS.Timeout | undefined;
  private recheckInFlight: Promise<void> | undefined;
  private stopped = false;

  constructor(private readonly args: ClusterHostsArgs) {}

  /** The clusters as the front routes and reports them. */
  list(): FrontCluster[] {
    return [...this.hosted.values()].map((host) => {
      const app = host.phase === "serving" ? host.service?.app : undefined;
      return {
        stack: host.stack,
        phase: host.phase,
        ...(host.clusterId !== undefined ? { clusterId: host.clusterId } : {}),
        ...(host.error !== undefined ? { error: host.error } : {}),
        ...(app ? { app, readiness: app.nodefleet.readiness } : {}),
      };
    });
  }

  /** The first look at the stacks/ folder, then one every recheck interval. */
  async start(): Promise<void> {
    await this.recheck();
    this.timer = setInterval(() => void this.recheck(), this.args.recheckMs ?? 10_000);
    this.timer.unref();
  }

  /** Brings the served clusters in line with the stacks/ folder; one recheck at a time. */
  recheck(): Promise<void> {
    this.recheckInFlight ??= this.bringInLine().finally(() => (this.recheckInFlight = undefined));
    return this.recheckInFlight;
  }

  /** Stops every cluster (each finishes or abandons its run in progress, as a lone service does). */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await this.recheckInFlight;
    await Promise.all([...this.hosted.values()].map((host) => this.stopHost(host)));
  }

  private async bringInLine(): Promise<void> {
    if (this.stopped) return;
    const files = fs.existsSync(this.args.stacksDir) ? fs.readdirSync(this.args.stacksDir) : [];
    const wanted = new Set(servedStackNames(this.args.stacks, stackNamesOfFiles(files)));
    const work: Promise<void>[] = [];
    for (const host of this.hosted.values()) {
      if (!wanted.has(host.stack)) work.push(this.stopHost(host).then(() => void this.hosted.delete(host.stack)));
    }
    for (const stack of wanted) {
      const host = this.hosted.get(stack);
      const stamp = this.fileStamp(stack);
      if (!host) work.push(this.startHost(stack, stamp));
      else if (host.phase === "serving" && stamp === "missing")
        work.push(this.stopHost(host).then(() => this.fail(host, this.missing(stack))));
      else if (host.phase === "failed" && stamp !== host.fileStamp) work.push(this.startHost(stack, stamp));
    }
    await Promise.all(work);
  }

  private fileStamp(stack: string): string {
    try {
      const stat = fs.statSync(this.stackFile(stack));
      return `${stat.size}:${stat.mtimeMs}`;
    } catch {
      return "missing";
    }
  }

  private stackFile(stack: string): string {
    return stackConfigPath(stack, path.dirname(this.args.stacksDir));
  }

  private missing(stack: string): string {
    return `no stack file ${path.relative(process.cwd(), this.stackFile(stack)) || this.stackFile(stack)}`;
  }

  private async startHost(stack: string, stamp: string): Promise<void> {
    const host: Hosted = { stack, phase: "starting", fileStamp: stamp, ...this.declaredCluster(stack) };
    this.hosted.set(stack, host);
    if (stamp === "missing") return this.fail(host, this.missing(stack));
    const logger = this.args.logger.child({ stack });
    try {
      const service = await this.args.start(
        { stack, dataDir: path.join(this.args.dataDir, stack), ...(this.args.engine ? { engine: this.args.engine } : {}) },
        logger,
      );
      host.clusterId = service.config.fleet.cluster.id;
      const other = [...this.hosted.values()].find((h) => h !== host && h.clusterId === host.clusterId && h.phase === "serving");
      if (other) {
        await service.app.close();
        return this.fail(host, `cluster ${host.clusterId} is already served by stack ${other.stack}: one stack per cluster`);
      }
      await service.app.ready();
      // A store that cannot trust its disk stops this cluster only; a restart of its stack file brings it back.
      walSyncOf(service.database).onFailure((failure) => void this.stopHost(host).then(() => this.fail(host, failure.message)));
      host.service = service;
      if (this.stopped) return this.stopHost(host);
      host.phase = "serving";
      service.firstApply?.start();
      logger.info({ cluster: host.clusterId, engine: service.config.kind, dataDir: service.dataDir }, "cluster served");
    } catch (error) {
      this.fail(host, errorMessage(error));
    }
  }

  /** The cluster id the stack file declares, read without starting anything (named in readyz even when its start fails). */
  private declaredCluster(stack: string): { clusterId?: string } {
    try {
      const clusterId = declaredClusterId(stack, path.dirname(this.args.stacksDir));
      return clusterId !== undefined ? { clusterId } : {};
    } catch {
      return {};
    }
  }

  private fail(host: Hosted, reason: string): void {
    host.phase = "failed";
    host.error = reason;
    delete host.service;
    this.args.logger.error({ stack: host.stack, cluster: host.clusterId, err: reason }, "cluster not served");
  }

  private async stopHost(host: Hosted): Promise<void> {
    const service = host.service;
    if (!service) return;
    host.phase = "stopping";
    delete host.service;
    service.firstApply?.abandon();
    try {
      await service.app.close();
    } catch (error) {
      this.args.logger.error({ stack: host.stack, err: errorMessage(error) }, "stopping the cluster failed");
    }
    this.args.logger.info({ stack: host.stack, cluster: host.clusterId }, "cluster no longer served");
  }
}
