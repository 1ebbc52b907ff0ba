import { strict as assert } from "node:assert";
import * as net from "node:net";
import { MOCK_ROBOT_HARDWARE, mockRobotServerIp } from "../../automation/mocks/robotMocks";
import { type RecordedResource, runUnderMocks } from "../../automation/mocks/runUnderMocks";
import { mockEd25519HostKey } from "../../automation/mocks/seededValues";
import { containsSecret, isWrappedSecret, resolveSecrets } from "../../automation/mocks/secretValues";
import { FleetSpecError, type HetznerRobotPool, parseFleetSpec } from "../../components/fleet/fleetSpec";
import type { CurrentInPlaceMember } from "../../components/fleet/inPlaceMembers";
import { GATHER_HARDWARE_COMMAND } from "../../components/robot/installimageAutosetup";
import { decodeK0sJoinToken } from "../../components/bootstrap/k0sJoinToken";
import { K0S_TOKEN_FILE } from "../../components/bootstrap/k0sWorkerCloudConfig";
import { RECORD_ONLY_UPDATE } from "../../components/bootstrap/sshConnection";
import { robotMembers } from "../../components/robot/robotPlan";
import {
  RobotNodePool,
  UNKNOWN_INSTALLED_HOST_KEY,
  installedHostKey,
  installsWithGeneratedHostKey,
  readyCommand,
} from "../../components/robot/robotNodePool";
import { type RobotRescueState, rescueResetLadder, resetAlongLadder, robotRescueProvider } from "../../components/robot/robotRescue";
import { RESCUE_INSTALL_COMMAND } from "../../components/robot/robotRescueInstall";
import { hostKeyPairFromSecret } from "../../components/robot/pregeneratedHostKey";
import { runProgram } from "../../stacks/fleetProgram";
import { assertShellcheckClean } from "../support/externalLinters";
import { FAKE_ROBOT_PASSWORD, FAKE_ROBOT_USER, type FakeRobot, fakeServerIp, startFakeRobot } from "../support/fakeRobot";
import { rawFleetConfig } from "../support/fleetConfigFixture";
import { parse } from "yaml";
import { withSerializedProvider } from "../support/serializedProvider";
import { tokenKubeconfig } from "../support/tokenKubeconfig";

/** A new member's rescue: the plugin's (robotRescueResource.ts). */
const RESCUE = "nodefleet:hrobot:RobotRescue";
const PROVIDER = "pulumi:providers:nodefleet";
const REMOTE = "command:remote:Command";
const FINGERPRINT = "15:28:b0:03:95:f0:77:b3:10:56:15:6b:77:22:a5:bb";
const SSH_KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAAexample\n-----END OPENSSH PRIVATE KEY-----\n";

function robotPoolConfig(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name: "fsn-metal",
    provider: "hetzner-robot",
    mode: "static",
    servers: [
      { serverNumber: 321, name: "a" },
      { serverNumber: 654, name: "b" },
    ],
    sshKeyFingerprints: [FINGERPRINT],
    location: "fsn1",
    serverType: "AX41-NVMe",
    labels: { "node.kubernetes.io/pool": "fsn-metal" },
    taints: [{ key: "example.com/metal", value: "true", effect: "NoSchedule" }],
    ...overrides,
  };
}

/** The bootstrap token inside the k0s join token the self-join script writes. */
function bootstrapTokenIn(script: string): string {
  const match = new RegExp(`write_file '${K0S_TOKEN_FILE}' 0600 <<'(\\w+)'\n([^\n]+)\n`).exec(script);
  assert.ok(match, "the script writes the k0s join token file");
  const kubeconfig = parse(decodeK0sJoinToken(match[2])) as { users: Array<{ user: { token: string } }> };
  return kubeconfig.users[0].user.token;
}

const plain = <T = Record<string, unknown>>(value: unknown) => resolveSecrets(value, true) as T;
const ofType = (resources: RecordedResource[], type: string) => resources.filter((r) => r.type === type);
const byName = (resources: RecordedResource[], name: string) => {
  const found = resources.find((r) => r.name === name);
  assert.ok(found, `no resource named ${name}; have ${resources.map((r) => r.name).join(", ")}`);
  return found;
};

async function runPool(
  pool: Record<string, unknown> = {},
  cluster: Record<string, unknown> = {},
  extra: { kubeconfig?: string; current?: CurrentInPlaceMember[] } = {},
) {
  const spec = parseFleetSpec(rawFleetConfig({ cluster, pools: [robotPoolConfig(pool)] }));
  return runUnderMocks({
    stack: "test",
    config: {
      "nodefleet:sshPrivateKey": SSH_KEY,
      "nodefleet:hrobotUser": FAKE_ROBOT_USER,
      "nodefleet:hrobotPassword": FAKE_ROBOT_PASSWORD,
    },
    secretKeys: ["nodefleet:sshPrivateKey", "nodefleet:hrobotPassword"],
    program: () => {
      const { kubeconfig: _k, ...c } = spec.cluster;
      const robotPool = spec.pools[0] as HetznerRobotPool;
      const component = new RobotNodePool("example-fsn-metal", {
        cluster: c,
        pool: robotPool,
        ...(extra.kubeconfig ? { kubeconfig: extra.kubeconfig } : {}),
        ...(extra.current ? { current: extra.current } : {}),
      });
      return { nodes: component.nodes };
    },
  });
}

describe("robotNodePool: fleet spec", () => {
  it("accepts a Robot pool (the release refusal is gone) with defaults", () => {
    const spec = parseFleetSpec(rawFleetConfig({ pools: [robotPoolConfig({ location: undefined, serverType: undefined })] }));
    const pool = spec.pools[0] as HetznerRobotPool;
    assert.equal(pool.provider, "hetzner-robot");
    assert.equal(pool.image, "ubuntu-24.04");
    assert.equal(pool.location, "hetzner-robot");
    assert.equal(pool.serverType, "dedicated");
  });

  it("refuses bad fingerprints, duplicate servers, autoscaling and over-long hostnames, naming the field", () => {
    const problems = (pool: Record<string, unknown>, cluster: Record<string, unknown> = {}) => {
      try {
        parseFleetSpec(rawFleetConfig({ cluster, pools: [robotPoolConfig(pool)] }));
      } catch (err) {
        assert.ok(err instanceof FleetSpecError);
        return err.problems.join("\n");
      }
      return "";
    };
    assert.match(problems({ sshKeyFingerprints: ["SHA256:abc"] }), /sshKeyFingerprints\[0\]: .*MD5 fingerprints/);
    assert.match(problems({ sshKeyFingerprints: [] }), /sshKeyFingerprints: .*at least one/);
    assert.match(
      problems({
        servers: [
          { serverNumber: 1, name: "a" },
          { serverNumber: 1, name: "b" },
        ],
      }),
      /servers: servers\[\]\.serverNumber entries must be unique/,
    );
    assert.match(
      problems({
        servers: [
          { serverNumber: 1, name: "a" },
          { serverNumber: 2, name: "a" },
        ],
      }),
      /servers\[\]\.name entries must be unique/,
    );
    assert.match(problems({ mode: "autoscaled" }), /mode: mode must be static/);
    assert.match(
      problems({ servers: [{ serverNumber: 1, name: "a".repeat(20) }] }, { id: "c".repeat(40) }),
      /servers: node .* more than the 63/,
    );
  });
});

describe("robotNodePool: resource graph under mocks", () => {
  it("declares rescue, hardware, install, ready and join per server, in order, with the documented names", async () => {
    const { resources } = await runPool();
    const spec = parseFleetSpec(rawFleetConfig({ pools: [robotPoolConfig()] }));
    const members = robotMembers(spec.cluster, spec.pools[0] as HetznerRobotPool);
    assert.deepEqual(
      ofType(resources, RESCUE).map((r) => r.name),
      ["example-fsn-metal-fsn-metal-a-rescue", "example-fsn-metal-fsn-metal-b-rescue"],
    );
    for (const role of ["hardware", "install", "ready", "join"]) {
      assert.equal(ofType(resources, REMOTE).filter((r) => r.name.endsWith(`-${role}`)).length, 2, role);
    }
    // One NodeBootstrapToken per member generation, fixed at creation (no join window), its Secret kept.
    const tokens = ofType(resources, "nodefleet:kubernetes:NodeBootstrapToken");
    assert.deepEqual(
      tokens.map((t) => t.name),
      members.map((m) => `example-fsn-metal-${m.member.nodeId}-${m.generation}-token`),
    );
    for (const token of tokens) {
      assert.deepEqual(Object.keys(token.inputs).sort(), ["clusterKind", "description", "nodeName", "secretObject", "ttlMinutes"]);
      assert.equal(token.inputs.secretObject, true);
      assert.match(String(token.provider), /pulumi:providers:nodefleet::example-fsn-metal-cluster-access::/);
    }
    // The only random resources: one host key seed per member generation (the plugin draws the token).
    assert.deepEqual(
      resources.filter((r) => r.type.startsWith("random:")).map((r) => `${r.type} ${r.name} ${String(r.inputs.length)}`),
      members.map((m) => `random:index/randomPassword:RandomPassword example-fsn-metal-${m.member.nodeId}-${m.generation}-host-key 64`),
    );
    assert.equal(resources.find((r) => r.type === "nodefleet:hrobot:NodePool")?.name, "example-fsn-metal");

    const rescue = byName(resources, "example-fsn-metal-fsn-metal-a-rescue");
    assert.equal(rescue.inputs.serverNumber, 321);
    assert.deepEqual(rescue.inputs.fingerprints, [FINGERPRINT]);
    assert.equal(rescue.inputs.baseUrl, "https://robot-ws.your-server.de");
    assert.equal(rescue.inputs.credentials, undefined, "no Robot credentials per member");
    assert.match(String(rescue.provider), /pulumi:providers:nodefleet::example-fsn-metal-cluster-access::/);
    // The configured Robot credentials: once, a secret, on the pool's provider.
    const providers = ofType(resources, PROVIDER);
    assert.equal(providers.length, 1);
    assert.ok(isWrappedSecret(providers[0]!.inputs.robotCredentials), "Robot credentials are a secret provider input");
    assert.deepEqual(JSON.parse(plain<string>(providers[0]!.inputs.robotCredentials)), {
      user: FAKE_ROBOT_USER,
      password: FAKE_ROBOT_PASSWORD,
    });
    // Each reboot is checked to reach the rescue (rescueBootLadder.ts), logging in with the pool's key, a secret.
    assert.equal(rescue.inputs.checkRescue, true);
    assert.ok(isWrappedSecret(rescue.inputs.sshPrivateKey), "the rescue check's key is a secret input");
    assert.equal(rescue.state.serverIp, mockRobotServerIp(321));
  });

  it("connects to the rescue system unpinned and pins the installed system's generated host key", async () => {
    const { resources } = await runPool();
    const hardware = byName(resources, "example-fsn-metal-fsn-metal-a-hardware");
    const install = byName(resources, "example-fsn-metal-fsn-metal-a-install");
    const ready = byName(resources, "example-fsn-metal-fsn-metal-a-ready");
    const join = byName(resources, "example-fsn-metal-fsn-metal-a-join");
    assert.equal(hardware.inputs.create, GATHER_HARDWARE_COMMAND);
    assert.equal(install.inputs.create, RESCUE_INSTALL_COMMAND);
    for (const rescueSide of [hardware, install]) {
      const connection = plain(rescueSide.inputs.connection);
      assert.equal(connection.host, mockRobotServerIp(321));
      assert.equal(connection.user, "root");
      assert.equal(connection.hostKey, undefined, "the rescue system's key changes every boot");
      assert.ok(
        isWrappedSecret((rescueSide.inputs.connection as Record<string, unknown>).privateKey) ||
          containsSecret(rescueSide.inputs.connection),
      );
    }
    // The key nodefleet generated from the member's seed, not what the install prints (never learnt from the box).
    const seed = resources.find(
      (r) => r.type === "random:index/randomPassword:RandomPassword" && r.name.startsWith("example-fsn-metal-fsn-metal-a-"),
    );
    const expectedKey = hostKeyPairFromSecret(plain<string>(seed!.state.result), "example-fsn-metal-a").publicKey;
    assert.notEqual(expectedKey, mockEd25519HostKey("example-fsn-metal-fsn-metal-a-install"));
    for (const installed of [ready, join]) {
      assert.equal(plain(installed.inputs.connection).hostKey, expectedKey);
      assert.equal(plain(installed.inputs.connection).host, mockRobotServerIp(321));
    }
    assert.equal(ready.inputs.create, readyCommand("example-fsn-metal-a"));
  });

  it("installs to the gathered drives with a shellcheck-clean secret script carrying the generated host key", async () => {
    const { resources } = await runPool();
    const install = byName(resources, "example-fsn-metal-fsn-metal-b-install");
    assert.ok(isWrappedSecret(install.inputs.stdin), "the install script carries the host's private key: a secret");
    assert.equal(install.inputs.logging, "stderr", "stdout (the public key) is not logged; the script never prints the private key");
    const script = plain<string>(install.inputs.stdin);
    assert.match(script, /cat >"\$WORK\/ssh_host_ed25519_key" <<'NODEFLEET_KEY'\n-----BEGIN OPENSSH PRIVATE KEY-----\n/);
    assert.doesNotMatch(script, /ssh-keygen/);
    assert.ok(MOCK_ROBOT_HARDWARE.includes("nvme0n1") && MOCK_ROBOT_HARDWARE.includes('"firmware":"uefi"'));
    assert.match(script, /DRIVE1 \/dev\/nvme0n1\nDRIVE2 \/dev\/nvme1n1\nSWRAID 1\n/);
    assert.match(
      script,
      /HOSTNAME example-fsn-metal-b\nPART \/boot\/efi esp 256M\nPART \/boot ext3 1024M\n/,
      "the UEFI server gets its ESP",
    );
    assert.match(script, /if \[ "\$firmware" != 'uefi' \]/, "the install checks the firmware it was rendered for");
    assert.match(script, /HOSTNAME example-fsn-metal-b\n/);
    assert.match(script, /IMAGE \/root\/\.oldroot\/nfs\/images\/Ubuntu-2404-noble-amd64-base\.tar\.gz/);
    assertShellcheckClean(script);
  });

  it("joins with a secret self-join script carrying the node's token, identity, labels and taints", async () => {
    const { resources } = await runPool();
    const join = byName(resources, "example-fsn-metal-fsn-metal-a-join");
    assert.ok(isWrappedSecret(join.inputs.stdin), "the join script is a secret");
    const script = plain<string>(join.inputs.stdin);
    assertShellcheckClean(script);
    assert.ok(script.includes("nodefleet:///example/fsn-metal-a"), "providerID");
    assert.ok(script.includes("example.com/metal=true:NoSchedule"), "taint");
    assert.ok(script.includes("node.kubernetes.io/instance-type=AX41-NVMe"), "instance type label");
    assert.ok(script.includes("topology.kubernetes.io/zone=fsn1"), "zone label");
    assert.ok(script.indexOf(`systemctl restart nodefleet-firewall.service`) >= 0, "the host firewall is loaded");
    assert.ok(script.indexOf("nodefleet-firewall.service") < script.indexOf("k0s worker: the join token"), "before the kubelet starts");
    const token = bootstrapTokenIn(script);
    assert.match(token, /^[a-z0-9]{6}\.[a-z0-9]{16}$/);
    // One token per node, never reused.
    const other = bootstrapTokenIn(plain<string>(byName(resources, "example-fsn-metal-fsn-metal-b-join").inputs.stdin));
    assert.notEqual(token, other);
  });

  it("renders kubeadm joins too", async () => {
    const { resources } = await runPool({}, { kind: "kubeadm", kubernetesVersion: "v1.33.4", k0sVersion: undefined });
    const script = plain<string>(byName(resources, "example-fsn-metal-fsn-metal-a-join").inputs.stdin);
    assertShellcheckClean(script);
    assert.match(script, /pkgs\.k8s\.io/);
  });

  it("is deterministic, and a new image is a new generation (reinstall, fresh token) for every member", async () => {
    const first = await runPool();
    const second = await runPool();
    const view = (rs: RecordedResource[]) => rs.map((r) => [r.type, r.name, JSON.stringify(resolveSecrets(r.inputs, true))]);
    assert.deepEqual(view(second.resources), view(first.resources));
    const upgraded = await runPool({ image: "ubuntu-22.04" });
    const generations = (rs: RecordedResource[]) => ofType(rs, RESCUE).map((r) => r.inputs.generation);
    for (const [a, b] of generations(first.resources).map((g, i) => [g, generations(upgraded.resources)[i]])) assert.notEqual(a, b);
    assert.match(plain<string>(byName(upgraded.resources, "example-fsn-metal-fsn-metal-a-install").inputs.stdin), /Ubuntu-2204-jammy/);
  });

  it("labels, taints and versions reach installed servers without a reinstall; other install inputs reinstall", async () => {
    const base = await runPool();
    const generations = (rs: RecordedResource[]) => ofType(rs, RESCUE).map((r) => r.inputs.generation);
    const joinTriggers = (rs: RecordedResource[]) => byName(rs, "example-fsn-metal-fsn-metal-a-join").inputs.triggers;
    const relabelled = await runPool({ labels: { "node.kubernetes.io/pool": "other" }, taints: [] });
    assert.deepEqual(generations(relabelled.resources), generations(base.resources), "labels and taints: no reinstall");
    assert.deepEqual(joinTriggers(relabelled.resources), joinTriggers(base.resources), "nor a join re-run, which cannot relabel");
    const upgraded = await runPool({}, { k0sVersion: "v1.33.5+k0s.0" });
    assert.deepEqual(generations(upgraded.resources), generations(base.resources), "a version: no reinstall");
    assert.notDeepEqual(joinTriggers(upgraded.resources), joinTriggers(base.resources), "the join re-runs and upgrades in place");
    const reimaged = await runPool({ image: "ubuntu-22.04" });
    assert.notDeepEqual(generations(reimaged.resources), generations(base.resources));

    const kubeconfig = tokenKubeconfig("abc");
    const withKubeconfig = await runPool({}, {}, { kubeconfig });
    const metadata = byName(withKubeconfig.resources, "example-fsn-metal-fsn-metal-a-node-metadata");
    const inputs = plain<{ nodeName: string; labels: Record<string, string>; taints: unknown[] }>(metadata.inputs);
    assert.equal(inputs.nodeName, "example-fsn-metal-a");
    assert.equal(inputs.labels["node.kubernetes.io/pool"], "fsn-metal");
    assert.deepEqual(inputs.taints, [{ key: "example.com/metal", value: "true", effect: "NoSchedule" }]);
    assert.equal(base.resources.filter((r) => r.name.endsWith("-node-metadata")).length, 0, "no kubeconfig (render): no Node patch");
  });

  it("no SSH command ignores its connection or script; the rescue-phase commands only read when updated", async () => {
    const options = new Map<string, { ignoreChanges?: string[] }>();
    const spec = parseFleetSpec(rawFleetConfig({ pools: [robotPoolConfig()] }));
    const { resources } = await runUnderMocks({
      stack: "test",
      config: { "nodefleet:sshPrivateKey": SSH_KEY },
      secretKeys: ["nodefleet:sshPrivateKey"],
      program: () => {
        const { kubeconfig: _k, ...c } = spec.cluster;
        new RobotNodePool(
          "example-fsn-metal",
          { cluster: c, pool: spec.pools[0] as HetznerRobotPool },
          {
            transformations: [
              (a) => {
                options.set(a.name, a.opts as { ignoreChanges?: string[] });
                return undefined;
              },
            ],
          },
        );
        return {};
      },
    });
    const commands = ofType(resources, REMOTE);
    // Per server: hardware, install, ready, join, host-firewall, retire.
    assert.equal(commands.length, 12);
    for (const c of commands) assert.deepEqual(options.get(c.name)?.ignoreChanges ?? [], [], `${c.name} ignores nothing`);
    const join = byName(resources, "example-fsn-metal-fsn-metal-a-join");
    assert.equal(join.inputs.update, RECORD_ONLY_UPDATE, "a changed connection or script alone never re-runs the join");
    const hardware = byName(resources, "example-fsn-metal-fsn-metal-a-hardware");
    const install = byName(resources, "example-fsn-metal-fsn-metal-a-install");
    assert.equal(hardware.inputs.update, GATHER_HARDWARE_COMMAND, "a changed connection re-reads the disks, nothing else");
    assert.equal(install.inputs.update, "cat /etc/ssh/ssh_host_ed25519_key.pub", "and re-reads the host key instead of reinstalling");
  });

  it("with a kubeconfig, deletes a removed member's Node after its server", async () => {
    const kubeconfig = tokenKubeconfig("very-secret");
    const { resources } = await runPool({}, {}, { kubeconfig });
    assert.deepEqual(
      resources.filter((r) => r.type === "nodefleet:kubernetes:NodeRemoval").map((r) => r.name),
      ["example-fsn-metal-a-node-removal", "example-fsn-metal-b-node-removal"],
    );
    // New members: the plugin's removal through the pool's one provider, which holds the credentials.
    const providers = resources.filter((r) => r.type === "pulumi:providers:nodefleet");
    assert.deepEqual(
      providers.map((p) => p.name),
      ["example-fsn-metal-cluster-access"],
    );
    assert.ok(isWrappedSecret(providers[0]!.inputs.credentials));
    for (const r of resources.filter((r) => r.type === "nodefleet:kubernetes:NodeRemoval"))
      assert.deepEqual(Object.keys(r.inputs), ["nodeName"], "no credentials per member");
  });

  it("gives each member a delete-only -retire that stops the node agent and deletes its credentials, pinned", async () => {
    const { resources } = await runPool();
    const retires = ofType(resources, REMOTE).filter((r) => r.name.endsWith("-retire"));
    assert.deepEqual(
      retires.map((r) => r.name),
      ["example-fsn-metal-fsn-metal-a-retire", "example-fsn-metal-fsn-metal-b-retire"],
    );
    for (const retire of retires) {
      assert.equal(retire.inputs.create, undefined, "no SSH session before the member leaves");
      assert.equal(retire.inputs.update, undefined);
      assert.equal(retire.inputs.triggers, undefined, "a reinstall keeps it: it runs only when the member leaves");
      const script = String(retire.inputs.delete);
      assert.match(script, /systemctl disable --now k0sworker\.service/);
      assert.match(script, /rm -rf .*\/var\/lib\/k0s\/kubelet\.conf.*\/etc\/k0s\/join-token/);
      assert.ok(script.indexOf("systemctl disable") < script.indexOf("rm -rf"), "stopped before its credentials go");
      const connection = plain<Record<string, unknown>>(retire.inputs.connection);
      assert.ok(connection.hostKey, "pinned to the installed system's host key");
      assert.equal(connection.dialErrorLimit, 10);
    }
  });

  it("is declared by the Fleet for hetzner-robot pools, next to the other pools", async () => {
    const { resources, outputs } = await runUnderMocks({
      stack: "test",
      config: rawFleetConfig({ pools: [robotPoolConfig({ servers: [{ serverNumber: 777, name: "solo" }] })] }),
      program: () => runProgram({ allowMissingKubeconfig: true }),
    });
    assert.deepEqual(
      ofType(resources, RESCUE).map((r) => r.name),
      ["example-fsn-metal-fsn-metal-solo-rescue"],
    );
    // No Robot credentials configured (render): none on the provider either; the plugin would read its environment.
    const rescue = ofType(resources, RESCUE)[0]!;
    assert.equal(rescue.inputs.credentials, undefined);
    assert.equal(ofType(resources, PROVIDER)[0]!.inputs.robotCredentials, undefined);
    const nodes = plain<Array<Record<string, unknown>>>(outputs.nodes);
    assert.deepEqual(
      nodes.map((n) => [n.hostname, n.providerID, n.serverId, n.ipv4]),
      [["example-fsn-metal-solo", "nodefleet:///example/fsn-metal-solo", rescue.id, mockRobotServerIp(777)]],
    );
  });
});

describe("robotNodePool: the installed system's host key, generated beforehand for new installs only", () => {
  it("new members and reinstalls get a generated key; an existing install keeps what it was created with", () => {
    const member = (generation: string, installHostKey?: "generated") => ({
      nodeId: "a",
      generation,
      joinInputs: "j",
      ready: true,
      ...(installHostKey ? { installHostKey } : {}),
    });
    assert.equal(installsWithGeneratedHostKey(undefined, undefined, "a", "g1"), true, "a first run");
    assert.equal(installsWithGeneratedHostKey(undefined, "dynamic", "a", "g1"), false, "a pool recorded without rollouts");
    assert.equal(installsWithGeneratedHostKey([], undefined, "a", "g1"), true, "a new member");
    assert.equal(installsWithGeneratedHostKey([member("g1")], undefined, "a", "g1"), false, "an install of an earlier release");
    assert.equal(installsWithGeneratedHostKey([member("g0")], undefined, "a", "g1"), true, "its reinstall");
    assert.equal(installsWithGeneratedHostKey([member("g1", "generated")], undefined, "a", "g1"), true, "an install of this release");
  });

  it("an existing member's install keeps its inputs: no seed, the script generates the key, the pin is what it printed", async () => {
    const spec = parseFleetSpec(rawFleetConfig({ pools: [robotPoolConfig()] }));
    const current = robotMembers(spec.cluster, spec.pools[0] as HetznerRobotPool).map((m) => ({
      nodeId: m.member.nodeId,
      generation: m.generation,
      joinInputs: m.joinInputs,
      ready: true,
      memberResources: "plugin-all" as const,
    }));
    const { resources, outputs } = await runPool({}, {}, { current });
    assert.equal(resources.filter((r) => r.type.startsWith("random:")).length, 0);
    const install = byName(resources, "example-fsn-metal-fsn-metal-a-install");
    assert.ok(!containsSecret(install.inputs.stdin), "the script of earlier releases, no secret in it");
    assert.match(plain<string>(install.inputs.stdin), /ssh-keygen -q -t ed25519/);
    const ready = byName(resources, "example-fsn-metal-fsn-metal-a-ready");
    assert.equal(plain(ready.inputs.connection).hostKey, mockEd25519HostKey("example-fsn-metal-fsn-metal-a-install"));
    const nodes = plain<Array<Record<string, unknown>>>(outputs.nodes);
    assert.ok(nodes.every((n) => n.installHostKey === undefined));
  });
});

describe("robotNodePool: pure helpers", () => {
  it("reads the installed host key from the install output, failing closed", () => {
    const key = mockEd25519HostKey("x");
    assert.equal(installedHostKey(`noise\n${key}\n`), key);
    assert.equal(installedHostKey(undefined), UNKNOWN_INSTALLED_HOST_KEY);
    assert.equal(installedHostKey("ssh-rsa AAAAB3 nope"), UNKNOWN_INSTALLED_HOST_KEY);
  });

  it("resets only with the types the server offers, sw before hw, never power (an ACPI button press)", () => {
    assert.deepEqual(rescueResetLadder(["sw", "hw", "man"]), ["sw", "hw"]);
    assert.deepEqual(rescueResetLadder(["hw", "power", "sw"]), ["sw", "hw"]);
    assert.deepEqual(rescueResetLadder(["sw", "power"]), ["sw"]);
    assert.throws(() => rescueResetLadder(["power", "man"]), /neither an sw nor an hw reset \(only power, man\)/);
  });

  /** A server whose SSH port answers `upFor` probes after each reset (Infinity: never goes down). */
  function fakeServer(initiallyUp: boolean, downAfter: Record<string, number>) {
    const calls: string[] = [];
    let up = initiallyUp;
    let countdown = Infinity;
    return {
      calls,
      io: {
        reset: async (type: string) => {
          calls.push(`reset ${type}`);
          countdown = downAfter[type] ?? Infinity;
        },
        answers: async () => {
          if (countdown-- <= 0) up = false;
          calls.push(`probe ${up ? "up" : "down"}`);
          return up;
        },
        sleep: async (ms: number) => {
          calls.push(`sleep ${ms}`);
        },
        waitSeconds: 20,
        probeSeconds: 5,
      },
    };
  }

  it("a clean sw reboot ends the ladder once the installed system goes down", async () => {
    const server = fakeServer(true, { sw: 1 });
    assert.deepEqual(await resetAlongLadder(["sw", "hw"], server.io), ["sw"]);
    assert.deepEqual(server.calls, ["probe up", "reset sw", "sleep 5000", "probe up", "sleep 5000", "probe down"]);
  });

  it("escalates to hw when the system still answers after the wait, and starts at hw when it answers nothing", async () => {
    const stuck = fakeServer(true, { hw: 0 });
    assert.deepEqual(await resetAlongLadder(["sw", "hw"], stuck.io), ["sw", "hw"]);
    assert.equal(stuck.calls.filter((c) => c === "sleep 5000").length, 4, "waits the whole 20 s before escalating");
    const hung = fakeServer(false, {});
    assert.deepEqual(await resetAlongLadder(["sw", "hw"], hung.io), ["hw"]);
    const onlySw = fakeServer(false, {});
    assert.deepEqual(await resetAlongLadder(["sw"], onlySw.io), ["sw"], "sw is tried when it is all the server offers");
  });
});

describe("robotNodePool: the rescue provider, serialized, against a fake Robot", () => {
  let robot: FakeRobot;
  beforeEach(async () => {
    robot = await startFakeRobot([321]);
  });
  afterEach(async () => {
    await robot.close();
  });
  const inputs = (overrides: Partial<RobotRescueState> = {}): RobotRescueState => ({
    serverNumber: 321,
    fingerprints: [FINGERPRINT],
    generation: "abc123",
    baseUrl: robot.baseUrl,
    credentials: JSON.stringify({ user: FAKE_ROBOT_USER, password: FAKE_ROBOT_PASSWORD }),
    ...overrides,
  });

  /** A local TCP listener standing in for the installed system's sshd; `close` takes it down. */
  async function fakeSshd(): Promise<{ address: string; close: () => Promise<void> }> {
    const server = net.createServer((socket) => socket.destroy());
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as net.AddressInfo;
    return { address: `127.0.0.1:${port}`, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
  }

  /** An address nothing listens on: a hung or powered-off server. */
  async function deadAddress(): Promise<string> {
    const sshd = await fakeSshd();
    await sshd.close();
    return sshd.address;
  }

  it("create: a server that answers gets the clean sw reboot, and the ladder stops once it goes down", async () => {
    const sshd = await fakeSshd();
    robot.onReset = (_n, type) => {
      if (type === "sw") void sshd.close();
    };
    await withSerializedProvider(robotRescueProvider, async (provider) => {
      const created = await provider.create!(inputs({ probe: sshd.address, resetWaitSeconds: 30 }));
      assert.equal(created.outs.resetType, "sw");
      assert.deepEqual(robot.resets.get(321), ["sw"]);
    });
  });

  it("create: a server still answering after the wait is reset with hw (never power)", async () => {
    const sshd = await fakeSshd();
    try {
      await withSerializedProvider(robotRescueProvider, async (provider) => {
        const created = await provider.create!(inputs({ probe: sshd.address, resetWaitSeconds: 5 }));
        assert.equal(created.outs.resetType, "sw,hw");
        assert.deepEqual(robot.resets.get(321), ["sw", "hw"]);
      });
    } finally {
      await sshd.close();
    }
  });

  it("create activates rescue with the fingerprints and resets a silent server with hw; delete deactivates it", async () => {
    const dead = await deadAddress();
    await withSerializedProvider(robotRescueProvider, async (provider) => {
      const created = await provider.create!(inputs({ probe: dead }));
      assert.equal(created.id, "321");
      assert.equal(created.outs.serverIp, fakeServerIp(321));
      assert.equal(created.outs.resetType, "hw");
      assert.ok(!JSON.stringify(created.outs).includes("rescue-root-password"), "the rescue root password is not kept");
      assert.deepEqual(robot.rescue.get(321), [FINGERPRINT]);
      assert.deepEqual(robot.resets.get(321), ["hw"]);
      await provider.delete!("321", created.outs);
      assert.equal(robot.rescue.has(321), false);
    });
  });

  it("deletes a rescue activation still pending from an earlier attempt before activating its own", async () => {
    robot.rescue.set(321, ["00:11:22:33:44:55:66:77:88:99:aa:bb:cc:dd:ee:ff"]);
    const dead = await deadAddress();
    await withSerializedProvider(robotRescueProvider, async (provider) => {
      await provider.create!(inputs({ probe: dead }));
      const boot = robot.requests.filter((r) => r.path === "/boot/321/rescue").map((r) => r.method);
      assert.deepEqual(boot, ["GET", "DELETE", "POST"]);
      assert.deepEqual(robot.rescue.get(321), [FINGERPRINT]);
    });
  });

  it("diff replaces (delete first) on a new generation or keys, updates in place on new credentials", async () => {
    await withSerializedProvider(robotRescueProvider, async (provider) => {
      const olds = inputs();
      const gen = await provider.diff!("321", olds, inputs({ generation: "zzz999" }));
      assert.deepEqual([gen.changes, gen.replaces, gen.deleteBeforeReplace], [true, ["generation"], true]);
      const keys = await provider.diff!("321", olds, inputs({ fingerprints: ["aa:bb:cc:dd:ee:ff:00:11:22:33:44:55:66:77:88:99"] }));
      assert.deepEqual(keys.replaces, ["fingerprints"]);
      const creds = await provider.diff!("321", olds, inputs({ credentials: JSON.stringify({ user: "u2", password: "p2" }) }));
      assert.deepEqual([creds.changes, creds.replaces], [true, []]);
      const same = await provider.diff!("321", olds, inputs());
      assert.equal(same.changes, false);
      const updated = await provider.update!("321", { ...olds, serverIp: "198.51.100.1", resetType: "hw" }, inputs({ credentials: "{}" }));
      assert.equal(updated.outs.serverIp, "198.51.100.1");
      assert.equal(robot.requests.length, 0, "diff and update call nothing");
    });
  });

  it("fails without credentials naming the variables, and never leaks the password on errors", async () => {
    await withSerializedProvider(robotRescueProvider, async (provider) => {
      await assert.rejects(provider.create!(inputs({ credentials: "" })), /HROBOT_USER and HROBOT_PASSWORD/);
      await assert.rejects(provider.create!(inputs({ serverNumber: 999 })), (err: Error) => {
        assert.match(err.message, /SERVER_NOT_FOUND/);
        assert.ok(!`${err.message}${err.stack}`.includes(FAKE_ROBOT_PASSWORD));
        return true;
      });
      // Deleting a member with no credentials (render-only state) or an unknown server is not an error.
      await provider.delete!("999", inputs({ credentials: "" }));
      await provider.delete!("999", inputs({ serverNumber: 999 }));
    });
  });
});
