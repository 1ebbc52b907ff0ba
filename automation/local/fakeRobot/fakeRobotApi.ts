/**
 * A fake Hetzner Robot webservice for the local cloud, on the wire format of
 * https://robot.hetzner.com/doc/webservice/en.html: HTTP basic auth with a webservice user,
 * `application/x-www-form-urlencoded` input, JSON output, Robot's error shape, and its request limit
 * per route (403 RATE_LIMIT_EXCEEDED with `max_request` and `interval`). It serves what nodefleet's
 * Robot client (components/robot/robotClient.ts) and a Robot pool need: servers and their names
 * (fakeRobotServers.ts), resets, the rescue system's boot configuration, and SSH keys
 * (fakeRobotKeys.ts). Its shapes are checked against the documentation's examples by
 * test/automation/local/fakeRobotApi.test.ts (fixtures in test/fixtures/robot/).
 */
import { createHash, timingSafeEqual } from "node:crypto";
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from "fastify";
import { DOCUMENTED_RATE_LIMITS, type FakeRobotContext, type FakeRobotMachineHooks, RobotError, invalidInput } from "./fakeRobotContext";
import { registerKeys } from "./fakeRobotKeys";
import { rebootFromOs, registerServers, seedServers } from "./fakeRobotServers";
import { FakeRobotState } from "./fakeRobotState";

export interface FakeRobotOptions {
  /** The webservice user (Robot's look like `#ws+abcdefgh`). */
  readonly user: string;
  /** Its password: a secret, compared by hash, never logged. */
  readonly password: string;
  /** Where the state is kept. */
  readonly stateFile: string;
  /** Servers the account has; added on start when it has fewer (NODEFLEET_SIM_ROBOT_SERVERS). Default 2. */
  readonly servers?: number;
  /**
   * Requests allowed per route and window instead of Robot's documented limits (NODEFLEET_SIM_ROBOT_RATE_LIMIT);
   * unset: the documented limit of each route.
   */
  readonly rateLimit?: number;
  /** The rate-limit window. Default one hour, as Robot's. */
  readonly rateWindowMs?: number;
  /** Every login is refused with 401, as when the webservice user is removed (NODEFLEET_SIM_ROBOT_LOGIN_REVOKED). */
  readonly loginRevoked?: boolean;
  /** How long a manual reset (`man`) takes the technician. Default 60 s. */
  readonly manualResetMs?: number;
}

export interface FakeRobot {
  readonly app: FastifyInstance;
  /** Requests answered (rate-limited ones included, refused logins not), by `METHOD /path/{param}`. */
  readonly requestCounts: Map<string, number>;
  readonly state: FakeRobotState;
  /** Refuses (true) or accepts again (false) every login from the next request on. */
  setLoginRevoked(revoked: boolean): void;
  /** A reboot the server's running OS asked for (its machine's `reboot`): boots it as a reset does. */
  rebootFromOs(serverNumber: number): void;
  /** Lets the servers' machines decide whether a reset takes and hear of each boot (automation/local/robotMachines/). */
  attachMachines(hooks: FakeRobotMachineHooks | undefined): void;
}

const sha256 = (text: string) => createHash("sha256").update(text).digest();

/** The basic-auth user and password of a request, undefined when absent or malformed. */
function basicAuth(request: FastifyRequest): { user: string; password: string } | undefined {
  const header = request.headers.authorization;
  const match = typeof header === "string" ? /^Basic\s+([A-Za-z0-9+/=]+)$/i.exec(header) : null;
  if (!match) return undefined;
  const decoded = Buffer.from(match[1]!, "base64").toString("utf8");
  const colon = decoded.indexOf(":");
  return colon < 0 ? undefined : { user: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

export function buildFakeRobot(options: FakeRobotOptions): FakeRobot {
  const app = Fastify({ logger: false, bodyLimit: 256 * 1024 });
  const state = new FakeRobotState(options.stateFile);
  const ctx: FakeRobotContext = { state, manualResetMs: options.manualResetMs ?? 60_000 };
  seedServers(ctx, options.servers ?? 2);
  const requestCounts = new Map<string, number>();
  const windowMs = options.rateWindowMs ?? 3_600_000;
  /** Instants of the requests each route answered within the window. */
  const recent = new Map<string, number[]>();
  const login = { revoked: options.loginRevoked ?? false };
  const expectedUser = sha256(options.user);
  const expectedPassword = sha256(options.password);

  // Robot takes form-encoded input (en.html "General"); the routes read it through formOf.
  app.addContentTypeParser("application/x-www-form-urlencoded", { parseAs: "string" }, (_request, body, done) =>
    done(null, new URLSearchParams(String(body))),
  );

  app.addHook("onRequest", async (request: FastifyRequest, reply: FastifyReply) => {
    const credentials = basicAuth(request);
    const valid =
      credentials !== undefined &&
      timingSafeEqual(sha256(credentials.user), expectedUser) &&
      timingSafeEqual(sha256(credentials.password), expectedPassword);
    if (!valid || login.revoked) {
      // en.html "Authentication error": 401. The body is the error shape; its code is the fake's.
      void reply.header("www-authenticate", 'Basic realm="Webservice"');
      throw new RobotError(401, "UNAUTHORIZED", "Unable to authenticate");
    }
    const routeUrl = request.routeOptions.url;
    if (routeUrl === undefined) return;
    const route = `${request.method} ${routeUrl}`.replace(/:(\w+)/g, "{$1}");
    requestCounts.set(route, (requestCounts.get(route) ?? 0) + 1);
    const limit = options.rateLimit ?? DOCUMENTED_RATE_LIMITS[route];
    if (limit === undefined) return;
    const now = Date.now();
    const within = (recent.get(route) ?? []).filter((at) => at > now - windowMs);
    if (within.length >= limit) {
      recent.set(route, within);
      // en.html "Error format request limit".
      throw new RobotError(403, "RATE_LIMIT_EXCEEDED", "rate limit exceeded", {
        max_request: limit,
        interval: Math.round(windowMs / 1000),
      });
    }
    within.push(now);
    recent.set(route, within);
  });

  app.setErrorHandler((error: Error, _request, reply: FastifyReply) => {
    if (error instanceof RobotError) return reply.status(error.status).send(error.body);
    const status = (error as { statusCode?: number }).statusCode ?? 500;
    if (status >= 500)
      return reply.status(500).send(new RobotError(500, "INTERNAL_ERROR", "internal error of the fake Robot webservice").body);
    return reply.status(400).send(invalidInput([], ["body"]).body);
  });
  app.setNotFoundHandler((request, reply) =>
    reply.status(404).send(new RobotError(404, "NOT_FOUND", `${request.method} ${request.url.split("?")[0]} not found`).body),
  );

  registerServers(app, ctx);
  registerKeys(app, ctx);
  // A stopped fake leaves one snapshot and no journal behind.
  app.addHook("onClose", async () => state.compact());

  return {
    app,
    requestCounts,
    state,
    setLoginRevoked: (revoked) => {
      login.revoked = revoked;
    },
    rebootFromOs: (serverNumber) => rebootFromOs(ctx, serverNumber),
    attachMachines: (hooks) => {
      ctx.machines = hooks;
    },
  };
}
