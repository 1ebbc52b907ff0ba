/**
 * Issue 38 part 4: a Robot pool's public keys are authorized by their MD5 fingerprint and uploaded
 * to the account (`POST /key`) when it lacks them, and an IPv6-only server is refused with a clear
 * error, all against the local cloud's fake Robot webservice (checked against Robot's documentation
 * in fakeRobotApi.test.ts). The rescue provider runs serialized, as the engine runs it.
 */
import { strict as assert } from "node:assert";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as net from "node:net";
import { type FakeRobot, buildFakeRobot } from "../../automation/local/fakeRobot/fakeRobotApi";
import { FleetSpecError, type HetznerRobotPool, parseFleetSpec } from "../../components/fleet/fleetSpec";
import { RobotClient } from "../../components/robot/robotClient";
import { authorizedKeyFingerprints, keysToUpload, robotMembers } from "../../components/robot/robotPlan";
import { type RobotRescueState, robotRescueProvider } from "../../components/robot/robotRescue";
import { md5FingerprintOfOpenSshKey } from "../../components/robot/sshKeyFingerprint";
import { rawFleetConfig } from "../support/fleetConfigFixture";
import { withSerializedProvider } from "../support/serializedProvider";

// Two keys made with ssh-keygen; their fingerprints as `ssh-keygen -l -E md5` printed them.
const OPS_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFH0YZbulbE3vNh+pdtpdMgVczGoMmouWYQlLEdeHC0F ops@example";
const OPS_FINGERPRINT = "93:e5:13:b0:f6:82:ac:5c:72:dd:bb:ce:20:06:5d:be";
const BARE_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOWpn59nJq78BZP2zKBEEvZ00PvHsKkos4y1s2rktqPo";
const BARE_FINGERPRINT = "cd:dd:ba:7b:bc:97:9e:d9:d2:af:3d:a7:e7:cf:40:cf";
const DEPOSITED = "15:28:b0:03:95:f0:77:b3:10:56:15:6b:77:22:a5:bb";
const USER = "#ws+nodefleet";
const PASSWORD = "robot-test-password";
const SERVER = 2_000_001;

function robotPool(overrides: Record<string, unknown>): HetznerRobotPool {
  const pool = { name: "metal", provider: "hetzner-robot", mode: "static", servers: [{ serverNumber: SERVER, name: "a" }], ...overrides };
  return parseFleetSpec(rawFleetConfig({ pools: [pool] })).pools[0] as HetznerRobotPool;
}

describe("Robot pools' public keys", () => {
  it("fingerprints a public key as ssh-keygen -l -E md5 does", () => {
    assert.equal(md5FingerprintOfOpenSshKey(OPS_KEY), OPS_FINGERPRINT);
    assert.equal(md5FingerprintOfOpenSshKey(BARE_KEY), BARE_FINGERPRINT);
    assert.throws(() => md5FingerprintOfOpenSshKey("ssh-ed25519"), /not an OpenSSH public key line/);
  });

  it("authorizes deposited and public keys, and keeps a pool of deposited keys as it was", () => {
    const both = robotPool({ sshKeyFingerprints: [DEPOSITED], sshPublicKeys: [OPS_KEY, BARE_KEY] });
    assert.deepEqual(authorizedKeyFingerprints(both), [DEPOSITED, OPS_FINGERPRINT, BARE_FINGERPRINT]);
    assert.deepEqual(keysToUpload(both), [
      { fingerprint: OPS_FINGERPRINT, line: OPS_KEY },
      { fingerprint: BARE_FINGERPRINT, line: BARE_KEY },
    ]);
    const deposited = robotPool({ sshKeyFingerprints: [DEPOSITED] });
    assert.deepEqual(authorizedKeyFingerprints(deposited), [DEPOSITED]);
    assert.deepEqual(keysToUpload(deposited), []);
    // A new key is a new generation (a reinstall that authorizes it); none is not.
    const cluster = parseFleetSpec(rawFleetConfig({ pools: [] })).cluster;
    const generationOf = (pool: HetznerRobotPool) => robotMembers(cluster, pool)[0]!.generation;
    assert.equal(generationOf(deposited), generationOf(robotPool({ sshKeyFingerprints: [DEPOSITED], sshPublicKeys: [] })));
    assert.notEqual(generationOf(deposited), generationOf(both));
  });

  it("refuses a pool with no key at all, and a public key that is not an OpenSSH line, naming the field and the rule", () => {
    const problems = (overrides: Record<string, unknown>) => {
      try {
        robotPool(overrides);
        return "";
      } catch (error) {
        assert.ok(error instanceof FleetSpecError);
        return error.message;
      }
    };
    assert.match(problems({}), /sshKeyFingerprints: .*at least one .*unless sshPublicKeys/);
    assert.match(problems({ sshPublicKeys: ["-----BEGIN OPENSSH PRIVATE KEY-----"] }), /sshPublicKeys\[0\]: .*OpenSSH public key lines/);
    assert.equal(problems({ sshPublicKeys: [OPS_KEY] }), "", "public keys alone are enough");
  });
});

describe("the rescue provider against the fake Robot webservice: keys and IPv6-only servers", () => {
  let directory: string;
  let fake: FakeRobot;
  let url: string;

  beforeEach(async () => {
    directory = mkdtempSync(join(tmpdir(), "nodefleet-robot-keys-"));
    fake = buildFakeRobot({ user: USER, password: PASSWORD, stateFile: join(directory, "robot.json"), servers: 2 });
    url = await fake.app.listen({ port: 0, host: "127.0.0.1" });
  });
  afterEach(async () => {
    await fake.app.close();
    rmSync(directory, { recursive: true, force: true });
  });

  /** An address nothing listens on: the installed system is down at once, so one hw reset does. */
  async function deadAddress(): Promise<string> {
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as net.AddressInfo;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    return `127.0.0.1:${port}`;
  }

  const inputs = async (overrides: Partial<RobotRescueState> = {}): Promise<RobotRescueState> => ({
    serverNumber: SERVER,
    fingerprints: [OPS_FINGERPRINT, BARE_FINGERPRINT],
    generation: "abc123",
    baseUrl: url,
    credentials: JSON.stringify({ user: USER, password: PASSWORD }),
    probe: await deadAddress(),
    uploadKeys: keysToUpload(robotPool({ sshPublicKeys: [OPS_KEY, BARE_KEY] })),
    ...overrides,
  });

  it("uploads the keys the account lacks, leaves the one it has, and activates rescue with all of them", async () => {
    const client = new RobotClient({ baseUrl: url, credentials: { user: USER, password: PASSWORD } });
    await client.uploadKey("already here", OPS_KEY.split(" ").slice(0, 2).join(" "));
    await withSerializedProvider(robotRescueProvider, async (provider) => {
      await provider.create!(await inputs());
    });
    const keys = fake.state.keys();
    assert.deepEqual(
      keys.map((k) => [k.id, k.name]),
      [
        [OPS_FINGERPRINT, "already here"],
        [BARE_FINGERPRINT, "nodefleet"],
      ],
    );
    const server = fake.state.server(SERVER)!;
    assert.deepEqual(server.lastRescue?.authorizedKeys, [OPS_FINGERPRINT, BARE_FINGERPRINT]);
    assert.equal((await client.key(BARE_FINGERPRINT))?.fingerprint, BARE_FINGERPRINT);
    assert.equal(await client.key("00:11:22:33:44:55:66:77:88:99:aa:bb:cc:dd:ee:ff"), undefined, "a key the account lacks is undefined");
  });

  it("refuses an IPv6-only server with an error naming the server and the rule, before any upload, rescue or reset", async () => {
    fake.state.putServer({ ...fake.state.server(SERVER)!, ip: null });
    await withSerializedProvider(robotRescueProvider, async (provider) => {
      await assert.rejects(provider.create!(await inputs()), /Robot server 2000001 has no IPv4 address .*IPv6-only/);
    });
    const server = fake.state.server(SERVER)!;
    assert.equal(server.lastRescue, null);
    assert.deepEqual(server.resets, []);
    assert.deepEqual(fake.state.keys(), []);
  });
});
