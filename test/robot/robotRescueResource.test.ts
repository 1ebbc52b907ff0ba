/**
 * The Robot rescue as a resource of nodefleet's plugin (components/robot/robotRescueResource.ts): its
 * handler in process against the fake Robot webservice, where the credentials come from (the
 * provider's configuration, else the plugin's environment, never the resource's state), and the
 * flavour a pool gives each member's rescue and token.
 */
import { strict as assert } from "node:assert";
import { type RecordedResource, runUnderMocks } from "../../automation/mocks/runUnderMocks";
import { isWrappedSecret, resolveSecrets } from "../../automation/mocks/secretValues";
import { type HetznerRobotPool, parseFleetSpec } from "../../components/fleet/fleetSpec";
import { type InPlaceMemberResources, recordedInPlaceMemberResources } from "../../components/fleet/memberResources";
import { inPlaceMemberResources } from "../../components/fleet/inPlaceMembers";
import { RobotNodePool } from "../../components/robot/robotNodePool";
import { robotMembers } from "../../components/robot/robotPlan";
import { ROBOT_RESCUE_TYPE, robotCredentialsJson, robotRescueHandler } from "../../components/robot/robotRescueResource";
import { FAKE_ROBOT_PASSWORD, FAKE_ROBOT_USER, type FakeRobot, fakeServerIp, startFakeRobot } from "../support/fakeRobot";
import { rawFleetConfig } from "../support/fleetConfigFixture";
import { tokenKubeconfig } from "../support/tokenKubeconfig";

const FINGERPRINT = "15:28:b0:03:95:f0:77:b3:10:56:15:6b:77:22:a5:bb";
const ROBOT_JSON = JSON.stringify({ user: FAKE_ROBOT_USER, password: FAKE_ROBOT_PASSWORD });
const NO_ACCESS = { credentialsJson: "" };

describe("robotRescueResource: the plugin's Robot rescue", () => {
  let robot: FakeRobot;
  beforeEach(async () => {
    robot = await startFakeRobot([321]);
  });
  afterEach(async () => {
    await robot.close();
  });
  const inputs = (overrides: Record<string, unknown> = {}) => ({
    serverNumber: 321,
    fingerprints: [FINGERPRINT],
    generation: "abc123",
    baseUrl: robot.baseUrl,
    // Nothing listens there: a silent server, reset with hw at once.
    probe: "127.0.0.1:9",
    ...overrides,
  });

  it("takes the credentials from the provider's configuration, else the plugin's environment, else none", () => {
    assert.equal(robotCredentialsJson({ credentialsJson: "", robotCredentialsJson: ROBOT_JSON }, {}), ROBOT_JSON);
    assert.deepEqual(JSON.parse(robotCredentialsJson(NO_ACCESS, { HROBOT_USER: "u", HROBOT_PASSWORD: "p" })), { user: "u", password: "p" });
    assert.equal(
      robotCredentialsJson({ credentialsJson: "", robotCredentialsJson: ROBOT_JSON }, { HROBOT_USER: "u", HROBOT_PASSWORD: "p" }),
      ROBOT_JSON,
      "the configuration wins",
    );
    assert.equal(robotCredentialsJson(NO_ACCESS, { HROBOT_USER: "u" }), "");
  });

  it("checks its inputs, naming each property, and keeps no credential among them", () => {
    const { inputs: kept, failures } = robotRescueHandler.check({ ...inputs(), credentials: ROBOT_JSON });
    assert.deepEqual(failures, []);
    assert.equal(kept.credentials, undefined, "credentials given as an input are dropped");
    const bad = robotRescueHandler.check({ serverNumber: 0, fingerprints: "x", generation: "", baseUrl: "", checkRescue: "yes" });
    assert.deepEqual(
      bad.failures.map((f) => f.property),
      ["serverNumber", "generation", "baseUrl", "fingerprints", "checkRescue"],
    );
  });

  it("creates with the configured credentials: rescue activated, server reset, no credential in its outputs; delete deactivates", async () => {
    const access = { credentialsJson: "", robotCredentialsJson: ROBOT_JSON };
    const created = await robotRescueHandler.create(inputs({ sshPrivateKey: "KEY", checkRescue: false }), access);
    assert.equal(created.id, "321");
    assert.deepEqual([created.outs.serverIp, created.outs.resetType], [fakeServerIp(321), "hw"]);
    assert.equal(created.outs.credentials, undefined);
    assert.ok(!JSON.stringify(created.outs).includes(FAKE_ROBOT_PASSWORD));
    assert.deepEqual(robot.rescue.get(321), [FINGERPRINT]);
    assert.ok(
      robot.requests.every((r) => r.authorization?.startsWith("Basic ")),
      "every request authenticated",
    );
    assert.deepEqual(robotRescueHandler.secretOutputs, ["sshPrivateKey"]);
    await robotRescueHandler.delete("321", created.outs, access);
    assert.equal(robot.rescue.has(321), false);
  });

  it("without credentials anywhere: create and delete fail naming the variables, before any request", async () => {
    const saved = { user: process.env.HROBOT_USER, password: process.env.HROBOT_PASSWORD };
    delete process.env.HROBOT_USER;
    delete process.env.HROBOT_PASSWORD;
    try {
      await assert.rejects(robotRescueHandler.create(inputs(), NO_ACCESS), /HROBOT_USER and HROBOT_PASSWORD/);
      await assert.rejects(robotRescueHandler.delete("321", inputs(), NO_ACCESS), /HROBOT_USER and HROBOT_PASSWORD/);
      assert.equal(robot.requests.length, 0);
    } finally {
      if (saved.user !== undefined) process.env.HROBOT_USER = saved.user;
      if (saved.password !== undefined) process.env.HROBOT_PASSWORD = saved.password;
    }
  });

  it("replaces (old one first) on a new server, generation or keys; anything else is an update that calls nothing", async () => {
    const olds = { ...inputs(), serverIp: "198.51.100.1", resetType: "hw" };
    const generation = robotRescueHandler.diff(olds, inputs({ generation: "zzz999" }));
    assert.deepEqual([generation.replaces, generation.deleteBeforeReplace], [["generation"], true]);
    assert.deepEqual(robotRescueHandler.diff(olds, inputs({ fingerprints: ["aa"] })).replaces, ["fingerprints"]);
    const inPlace = robotRescueHandler.diff(olds, inputs({ baseUrl: "http://127.0.0.1:1", checkRescue: true }));
    assert.deepEqual([inPlace.changed, inPlace.replaces], [["baseUrl", "checkRescue"], []]);
    assert.deepEqual(robotRescueHandler.diff(olds, inputs()).changed, []);
    const updated = await robotRescueHandler.update("321", olds, inputs({ checkRescue: true }), NO_ACCESS);
    assert.deepEqual([updated.serverIp, updated.resetType, updated.checkRescue], ["198.51.100.1", "hw", true]);
    assert.equal(robot.requests.length, 0);
  });
});

describe("robotRescueResource: each member's flavour (mock runtime)", () => {
  const POOL = "fsn-metal";
  const servers = [
    { serverNumber: 321, name: "a" },
    { serverNumber: 654, name: "b" },
    { serverNumber: 987, name: "c" },
  ];
  const spec = parseFleetSpec(
    rawFleetConfig({
      pools: [
        {
          name: POOL,
          provider: "hetzner-robot",
          mode: "static",
          servers,
          sshKeyFingerprints: [FINGERPRINT],
          location: "fsn1",
          serverType: "AX41-NVMe",
        },
      ],
    }),
  );
  const { kubeconfig: _k, ...cluster } = spec.cluster;
  const pool = spec.pools[0] as HetznerRobotPool;

  /** One run with `a` recorded `dynamic`, `b` recorded `plugin` (before the plugin's token and rescue), `c` new. */
  async function run(): Promise<RecordedResource[]> {
    const members = robotMembers(cluster, pool);
    const flavours: Array<InPlaceMemberResources | undefined> = [undefined, "plugin"];
    const current = members.slice(0, 2).map((m, i) => ({
      nodeId: m.member.nodeId,
      generation: m.generation,
      joinInputs: m.joinInputs,
      ready: true,
      ...(flavours[i] ? { memberResources: flavours[i] } : {}),
    }));
    const { resources } = await runUnderMocks({
      stack: "test",
      config: { "nodefleet:hrobotUser": FAKE_ROBOT_USER, "nodefleet:hrobotPassword": FAKE_ROBOT_PASSWORD },
      secretKeys: ["nodefleet:hrobotPassword"],
      program: () => {
        const component = new RobotNodePool(`example-${POOL}`, { cluster, pool, current, kubeconfig: tokenKubeconfig("t0ken") });
        return { nodes: component.nodes };
      },
    });
    return resources;
  }

  it("reads a recorded flavour, anything unknown as dynamic, and gives new members plugin-all", () => {
    assert.deepEqual(["plugin-all", "plugin", "dynamic", undefined, "other"].map(recordedInPlaceMemberResources), [
      "plugin-all",
      "plugin",
      "dynamic",
      "dynamic",
      "dynamic",
    ]);
    const current = [{ nodeId: "a", generation: "g", joinInputs: "j", ready: true, memberResources: "plugin" as const }];
    assert.equal(inPlaceMemberResources(current, "a"), "plugin");
    assert.equal(inPlaceMemberResources(current, "new"), "plugin-all");
    assert.equal(inPlaceMemberResources(undefined, "new"), "plugin-all");
    assert.equal(inPlaceMemberResources(undefined, "new", "dynamic"), "dynamic");
  });

  it("keeps the dynamic rescue and token component of recorded members, the credentials of new ones once on the provider", async () => {
    const resources = await run();
    const of = (letter: string) => resources.filter((r) => r.name.startsWith(`example-${POOL}-${POOL}-${letter}-`));
    const rescueOf = (letter: string) => of(letter).find((r) => r.name.endsWith("-rescue"))!;
    const tokenOf = (letter: string) => of(letter).find((r) => r.name.endsWith("-token"))!;
    for (const letter of ["a", "b"]) {
      assert.equal(rescueOf(letter).type, "pulumi-nodejs:dynamic/nodefleet:RobotRescue", letter);
      assert.ok(isWrappedSecret(rescueOf(letter).inputs.credentials), "the dynamic rescue keeps its own, secret");
      assert.equal(tokenOf(letter).type, "nodefleet:kubernetes:BootstrapToken", letter);
    }
    assert.equal(rescueOf("c").type, ROBOT_RESCUE_TYPE);
    assert.equal(tokenOf("c").type, "nodefleet:kubernetes:NodeBootstrapToken");
    for (const r of [rescueOf("c"), tokenOf("c")]) {
      assert.match(String(r.provider), new RegExp(`pulumi:providers:nodefleet::example-${POOL}-cluster-access::`), r.name);
      assert.ok(!JSON.stringify(resolveSecrets(r.inputs, true)).includes(FAKE_ROBOT_PASSWORD), `${r.name} holds no Robot password`);
    }
    const providers = resources.filter((r) => r.type === "pulumi:providers:nodefleet");
    assert.equal(providers.length, 1);
    assert.ok(isWrappedSecret(providers[0]!.inputs.robotCredentials));
  });

  // Measured: 1154 bytes for plugin-all, about 57 KB for the others (the dynamic rescue's serialized provider).
  it("keeps a new member's state small: its token and rescue together under 2 KiB, a twentieth of the dynamic ones", async () => {
    const resources = await run();
    const bytes = (letter: string) =>
      resources
        // The rescue, and the token with (for the component) its random values, offset and Secret.
        .filter((r) => r.custom && r.name.startsWith(`example-${POOL}-${POOL}-${letter}-`))
        .filter((r) => /-(rescue|token(-(id|password|expiry|secret-object))?)$/.test(r.name))
        .reduce((sum, r) => sum + Buffer.byteLength(JSON.stringify({ inputs: r.inputs, outputs: r.state }, null, 4)), 0);
    const [dynamic, plugin, pluginAll] = [bytes("a"), bytes("b"), bytes("c")];
    assert.ok(pluginAll < 2048, `plugin-all token and rescue: ${pluginAll} bytes; plugin ${plugin}, dynamic ${dynamic}`);
    assert.ok(pluginAll * 20 < dynamic, `plugin-all ${pluginAll} bytes, dynamic ${dynamic} bytes`);
    assert.ok(pluginAll < plugin, `plugin-all ${pluginAll} bytes, plugin ${plugin} bytes`);
  });
});
