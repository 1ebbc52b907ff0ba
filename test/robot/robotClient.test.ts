import { strict as assert } from "node:assert";
import { RobotApiError, RobotClient, RobotNotFoundError, robotCredentialsFromEnv, robotFormBody } from "../../components/robot/robotClient";
import { FAKE_ROBOT_PASSWORD, FAKE_ROBOT_USER, type FakeRobot, fakeServerIp, startFakeRobot } from "../support/fakeRobot";

describe("robotClient", () => {
  let robot: FakeRobot;
  const client = (overrides: { password?: string; maxRetries?: number } = {}) =>
    new RobotClient({
      baseUrl: robot.baseUrl,
      credentials: { user: FAKE_ROBOT_USER, password: overrides.password ?? FAKE_ROBOT_PASSWORD },
      maxRetries: overrides.maxRetries ?? 3,
      backoffMs: () => 1,
    });

  beforeEach(async () => {
    robot = await startFakeRobot([321, 654]);
  });
  afterEach(async () => {
    await robot.close();
  });

  it("sends basic auth and reads the server", async () => {
    const c = client();
    const server = await c.getServer(321);
    assert.equal(server.server_ip, fakeServerIp(321));
    assert.equal(server.server_number, 321);
    assert.equal(robot.requests[0].authorization, `Basic ${Buffer.from(`${FAKE_ROBOT_USER}:${FAKE_ROBOT_PASSWORD}`).toString("base64")}`);
    assert.equal(c.requestCount, 1);
  });

  it("form-encodes rescue activation with every fingerprint and drops the rescue password", async () => {
    const fingerprints = ["15:28:b0:03:95:f0:77:b3:10:56:15:6b:77:22:a5:bb", "aa:bb:cc:dd:ee:ff:00:11:22:33:44:55:66:77:88:99"];
    const rescue = await client().activateRescue(654, fingerprints);
    assert.equal(rescue.active, true);
    assert.ok(!("password" in rescue), "the rescue root password must not be returned");
    const request = robot.requests[0];
    assert.equal(request.method, "POST");
    assert.equal(request.path, "/boot/654/rescue");
    assert.equal(request.contentType, "application/x-www-form-urlencoded");
    assert.equal(request.body, robotFormBody({ os: "linux", authorized_key: fingerprints }));
    assert.match(request.body, /^os=linux&authorized_key%5B%5D=15%3A28/);
    assert.deepEqual(robot.rescue.get(654), fingerprints);
  });

  it("deactivates rescue, resets and reads reset options", async () => {
    const c = client();
    await c.activateRescue(321, ["15:28:b0:03:95:f0:77:b3:10:56:15:6b:77:22:a5:bb"]);
    await c.deactivateRescue(321);
    assert.equal(robot.rescue.has(321), false);
    await c.reset(321, "hw");
    await c.reset(321, "sw");
    assert.deepEqual(robot.resets.get(321), ["hw", "sw"]);
    assert.equal(robot.requests.find((r) => r.method === "POST" && r.path === "/reset/321")?.body, "type=hw");
    assert.deepEqual((await c.resetOptions(321)).type, ["sw", "hw", "man"]);
    assert.equal(c.requestCount, 5);
  });

  it("retries RATE_LIMIT_EXCEEDED and counts every attempt", async () => {
    robot.rateLimitNext = 2;
    const c = client();
    const server = await c.getServer(321);
    assert.equal(server.server_number, 321);
    assert.equal(c.requestCount, 3);
    assert.equal(robot.requests.length, 3);
  });

  it("gives up on RATE_LIMIT_EXCEEDED after the bounded retries", async () => {
    robot.rateLimitNext = 10;
    const c = client({ maxRetries: 2 });
    await assert.rejects(
      c.getServer(321),
      (err: unknown) => err instanceof RobotApiError && err.status === 403 && err.code === "RATE_LIMIT_EXCEEDED",
    );
    assert.equal(c.requestCount, 3);
  });

  it("types *_NOT_FOUND answers", async () => {
    await assert.rejects(client().getServer(999), (err: unknown) => err instanceof RobotNotFoundError && err.code === "SERVER_NOT_FOUND");
  });

  it("never puts the password (or its basic-auth form) into errors", async () => {
    const password = "wrong-but-secret-password";
    const encoded = Buffer.from(`${FAKE_ROBOT_USER}:${password}`).toString("base64");
    const check = (err: unknown) => {
      const text = `${String(err)} ${(err as Error).stack ?? ""} ${JSON.stringify(err)}`;
      assert.ok(!text.includes(password) && !text.includes(encoded), `error leaks the password: ${text}`);
      return true;
    };
    await assert.rejects(
      client({ password }).getServer(321),
      (err: unknown) => err instanceof RobotApiError && err.status === 401 && check(err),
    );
    // Connection failures too.
    const closed = robot.baseUrl;
    await robot.close();
    robot = await startFakeRobot();
    await assert.rejects(new RobotClient({ baseUrl: closed, credentials: { user: "u", password } }).getServer(1), check);
  });

  it("reads credentials from HROBOT_USER / HROBOT_PASSWORD only when both are set", () => {
    assert.deepEqual(robotCredentialsFromEnv({ HROBOT_USER: "u", HROBOT_PASSWORD: "p" }), { user: "u", password: "p" });
    assert.equal(robotCredentialsFromEnv({ HROBOT_USER: "u" }), undefined);
  });
});
