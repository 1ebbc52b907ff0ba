/**
 * A fake Hetzner Robot webservice on 127.0.0.1: checks basic auth, parses form bodies, answers
 * the endpoints nodefleet uses, records every request, and can answer RATE_LIMIT_EXCEEDED a given
 * number of times first.
 */
import * as http from "node:http";
import type { AddressInfo } from "node:net";

export interface FakeRobotRequest {
  method: string;
  path: string;
  authorization: string | undefined;
  contentType: string | undefined;
  body: string;
}

export interface FakeRobot {
  readonly baseUrl: string;
  readonly requests: FakeRobotRequest[];
  /** Server numbers that exist; others answer 404 SERVER_NOT_FOUND. */
  readonly servers: Set<number>;
  /** Rescue activation per server: the fingerprints given. */
  readonly rescue: Map<number, string[]>;
  /** Resets per server, in order. */
  readonly resets: Map<number, string[]>;
  /** Answer this many requests with 403 RATE_LIMIT_EXCEEDED before serving normally. */
  rateLimitNext: number;
  /** Called on every accepted reset, e.g. to take a fake server's SSH port down. */
  onReset?: (serverNumber: number, type: string) => void;
  close(): Promise<void>;
}

export const FAKE_ROBOT_USER = "#ws+nodefleet";
export const FAKE_ROBOT_PASSWORD = "s3cr3t-robot-password";

export function fakeServerIp(serverNumber: number): string {
  return `198.51.100.${serverNumber % 250}`;
}

export async function startFakeRobot(serverNumbers: number[] = [321]): Promise<FakeRobot> {
  const expected = `Basic ${Buffer.from(`${FAKE_ROBOT_USER}:${FAKE_ROBOT_PASSWORD}`).toString("base64")}`;
  const state = {
    requests: [] as FakeRobotRequest[],
    servers: new Set(serverNumbers),
    rescue: new Map<number, string[]>(),
    resets: new Map<number, string[]>(),
    rateLimitNext: 0,
  };
  const send = (res: http.ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { "content-type": "application/json" });
    res.end(JSON.stringify(body));
  };
  const fail = (res: http.ServerResponse, status: number, code: string, message: string) =>
    send(res, status, { error: { status, code, message } });
  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (chunk: Buffer) => (body += chunk.toString()));
    req.on("end", () => {
      const path = req.url ?? "/";
      state.requests.push({
        method: req.method ?? "",
        path,
        authorization: req.headers.authorization,
        contentType: req.headers["content-type"],
        body,
      });
      if (state.rateLimitNext > 0) {
        state.rateLimitNext--;
        return send(res, 403, {
          error: { status: 403, code: "RATE_LIMIT_EXCEEDED", max_request: 200, interval: 3600, message: "Rate limit exceeded" },
        });
      }
      if (req.headers.authorization !== expected) return fail(res, 401, "UNAUTHORIZED", "Unauthorized");
      const match = /^\/(server|boot|reset)\/(\d+)(\/rescue)?$/.exec(path);
      const n = match ? Number(match[2]) : NaN;
      if (!match || !state.servers.has(n)) return fail(res, 404, "SERVER_NOT_FOUND", "Server not found");
      const form = new URLSearchParams(body);
      const ip = fakeServerIp(n);
      if (match[1] === "server" && req.method === "GET") {
        return send(res, 200, {
          server: { server_ip: ip, server_number: n, server_name: `srv${n}`, product: "AX41-NVMe", dc: "FSN1-DC14", status: "ready" },
        });
      }
      if (match[1] === "boot" && match[3] && req.method === "POST") {
        const keys = form.getAll("authorized_key[]");
        if (form.get("os") !== "linux") return fail(res, 400, "INVALID_INPUT", "invalid os");
        state.rescue.set(n, keys);
        return send(res, 200, {
          rescue: {
            server_ip: ip,
            server_number: n,
            os: "linux",
            active: true,
            password: "rescue-root-password",
            authorized_key: keys.map((fingerprint) => ({ key: { fingerprint } })),
            host_key: [],
          },
        });
      }
      if (match[1] === "boot" && match[3] && req.method === "GET") {
        const keys = state.rescue.get(n);
        return send(res, 200, {
          rescue: {
            server_ip: ip,
            server_number: n,
            os: ["linux"],
            active: keys !== undefined,
            password: null,
            authorized_key: [],
            host_key: [],
          },
        });
      }
      if (match[1] === "boot" && match[3] && req.method === "DELETE") {
        state.rescue.delete(n);
        return send(res, 200, {
          rescue: { server_ip: ip, server_number: n, os: ["linux"], active: false, password: null, authorized_key: [], host_key: [] },
        });
      }
      if (match[1] === "reset" && req.method === "POST") {
        const type = form.get("type") ?? "";
        if (!["sw", "hw", "power", "man"].includes(type)) return fail(res, 400, "INVALID_INPUT", "invalid type");
        state.resets.set(n, [...(state.resets.get(n) ?? []), type]);
        (state as { onReset?: (n: number, type: string) => void }).onReset?.(n, type);
        return send(res, 200, { reset: { server_ip: ip, server_number: n, type } });
      }
      if (match[1] === "reset" && req.method === "GET") {
        return send(res, 200, { reset: { server_ip: ip, server_number: n, type: ["sw", "hw", "man"], operating_status: "not supported" } });
      }
      return fail(res, 404, "NOT_FOUND", "Not found");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return Object.assign(state, {
    baseUrl: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  });
}
