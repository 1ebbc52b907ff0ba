/**
 * The served stack's config, re-read when `stacks/Pulumi.<stack>.yaml` changes (checked by mtime
 * on each use, so templates edited in git apply to the next admission and the next run). An edit
 * that does not validate is logged and ignored: the last valid config stays in force rather than
 * taking the API down. The API's tokens (`nodefleet:apiTokens`) are not program input and are left
 * out of the config handed to the stacks' programs.
 */
import * as fs from "node:fs";
import type { Logger } from "pino";
import { parseFleetSpec, type FleetSpec } from "../../components/fleet/fleetSpec";
import type { StackConfigValue } from "../engine/stackEngine";
import { configValues, readStackConfigFile } from "../stackConfigFile";
import { API_TOKENS_KEY } from "./apiTokenSources";
import { errorMessage } from "../../components/shared/errorMessage";

function programConfig(config: Record<string, StackConfigValue>): Record<string, StackConfigValue> {
  return Object.fromEntries(Object.entries(config).filter(([key]) => key !== API_TOKENS_KEY));
}

export class StackConfigSource {
  private mtimeMs = -1;
  private config!: Record<string, StackConfigValue>;
  private spec!: FleetSpec;
  readonly path: string;
  readonly encryptedPaths: string[];
  /** Called after the stack file changed and was re-read successfully. */
  onReread?: () => void;

  /** Throws (with every problem listed) when the stack's config is invalid at start-up. */
  constructor(
    readonly stackName: string,
    private readonly root: string,
    private readonly logger?: Logger,
  ) {
    const file = readStackConfigFile(stackName, root);
    this.path = file.path;
    this.encryptedPaths = file.encryptedPaths;
    this.spec = parseFleetSpec(configValues(file.config));
    this.config = programConfig(file.config);
    this.mtimeMs = fs.statSync(this.path).mtimeMs;
  }

  private refresh(): void {
    let mtimeMs: number;
    try {
      mtimeMs = fs.statSync(this.path).mtimeMs;
    } catch {
      return; // moved away during a git checkout: keep the last config
    }
    if (mtimeMs === this.mtimeMs) return;
    this.mtimeMs = mtimeMs;
    try {
      const file = readStackConfigFile(this.stackName, this.root);
      const spec = parseFleetSpec(configValues(file.config));
      if (spec.cluster.id !== this.spec.cluster.id)
        throw new Error(
          `the cluster id changed from ${this.spec.cluster.id} to ${spec.cluster.id}; restart the service to serve another cluster`,
        );
      this.spec = spec;
      this.config = programConfig(file.config);
      this.logger?.info({ stack: this.stackName }, "stack config re-read");
      this.onReread?.();
    } catch (error) {
      this.logger?.error(
        { stack: this.stackName, err: errorMessage(error) },
        "stack config changed but is invalid; keeping the last valid one",
      );
    }
  }

  fleet(): FleetSpec {
    this.refresh();
    return this.spec;
  }

  stackConfig(): Record<string, StackConfigValue> {
    this.refresh();
    return this.config;
  }
}
