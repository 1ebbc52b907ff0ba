/**
 * What the API stack needs from the git stack before its first member: the cluster's network and
 * firewall in the Hetzner project. Until both exist (the git stack was never applied, or was
 * destroyed) the service says which are missing and the command that creates them, in its log and
 * on /readyz, and refuses creates instead of accepting claims whose runs could only fail. It looks
 * again every `recheckMs` while something is missing, so it turns ready by itself after the apply.
 */
import type { SharedResources } from "./apiStack";
import { errorMessage } from "../../components/shared/errorMessage";

export interface SharedResourcesLookUp {
  /** Both resources, or the names of the missing ones (`network local-network`, `firewall local-nodes`). */
  (): Promise<{ found: SharedResources } | { missing: string[] }>;
}

export interface PrerequisiteLogger {
  warn(fields: object, message: string): void;
  info(fields: object, message: string): void;
}

export class GitStackPrerequisites {
  private missing: string[] | undefined;
  private timer: NodeJS.Timeout | undefined;
  private checking: Promise<unknown> | undefined;
  private stopped = false;

  constructor(
    private readonly lookUp: SharedResourcesLookUp,
    /** The command that applies the git stack, e.g. `pulumi up --stack local` in /srv/fleet. */
    private readonly applyCommand: string,
    private readonly logger?: PrerequisiteLogger,
    private readonly recheckMs = 5_000,
  ) {}

  /** Looks now, and again every recheckMs while something is missing. */
  start(): void {
    void this.check();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** The shared resources for a run, or undefined when one is missing (the state is updated either way). */
  async resources(): Promise<SharedResources | undefined> {
    const result = await this.lookUp();
    this.record("found" in result ? undefined : result.missing);
    return "found" in result ? result.found : undefined;
  }

  /** Why a create must be refused now, or undefined. */
  refusal(): string | undefined {
    return this.missing ? this.describe(this.missing) : undefined;
  }

  private describe(missing: readonly string[]): string {
    return `the git stack is not applied: ${missing.join(" and ")} ${missing.length === 1 ? "is" : "are"} missing in the Hetzner project; run ${this.applyCommand}`;
  }

  private check(): Promise<unknown> {
    this.checking ??= this.resources()
      .catch((error: unknown) => {
        this.logger?.warn({ err: errorMessage(error) }, "could not look up the git stack's network and firewall; looking again");
        this.schedule();
      })
      .finally(() => (this.checking = undefined));
    return this.checking;
  }

  private schedule(): void {
    if (this.stopped || this.timer !== undefined) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.check();
    }, this.recheckMs);
    this.timer.unref();
  }

  private record(missing: string[] | undefined): void {
    const before = this.missing;
    this.missing = missing && missing.length > 0 ? missing : undefined;
    if (this.missing) this.schedule();
    if (this.missing && before?.join() !== this.missing.join())
      this.logger?.warn({ missing: this.missing, command: this.applyCommand }, this.describe(this.missing));
    if (!this.missing && before) this.logger?.info({}, "the git stack's network and firewall exist now; creates are accepted");
  }
}
