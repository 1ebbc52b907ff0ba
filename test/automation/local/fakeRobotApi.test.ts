/**
 * The fake Robot webservice over HTTP on loopback: every answer against the examples written from
 * Robot's documentation (test/fixtures/robot/, exactly their fields and JSON types), nodefleet's
 * Robot client (components/robot/robotClient.ts) driven against it, the reset types' meanings, the
 * rescue activation with uploaded keys' fingerprints, SSH keys (MD5 fingerprints as ssh-keygen
 * computes them), the login and rate-limit knobs, and persistence across a restart.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { generateKeyPairSync } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { type FakeRobot, type FakeRobotOptions, buildFakeRobot } from "../../../automation/local/fakeRobot/fakeRobotApi";
import { parseSshPublicKey } from "../../../automation/local/fakeRobot/fakeRobotKeys";
import { type RobotApiError, RobotClient } from "../../../components/robot/robotClient";

const USER = "#ws+fakeTest";
const PASSWORD = "fake-robot-test-password";
const FIXTURES = resolve(__dirname, "..", "..", "..", "..", "test", "fixtures", "robot");
const FIRST = 2_000_001;
const SECOND = 2_000_002;

/** An SSH wire string (RFC 4253 §5). */
function wire(data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  return Buffer.concat([length, data]);
}

/** An SSH mpint from an unsigned big-endian integer (a zero byte first when the top bit is set). */
function mpint(unsigned: Buffer): Buffer {
  return wire(unsigned[0]! & 0x80 ? Buffer.concat([Buffer.from([0]), unsigned]) : unsigned);
}

/** A fresh public key in OpenSSH format. */
function newPublicKey(kind: "ed25519" | "rsa"): string {
  if (kind === "ed25519") {
    const { x } = generateKeyPairSync("ed25519").publicKey.export({ format: "jwk" });
    const blob = Buffer.concat([wire(Buffer.from("ssh-ed25519")), wire(Buffer.from(x!, "base64url"))]);
    return `ssh-ed25519 ${blob.toString("base64")} test@nodefleet`;
  }
  const { n, e } = generateKeyPairSync("rsa", { modulusLength: 2048 }).publicKey.export({ format: "jwk" });
  const blob = Buffer.concat([wire(Buffer.from("ssh-rsa")), mpint(Buffer.from(e!, "base64url")), mpint(Buffer.from(n!, "base64url"))]);
  return `ssh-rsa ${blob.toString("base64")}`;
}

interface Fixture {
  source: string;
  nullable: string[];
  example: unknown;
}
const fixture = (name: string): Fixture => JSON.parse(readFileSync(join(FIXTURES, `${name}.json`), "utf8")) as Fixture;

/** The JSON type of a value: `integer` and `number` apart, as the documentation's Integer is. */
function jsonType(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  if (typeof value === "number") return Number.isInteger(value) ? "integer" : "number";
  return typeof value;
}

/** Where `actual` differs in shape from `expected` (fields, JSON types), by dotted path. */
function shapeDifferences(expected: unknown, actual: unknown, nullable: ReadonlySet<string>, path = ""): string[] {
  const at = path === "" ? "(root)" : path;
  if (actual === null) return expected === null || nullable.has(path) ? [] : [`${at}: null, documented ${jsonType(expected)}`];
  if (expected === null) return nullable.has(path) ? [] : [`${at}: ${jsonType(actual)}, documented null`];
  if (jsonType(expected) !== jsonType(actual)) return [`${at}: ${jsonType(actual)}, documented ${jsonType(expected)}`];
  if (Array.isArray(expected)) {
    const items = actual as unknown[];
    // An empty documented array leaves its elements' shape unknown: the fake must not invent one.
    if (expected.length === 0) return items.length === 0 ? [] : [`${at}: has elements, documented always empty`];
    return items.flatMap((item) => shapeDifferences(expected[0], item, nullable, `${path}[]`));
  }
  if (typeof expected === "object") {
    const want = expected as Record<string, unknown>;
    const got = actual as Record<string, unknown>;
    const join = (key: string) => (path === "" ? key : `${path}.${key}`);
    return [
      ...Object.keys(want)
        .filter((k) => !(k in got))
        .map((k) => `${join(k)}: missing`),
      ...Object.keys(got)
        .filter((k) => !(k in want))
        .map((k) => `${join(k)}: not documented`),
      ...Object.keys(want)
        .filter((k) => k in got)
        .flatMap((k) => shapeDifferences(want[k], got[k], nullable, join(k))),
    ];
  }
  return [];
}

function assertDocumented(name: string, actual: unknown): void {
  const { example, nullable, source } = fixture(name);
  assert.deepEqual(shapeDifferences(example, actual, new Set(nullable)), [], `${name} against ${source}`);
}

describe("fake Robot webservice", function () {
  this.timeout(30_000);
  let directory: string;
  let fake: FakeRobot | undefined;
  let url: string;

  async function start(options: Partial<FakeRobotOptions> = {}): Promise<FakeRobot> {
    fake = buildFakeRobot({ user: USER, password: PASSWORD, stateFile: join(directory, "robot.json"), manualResetMs: 200, ...options });
    url = await fake.app.listen({ port: 0, host: "127.0.0.1" });
    return fake;
  }
  async function stop(): Promise<void> {
    await fake?.app.close();
    fake = undefined;
  }
  beforeEach(function () {
    directory = mkdtempSync(join(tmpdir(), "nodefleet-fakerobot-"));
  });
  afterEach(async function () {
    await stop();
    rmSync(directory, { recursive: true, force: true });
  });

  const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`;
  const api = async (method: string, path: string, form?: Record<string, string | string[]>, authorization = basic(USER, PASSWORD)) => {
    const body = new URLSearchParams();
    for (const [k, v] of Object.entries(form ?? {})) for (const item of typeof v === "string" ? [v] : v) body.append(k, item);
    const response = await fetch(`${url}${path}`, {
      method,
      headers: { authorization, ...(form ? { "content-type": "application/x-www-form-urlencoded" } : {}) },
      ...(form ? { body: body.toString() } : {}),
    });
    const text = await response.text();
    return { status: response.status, body: (text ? JSON.parse(text) : undefined) as any };
  };
  const client = (options: { maxRetries?: number; backoffMs?: (attempt: number) => number; password?: string } = {}) =>
    new RobotClient({
      baseUrl: url,
      credentials: { user: USER, password: options.password ?? PASSWORD },
      maxRetries: options.maxRetries ?? 0,
      ...(options.backoffMs ? { backoffMs: options.backoffMs } : {}),
    });
  const uploadKey = async (name: string, data: string) => {
    const response = await api("POST", "/key", { name, data });
    assert.equal(response.status, 201, JSON.stringify(response.body));
    return response.body.key.fingerprint as string;
  };

  it("checks shapes strictly: an invented, omitted, retyped or unexpectedly null field fails", function () {
    const { example, nullable } = fixture("key");
    const key = (example as { key: Record<string, unknown> }).key;
    const check = (actual: unknown) => shapeDifferences(example, actual, new Set(nullable));
    assert.deepEqual(check(example), []);
    assert.deepEqual(check({ key: { ...key, comment: "x" } }), ["key.comment: not documented"]);
    const { data: _omitted, ...withoutData } = key;
    assert.deepEqual(check({ key: withoutData }), ["key.data: missing"]);
    assert.deepEqual(check({ key: { ...key, size: "256" } }), ["key.size: string, documented integer"]);
    assert.deepEqual(check({ key: { ...key, size: 25.6 } }), ["key.size: number, documented integer"]);
    assert.deepEqual(check({ key: { ...key, name: null } }), ["key.name: null, documented string"]);
    const rescue = fixture("rescue-inactive");
    const inactive = (rescue.example as { rescue: Record<string, unknown> }).rescue;
    assert.deepEqual(
      shapeDifferences(rescue.example, { rescue: { ...inactive, host_key: ["ssh-ed25519 AAAA"] } }, new Set(rescue.nullable)),
      ["rescue.host_key: has elements, documented always empty"],
    );
  });

  it("answers every route with exactly the documented fields and types", async function () {
    await start();
    const fingerprint = await uploadKey("ops", newPublicKey("ed25519"));
    const checks: Array<[string, string, string, Record<string, string | string[]>?, number?]> = [
      ["server-list", "GET", "/server"],
      ["server", "GET", `/server/${FIRST}`],
      ["server", "POST", `/server/${FIRST}`, { server_name: "renamed" }],
      ["reset-list", "GET", "/reset"],
      ["reset-options", "GET", `/reset/${FIRST}`],
      ["reset-options", "GET", `/reset/${SECOND}`],
      ["boot", "GET", `/boot/${FIRST}`],
      ["rescue-inactive", "GET", `/boot/${FIRST}/rescue`],
      ["rescue-active", "POST", `/boot/${FIRST}/rescue`, { os: "linux", "authorized_key[]": [fingerprint] }],
      ["rescue-active", "GET", `/boot/${FIRST}/rescue`],
      ["rescue-last", "GET", `/boot/${FIRST}/rescue/last`],
      ["rescue-inactive", "DELETE", `/boot/${FIRST}/rescue`],
      ["rescue-last", "GET", `/boot/${FIRST}/rescue/last`],
      ["reset", "POST", `/reset/${FIRST}`, { type: "hw" }],
      ["key-list", "GET", "/key"],
      ["key", "GET", `/key/${fingerprint}`],
      ["key", "POST", `/key/${fingerprint}`, { name: "ops-renamed" }],
      ["error", "GET", "/server/1", undefined, 404],
      ["reset", "POST", `/reset/${FIRST}`, { type: "man" }],
      ["error", "POST", `/reset/${FIRST}`, { type: "sw" }, 409],
      ["error-invalid-input", "POST", "/key", { name: "no data" }, 400],
      [
        "error-invalid-input",
        "POST",
        `/boot/${FIRST}/rescue`,
        { os: "linux", authorized_key: "00:11:22:33:44:55:66:77:88:99:aa:bb:cc:dd:ee:ff" },
        400,
      ],
    ];
    for (const [name, method, path, form, status = 200] of checks) {
      const response = await api(method, path, form);
      assert.equal(response.status, status, `${method} ${path}: ${JSON.stringify(response.body)}`);
      assertDocumented(name, response.body);
    }
    // Each activation answers its generated root password once; the active rescue names the key.
    const active = await api("POST", `/boot/${SECOND}/rescue`, { os: "linux", authorized_key: fingerprint });
    assert.match(active.body.rescue.password, /^[A-Za-z0-9_-]{16}$/);
    assert.equal(active.body.rescue.authorized_key[0].key.fingerprint, fingerprint);
    assert.equal((await api("DELETE", `/key/${fingerprint}`)).status, 200);
    assert.equal((await api("GET", `/key/${fingerprint}`)).body.error.code, "NOT_FOUND");
  });

  it("serves nodefleet's Robot client: server, reset options, rescue with the uploaded keys, reset into rescue", async function () {
    const robot = await start();
    const fingerprint = await uploadKey("fleet", newPublicKey("ed25519"));
    const c = client();
    const server = await c.getServer(FIRST);
    assert.equal(server.server_number, FIRST);
    assert.equal(server.server_ip, "127.0.3.1");
    assert.equal(server.product, "AX41-NVME");
    assert.deepEqual((await c.resetOptions(FIRST)).type, ["sw", "hw", "man"]);
    assert.deepEqual((await c.resetOptions(SECOND)).type, ["sw", "hw", "power", "power_long", "man"]);
    assert.deepEqual(await c.getRescue(FIRST), { active: false });
    const rescue = await c.activateRescue(FIRST, [fingerprint]);
    assert.equal(rescue.active, true);
    assert.equal("password" in rescue, false, "the client drops the generated password");
    assert.deepEqual(await c.getRescue(FIRST), { active: true });
    // A software reset boots the rescue system, which uses the activation up (as on Robot).
    await c.reset(FIRST, "sw");
    assert.deepEqual(await c.getRescue(FIRST), { active: false });
    const boots = robot.state.server(FIRST)!.boots;
    assert.equal(boots.length, 1);
    assert.equal(boots[0]!.cause, "sw");
    assert.equal(boots[0]!.into, "rescue");
    assert.deepEqual(boots[0]!.rescue!.authorizedKeys, [fingerprint]);
    // The next reset boots the installed system; deactivating an inactive rescue is harmless.
    await c.reset(FIRST, "hw");
    assert.equal(robot.state.server(FIRST)!.boots[1]!.into, "installed");
    await c.deactivateRescue(FIRST);
    await assert.rejects(c.getServer(1), (e: RobotApiError) => e.status === 404 && e.code === "SERVER_NOT_FOUND");
    await assert.rejects(c.activateRescue(FIRST, ["00:11:22:33:44:55:66:77:88:99:aa:bb:cc:dd:ee:ff"]), (e: RobotApiError) => {
      assert.equal(e.code, "INVALID_INPUT");
      return true;
    });
    assert.equal(robot.requestCounts.get("POST /boot/{serverNumber}/rescue"), 2);
  });

  it("gives each reset type its meaning on Robot", async function () {
    const robot = await start();
    const status = async (n: number) => (await api("GET", `/reset/${n}`)).body.reset.operating_status as string;
    assert.equal(await status(FIRST), "not supported");
    assert.equal(await status(SECOND), "running");
    // power: the power button; a running machine shuts down, an off one starts (and boots).
    assert.equal((await api("POST", `/reset/${SECOND}`, { type: "power" })).status, 200);
    assert.equal(await status(SECOND), "shut off");
    assert.equal(robot.state.server(SECOND)!.boots.length, 0);
    // sw and hw do nothing to a machine that is off.
    await api("POST", `/reset/${SECOND}`, { type: "hw" });
    assert.equal(robot.state.server(SECOND)!.boots.length, 0);
    await api("POST", `/reset/${SECOND}`, { type: "power" });
    assert.equal(await status(SECOND), "running");
    assert.equal(robot.state.server(SECOND)!.boots.length, 1);
    await api("POST", `/reset/${SECOND}`, { type: "power_long" });
    assert.equal(await status(SECOND), "shut off");
    // A type the server does not offer, and none at all, are invalid input naming `type`.
    const notOffered = await api("POST", `/reset/${FIRST}`, { type: "power" });
    assert.deepEqual([notOffered.status, notOffered.body.error.invalid], [400, ["type"]]);
    const none = await api("POST", `/reset/${FIRST}`, {});
    assert.deepEqual([none.status, none.body.error.missing], [400, ["type"]]);
    // man: a technician power-cycles it; until done, every reset answers 409 RESET_MANUAL_ACTIVE.
    await api("POST", `/reset/${FIRST}`, { type: "man" });
    const busy = await api("POST", `/reset/${FIRST}`, { type: "sw" });
    assert.deepEqual([busy.status, busy.body.error.code], [409, "RESET_MANUAL_ACTIVE"]);
    await new Promise((r) => setTimeout(r, 250));
    assert.equal((await api("POST", `/reset/${FIRST}`, { type: "sw" })).status, 200);
    assert.deepEqual(
      robot.state.server(FIRST)!.resets.map((r) => r.type),
      ["man", "sw"],
    );
  });

  it("computes keys' MD5 fingerprints, algorithms and sizes as ssh-keygen does, from OpenSSH and SSH2 text", async function () {
    await start();
    for (const [kind, type, size] of [
      ["ed25519", "ED25519", 256],
      ["rsa", "RSA", 2048],
    ] as const) {
      const publicKey = newPublicKey(kind);
      const file = join(directory, `${kind}.pub`);
      writeFileSync(file, `${publicKey}\n`);
      const expected = /MD5:([0-9a-f:]+)/.exec(execFileSync("ssh-keygen", ["-l", "-E", "md5", "-f", file], { encoding: "utf8" }))![1];
      const created = await api("POST", "/key", { name: kind, data: publicKey });
      assert.equal(created.status, 201);
      assert.deepEqual(
        [created.body.key.fingerprint, created.body.key.type, created.body.key.size, created.body.key.data],
        [expected, type, size, publicKey.split(" ").slice(0, 2).join(" ")],
      );
      // The same key again, in SSH2 (RFC 4716) format, is the same key.
      const ssh2 = execFileSync("ssh-keygen", ["-e", "-f", file], { encoding: "utf8" });
      assert.equal(parseSshPublicKey(ssh2).fingerprint, expected);
      const again = await api("POST", "/key", { name: `${kind}-again`, data: ssh2 });
      assert.deepEqual([again.status, again.body.error.code], [409, "KEY_ALREADY_EXISTS"]);
    }
    const garbage = await api("POST", "/key", { name: "bad", data: "ssh-ed25519 bm90IGEga2V5" });
    assert.deepEqual([garbage.status, garbage.body.error.invalid, garbage.body.error.missing], [400, ["data"], null]);
    const missing = await api("POST", "/key", {});
    assert.deepEqual(missing.body.error.missing, ["name", "data"]);
  });

  it("refuses a missing or wrong webservice login, and every login while the login knob is set", async function () {
    const robot = await start();
    const anonymous = await fetch(`${url}/server`);
    assert.equal(anonymous.status, 401);
    assert.match(anonymous.headers.get("www-authenticate") ?? "", /^Basic /);
    assertDocumented("error", await anonymous.json());
    assert.equal((await api("GET", "/server", undefined, basic(USER, "wrong"))).status, 401);
    await assert.rejects(client({ password: "wrong" }).getServer(FIRST), (e: RobotApiError) => {
      assert.equal(e.status, 401);
      assert.doesNotMatch(e.message, /wrong|fake-robot-test-password/, "no password in the error");
      return true;
    });
    robot.setLoginRevoked(true);
    assert.equal((await api("GET", "/server")).status, 401);
    robot.setLoginRevoked(false);
    assert.equal((await api("GET", "/server")).status, 200);
    assert.equal(robot.requestCounts.get("GET /server"), 1, "refused logins are not counted");
  });

  it("answers 403 RATE_LIMIT_EXCEEDED past each route's documented limit, or the knob's", async function () {
    await start();
    // POST /reset/{n} allows 50 an hour (en.html); the 51st is refused.
    for (let i = 0; i < 50; i++) assert.equal((await api("POST", `/reset/${FIRST}`, { type: "hw" })).status, 200);
    const limited = await api("POST", `/reset/${FIRST}`, { type: "hw" });
    assert.equal(limited.status, 403);
    assertDocumented("error-rate-limit", limited.body);
    assert.deepEqual([limited.body.error.max_request, limited.body.error.interval], [50, 3600]);
    // Other routes keep their own budget.
    assert.equal((await api("GET", `/reset/${FIRST}`)).status, 200);
    await stop();

    await start({ rateLimit: 2, rateWindowMs: 1000 });
    const c = client();
    await c.getServer(FIRST);
    await c.getServer(SECOND);
    await assert.rejects(c.getServer(FIRST), (e: RobotApiError) => e.status === 403 && e.code === "RATE_LIMIT_EXCEEDED");
    // nodefleet's client waits and retries a rate-limited call; the window has passed by then.
    const patient = client({ maxRetries: 2, backoffMs: () => 1100 });
    assert.equal((await patient.getServer(FIRST)).server_number, FIRST);
    assert.equal(patient.requestCount, 2);
  });

  it("keeps servers, names, keys and rescue activations across a restart, without the rescue password", async function () {
    await start({ servers: 3 });
    const fingerprint = await uploadKey("kept", newPublicKey("ed25519"));
    await api("POST", `/server/${SECOND}`, { server_name: "db-2" });
    await api("POST", `/boot/${SECOND}/rescue`, { os: "linux", authorized_key: fingerprint });
    await stop();
    assert.doesNotMatch(readFileSync(join(directory, "robot.json"), "utf8"), /"password"/);
    await start({ servers: 1 });
    assert.equal((await api("GET", "/server")).body.length, 3, "a smaller count removes no server");
    assert.equal((await api("GET", `/server/${SECOND}`)).body.server.server_name, "db-2");
    assert.equal((await api("GET", `/server/${FIRST + 2}`)).body.server.server_ip, "127.0.3.3");
    assert.equal((await api("GET", "/key")).body[0].key.fingerprint, fingerprint);
    const rescue = (await api("GET", `/boot/${SECOND}/rescue`)).body.rescue;
    assert.deepEqual([rescue.active, rescue.password, rescue.authorized_key[0].key.fingerprint], [true, null, fingerprint]);
    assert.equal((await api("GET", `/boot/${SECOND}/rescue/last`)).body.rescue.active, true);
  });
});
