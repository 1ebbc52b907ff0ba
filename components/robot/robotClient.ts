/**
 * A small typed client for the Hetzner Robot webservice (dedicated servers), which has no Pulumi
 * provider: HTTP basic auth, `application/x-www-form-urlencoded` request bodies, JSON answers, and
 * errors as `{error: {status, code, message}}`. Robot limits requests per endpoint and answers
 * 403 `RATE_LIMIT_EXCEEDED` when over the limit: such calls are retried with a bounded backoff.
 *
 * It is used by `pulumi.dynamic` providers, whose code is serialized into the state: it relies only
 * on Node built-ins (global `fetch`, `Buffer`) and one pure helper, and captures no module state.
 */

import { fetchFailureCause } from "../shared/fetchFailureCause";

export const ROBOT_BASE_URL = "https://robot-ws.your-server.de";

export interface RobotCredentials {
  /** The Robot webservice user (not the Robot login), e.g. `#ws+abcdefgh`. */
  readonly user: string;
  /** Its password: a secret, never put into errors or logs. */
  readonly password: string;
}

export interface RobotClientOptions {
  readonly credentials: RobotCredentials;
  /** Default ROBOT_BASE_URL; tests point it at a fake on 127.0.0.1. */
  readonly baseUrl?: string;
  /** Retries of a rate-limited call before giving up. Default 4. */
  readonly maxRetries?: number;
  /** Wait before retry `attempt` (1-based), in ms. Default 2 s doubling, at most 60 s. */
  readonly backoffMs?: (attempt: number) => number;
}

export type RobotResetType = "sw" | "hw" | "power" | "man";

/** `GET /server/{n}` (the fields nodefleet reads). */
export interface RobotServer {
  readonly server_number: number;
  readonly server_ip: string | null;
  readonly server_ipv6_net?: string | null;
  readonly server_name?: string;
  readonly product?: string;
  readonly dc?: string;
  readonly status?: string;
}

/** `POST /boot/{n}/rescue`, without the generated root password (nodefleet logs in by key only). */
export interface RobotRescue {
  readonly server_number: number;
  readonly server_ip: string | null;
  readonly os: string;
  readonly active: boolean;
  readonly authorized_key: unknown[];
}

/** `GET /reset/{n}`: which reset types the server offers. */
export interface RobotResetOptions {
  readonly server_number: number;
  readonly type: RobotResetType[];
  readonly operating_status?: string;
}

/** An error answer from Robot: HTTP status, Robot's code (e.g. `SERVER_NOT_FOUND`) and message. */
export class RobotApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
    // Set explicitly: closure serialization turns classes into functions that call Error without
    // it initialising `this`, so the message would be lost in a serialized dynamic provider. The
    // name too, in the constructor: the serialized copy drops class fields (`override readonly
    // name = ...`, how the other errors name themselves).
    this.message = message;
    this.name = "RobotApiError";
  }
}

/** A 404 `NOT_FOUND` or `*_NOT_FOUND` answer; by fields, as `instanceof` does not survive closure serialization. */
export function isRobotNotFound(err: unknown): boolean {
  const e = err as { status?: unknown; code?: unknown } | null;
  return e?.status === 404 && typeof e.code === "string" && (e.code === "NOT_FOUND" || e.code.endsWith("_NOT_FOUND"));
}

/** 404 with a `NOT_FOUND` (a key) or `*_NOT_FOUND` code (server, rescue, reset...). */
export class RobotNotFoundError extends RobotApiError {
  constructor(status: number, code: string, message: string) {
    super(status, code, message);
    this.name = "RobotNotFoundError";
  }
}

/** Form encoding as Robot expects it; arrays repeat the key with `[]` (`authorized_key[]=a&authorized_key[]=b`). */
export function robotFormBody(fields: Readonly<Record<string, string | readonly string[]>>): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(fields)) {
    if (typeof value === "string") params.append(key, value);
    else for (const item of value) params.append(`${key}[]`, item);
  }
  return params.toString();
}

/** Credentials from HROBOT_USER / HROBOT_PASSWORD, or undefined when either is missing. */
export function robotCredentialsFromEnv(env: Readonly<Record<string, string | undefined>> = process.env): RobotCredentials | undefined {
  const user = env.HROBOT_USER;
  const password = env.HROBOT_PASSWORD;
  return user && password ? { user, password } : undefined;
}

/** An SSH key of the Robot account (en.html "SSH keys"). */
export interface RobotKey {
  readonly name: string;
  /** MD5, colon-separated hex. */
  readonly fingerprint: string;
  readonly type: string;
  readonly size: number;
  readonly data: string;
}

export class RobotClient {
  /** Requests sent (retries included): Robot's limits are per hour, so callers can report usage. */
  requestCount = 0;
  private readonly baseUrl: string;
  private readonly authorization: string;
  private readonly maxRetries: number;
  private readonly backoffMs: (attempt: number) => number;

  constructor(options: RobotClientOptions) {
    this.baseUrl = (options.baseUrl ?? ROBOT_BASE_URL).replace(/\/+$/, "");
    this.authorization = `Basic ${Buffer.from(`${options.credentials.user}:${options.credentials.password}`).toString("base64")}`;
    this.maxRetries = options.maxRetries ?? 4;
    this.backoffMs = options.backoffMs ?? ((attempt) => Math.min(60_000, 2000 * 2 ** (attempt - 1)));
  }

  async getServer(serverNumber: number): Promise<RobotServer> {
    return (await this.request<{ server: RobotServer }>("GET", `/server/${serverNumber}`)).server;
  }

  /** Activates the Linux rescue system for the next boot, with the given Robot SSH key fingerprints (MD5). */
  async activateRescue(serverNumber: number, authorizedKeyFingerprints: readonly string[]): Promise<RobotRescue> {
    const { rescue } = await this.request<{ rescue: RobotRescue & { password?: unknown } }>("POST", `/boot/${serverNumber}/rescue`, {
      os: "linux",
      authorized_key: authorizedKeyFingerprints,
    });
    // The root password Robot generates is dropped here so that it can reach no state or log.
    const { password: _dropped, ...withoutPassword } = rescue;
    return withoutPassword;
  }

  /** `GET /boot/{n}/rescue`: whether a rescue boot is pending (`active`), without its password. */
  async getRescue(serverNumber: number): Promise<{ active: boolean }> {
    const { rescue } = await this.request<{ rescue: { active?: unknown } }>("GET", `/boot/${serverNumber}/rescue`);
    return { active: rescue.active === true };
  }

  async deactivateRescue(serverNumber: number): Promise<void> {
    await this.request("DELETE", `/boot/${serverNumber}/rescue`);
  }

  async reset(serverNumber: number, type: RobotResetType): Promise<void> {
    await this.request("POST", `/reset/${serverNumber}`, { type });
  }

  async resetOptions(serverNumber: number): Promise<RobotResetOptions> {
    return (await this.request<{ reset: RobotResetOptions }>("GET", `/reset/${serverNumber}`)).reset;
  }

  /** `GET /key/{fingerprint}`: the uploaded key, or undefined when the account has none by that fingerprint. */
  async key(fingerprint: string): Promise<RobotKey | undefined> {
    try {
      return (await this.request<{ key: RobotKey }>("GET", `/key/${fingerprint}`)).key;
    } catch (err) {
      if (isRobotNotFound(err)) return undefined;
      throw err;
    }
  }

  /** `POST /key`: uploads a public key (OpenSSH text) under `name`; Robot answers it with its fingerprint. */
  async uploadKey(name: string, data: string): Promise<RobotKey> {
    return (await this.request<{ key: RobotKey }>("POST", "/key", { name, data })).key;
  }

  private async request<T>(method: string, path: string, form?: Readonly<Record<string, string | readonly string[]>>): Promise<T> {
    const what = `Robot ${method} ${path}`;
    for (let attempt = 0; ; attempt++) {
      this.requestCount++;
      let response: Response;
      try {
        response = await fetch(`${this.baseUrl}${path}`, {
          method,
          headers: {
            authorization: this.authorization,
            accept: "application/json",
            ...(form ? { "content-type": "application/x-www-form-urlencoded" } : {}),
          },
          ...(form ? { body: robotFormBody(form) } : {}),
        });
      } catch (err) {
        // fetch says only "fetch failed"; its cause says why. Neither carries the Authorization header.
        throw new Error(`${what} failed: ${fetchFailureCause(err) ?? (err as Error).message}`);
      }
      const text = await response.text();
      let body: unknown;
      try {
        body = text ? JSON.parse(text) : {};
      } catch {
        body = undefined;
      }
      if (response.ok) {
        if (body === undefined) throw new Error(`${what}: the answer is not JSON (HTTP ${response.status})`);
        return body as T;
      }
      const error = (body as { error?: { status?: number; code?: string; message?: string } } | undefined)?.error;
      const code = typeof error?.code === "string" ? error.code : `HTTP_${response.status}`;
      const message = `${what}: ${code}${typeof error?.message === "string" ? ` (${error.message})` : ""}, HTTP ${response.status}`;
      if (response.status === 403 && code === "RATE_LIMIT_EXCEEDED" && attempt < this.maxRetries) {
        await new Promise((resolve) => setTimeout(resolve, this.backoffMs(attempt + 1)));
        continue;
      }
      if (isRobotNotFound({ status: response.status, code })) throw new RobotNotFoundError(response.status, code, message);
      throw new RobotApiError(response.status, code, message);
    }
  }
}
