/**
 * What the fake Robot webservice's route files share: Robot's error shape, its form-encoded input,
 * the server-number path parameter, and the documented request limits per route. Every shape here
 * is taken from Hetzner's Robot webservice documentation, https://robot.hetzner.com/doc/webservice/en.html
 * ("Errors": error format, invalid-input format, request-limit format; each route's "Request limit").
 */
import type { FastifyRequest } from "fastify";
import type { FakeRobotBoot, FakeRobotState } from "./fakeRobotState";

/**
 * An answer in Robot's error shape, `{error: {status, code, message, ...}}` (en.html#errors); the
 * invalid-input answer adds `missing` and `invalid`, the request-limit answer `max_request` and `interval`.
 */
export class RobotError extends Error {
  override readonly name = "RobotError";
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message);
  }

  get body(): { error: Record<string, unknown> } {
    return { error: { status: this.status, code: this.code, message: this.message, ...this.extra } };
  }
}

/**
 * 400 INVALID_INPUT naming the parameters that are missing and those that break a rule (en.html,
 * "Error format invalid input": each list is an array, or null when empty).
 */
export function invalidInput(missing: readonly string[], invalid: readonly string[] = []): RobotError {
  return new RobotError(400, "INVALID_INPUT", "invalid input", {
    missing: missing.length > 0 ? [...missing] : null,
    invalid: invalid.length > 0 ? [...invalid] : null,
  });
}

/** 404 SERVER_NOT_FOUND, as every per-server route answers it (en.html, each route's "Errors"). */
function serverNotFound(serverNumber: string): RobotError {
  return new RobotError(404, "SERVER_NOT_FOUND", `Server with id ${serverNumber} not found`);
}

/** The form body as lists of values by name; `key[]=a&key[]=b` and `key=a` both give `key: [a, b]`. */
export function formOf(request: FastifyRequest): Map<string, string[]> {
  const body = request.body;
  const form = new Map<string, string[]>();
  if (!(body instanceof URLSearchParams)) return form;
  for (const [rawKey, value] of body) {
    const key = rawKey.endsWith("[]") ? rawKey.slice(0, -2) : rawKey;
    form.set(key, [...(form.get(key) ?? []), value]);
  }
  return form;
}

/** One form value (the last when repeated), undefined when absent. */
export function formValue(form: Map<string, string[]>, name: string): string | undefined {
  const values = form.get(name);
  return values === undefined ? undefined : values[values.length - 1];
}

/**
 * The `{server-number}` path parameter. Robot also takes the server's main IPv4 address there
 * (deprecated, en.html "Deprecations"): the fake accepts both, as nodefleet's client only sends numbers.
 */
export function serverParam(request: FastifyRequest, state: FakeRobotState) {
  const raw = (request.params as Record<string, string>).serverNumber ?? "";
  const server = /^\d+$/.test(raw) ? state.server(Number(raw)) : state.servers().find((s) => s.ip === raw);
  if (!server) throw serverNotFound(raw);
  return server;
}

/**
 * Robot's request limit of each route the fake serves, per hour (en.html, each route's "Request
 * limit"). The fake keys routes as `METHOD /path/{param}`.
 */
export const DOCUMENTED_RATE_LIMITS: Readonly<Record<string, number>> = {
  "GET /server": 200,
  "GET /server/{serverNumber}": 200,
  "POST /server/{serverNumber}": 200,
  "GET /reset": 500,
  "GET /reset/{serverNumber}": 500,
  "POST /reset/{serverNumber}": 50,
  "GET /boot/{serverNumber}": 500,
  "GET /boot/{serverNumber}/rescue": 500,
  "POST /boot/{serverNumber}/rescue": 500,
  "DELETE /boot/{serverNumber}/rescue": 500,
  "GET /boot/{serverNumber}/rescue/last": 500,
  "GET /key": 500,
  "POST /key": 200,
  "GET /key/{fingerprint}": 500,
  "POST /key/{fingerprint}": 200,
  "DELETE /key/{fingerprint}": 200,
};

/** Robot's date-time format in key records (`2021-12-31 23:59:59`, en.html "SSH keys"), in UTC here. */
export function robotDateTime(epochMs: number): string {
  return new Date(epochMs).toISOString().slice(0, 19).replace("T", " ");
}

/**
 * What the local cloud's Robot machines (automation/local/robotMachines/) tell the fake and hear from
 * it: whether a reset takes, and each boot it records.
 */
export interface FakeRobotMachineHooks {
  /** Whether this reboot of the server takes; false: it comes back into the OS it ran. */
  takes(serverNumber: number): boolean;
  /** Called once a boot is recorded (a `man` boot carries its future instant). */
  onBoot(serverNumber: number, boot: FakeRobotBoot): void;
  /** Called when a `power` or `power_long` reset turns the server off. */
  onPowerOff?(serverNumber: number): void;
}

export interface FakeRobotContext {
  readonly state: FakeRobotState;
  /** The machines acting on the boots, once attached (FakeRobot.attachMachines). */
  machines?: FakeRobotMachineHooks;
  /** How long a requested manual reset (`man`) stays with the technician (409 RESET_MANUAL_ACTIVE meanwhile). */
  readonly manualResetMs: number;
}
