/**
 * Upstream's command provider (pulumi-command v1.2.1) keeps a script's stdout and stderr plain in
 * the state, shows the streams `logging` names in the engine's log and quotes the whole output in an
 * error, whatever the script saw: a secret stdin does not make them secret (toolchain/providers/
 * FIDELITY.md, command rows). So no script nodefleet renders may print a secret. This test renders
 * every remote.Command the program declares (Robot and Elastic Metal members, both cluster kinds,
 * both Elastic Metal join paths) under mocks with known secrets, runs each on a fake node as its
 * command would run it, and finds no secret, nor its base64, in what the scripts printed (the state's
 * stdout/stderr, the engine's log and any error are made of that), in their clear inputs, or in the
 * stack's outputs.
 */
import { strict as assert } from "node:assert";
import { spawn } from "node:child_process";
import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import * as hcloud from "@pulumi/hcloud";
import { join, relative } from "node:path";
import { type RecordedResource, runUnderMocks } from "../../automation/mocks/runUnderMocks";
import { scalewayLookup } from "../../automation/mocks/scalewayLookups";
import { isWrappedSecret, mapSecrets, resolveSecrets } from "../../automation/mocks/secretValues";
import { apiMembersGuard } from "../../components/hcloud/apiMembersGuard";
import { K0S_TOKEN_FILE } from "../../components/bootstrap/k0sWorkerCloudConfig";
import { parseFleetSpec } from "../../components/fleet/fleetSpec";
import { RobotNodePool } from "../../components/robot/robotNodePool";
import { ElasticMetalNodePool } from "../../components/scaleway/elasticMetalNodePool";
import { FAKE_ROBOT_PASSWORD, FAKE_ROBOT_USER } from "../support/fakeRobot";
import { elasticMetalPoolConfig, rawFleetConfig } from "../support/fleetConfigFixture";
import { FakeNode } from "../support/nodeShims";
import { tokenKubeconfig } from "../support/tokenKubeconfig";

const REPO = join(__dirname, "..", "..", "..");
const COMMAND_TYPES = new Set(["command:remote:Command", "command:local:Command"]);
const SSH_KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAAsecretsshkey\n-----END OPENSSH PRIVATE KEY-----\n";
const KUBECONFIG_TOKEN = "kubeconfig-bearer-token-0123456789";
/** Shorter wrapped secrets are not searched for: a bootstrap token's public id (6 characters) sits in a secret map. */
const MIN_SECRET_LENGTH = 12;

/** The files that declare Commands; a new one must join the scenarios below. */
const COMMAND_DECLARERS = [
  "components/bootstrap/hostFirewallCommand.ts",
  "components/hcloud/apiMembersGuard.ts",
  "components/robot/robotNodePool.ts",
  "components/scaleway/elasticMetalNodePool.ts",
];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return name.endsWith(".ts") ? [path] : [];
  });
}

/** Every string inside a wrapped secret, anywhere in value. */
function secretLeaves(value: unknown, into: Set<string>, inSecret = false): void {
  if (isWrappedSecret(value)) return secretLeaves(value.value, into, true);
  if (typeof value === "string") {
    if (inSecret && value.length >= MIN_SECRET_LENGTH) into.add(value);
  } else if (Array.isArray(value)) value.forEach((v) => secretLeaves(v, into, inSecret));
  else if (typeof value === "object" && value !== null) Object.values(value).forEach((v) => secretLeaves(v, into, inSecret));
}

const plain = (value: unknown) => resolveSecrets(value, true) as Record<string, unknown>;

/** How the command's script runs on the machine: `bash -s` (or `sudo -n bash -s`) reads it from stdin. */
function scriptOf(command: string, stdin: string | undefined): string {
  return /(^|\s)bash -s\b/.test(command) && stdin !== undefined ? stdin : command;
}

interface Scenario {
  readonly title: string;
  readonly declare: () => unknown;
}

const kubeadm = { kind: "kubeadm", kubernetesVersion: "v1.33.4", k0sVersion: undefined };
const robotPool = {
  name: "fsn-metal",
  provider: "hetzner-robot",
  mode: "static",
  servers: [{ serverNumber: 321, name: "a" }],
  sshKeyFingerprints: ["15:28:b0:03:95:f0:77:b3:10:56:15:6b:77:22:a5:bb"],
  labels: { "node.kubernetes.io/pool": "fsn-metal" },
};

function scenarios(): Scenario[] {
  const kubeconfig = tokenKubeconfig(KUBECONFIG_TOKEN);
  const robot = (cluster: Record<string, unknown>) => () => {
    const spec = parseFleetSpec(rawFleetConfig({ cluster, pools: [robotPool] }));
    const { kubeconfig: _k, ...c } = spec.cluster;
    const pool = spec.pools[0];
    if (pool?.provider !== "hetzner-robot") throw new Error("fixture must be a Robot pool");
    return { nodes: new RobotNodePool("example-fsn-metal", { cluster: c, pool, kubeconfig }).nodes };
  };
  const elasticMetal = (cluster: Record<string, unknown>, overrides: Record<string, unknown>) => () => {
    const spec = parseFleetSpec(rawFleetConfig({ cluster, pools: [elasticMetalPoolConfig(overrides)] }));
    const { kubeconfig: _k, ...c } = spec.cluster;
    const pool = spec.pools[0];
    if (pool?.provider !== "scaleway-elastic-metal") throw new Error("fixture must be an Elastic Metal pool");
    return { nodes: new ElasticMetalNodePool("example-kura", { cluster: c, pool, kubeconfig }).nodes };
  };
  return [
    { title: "Robot, k0s", declare: robot({}) },
    { title: "Robot, kubeadm", declare: robot(kubeadm) },
    { title: "Elastic Metal over SSH, k0s", declare: elasticMetal({}, {}) },
    { title: "Elastic Metal over SSH, kubeadm", declare: elasticMetal(kubeadm, {}) },
    // An offer Scaleway tags cloud-init (elasticMetalOffers.ts): the VLAN delivery and the cloud-init join.
    { title: "Elastic Metal by cloud-init, k0s", declare: elasticMetal({}, { offer: "EM-A610R-NVME" }) },
  ];
}

describe("rendered scripts print no secret (upstream keeps a command's output plain)", function () {
  this.timeout(300_000);

  it("knows every file that declares a Command", () => {
    const declarers = ["components", "stacks", "automation"]
      .flatMap((dir) => sourceFiles(join(REPO, dir)))
      .filter((file) => /from "@pulumi\/command"/.test(readFileSync(file, "utf8")))
      .map((file) => relative(REPO, file))
      .sort();
    assert.deepEqual(declarers, COMMAND_DECLARERS);
  });

  it("the fleet's teardown guard: its check never prints the Hetzner token it holds", async () => {
    const token = "hcloud-token-".padEnd(64, "x");
    const answers = [
      { status: 200, body: { servers: [{ name: "example-burst-1" }], meta: { pagination: { total_entries: 1 } } } },
      { status: 401, body: { error: { code: "unauthorized", message: "unable to authenticate" } } },
    ];
    for (const answer of answers) {
      const server = createServer((_request, response) =>
        response.writeHead(answer.status, { "content-type": "application/json" }).end(JSON.stringify(answer.body)),
      );
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      try {
        const { resources } = await runUnderMocks({
          stack: "test",
          config: { "hcloud:token": token, "hcloud:endpoint": `http://127.0.0.1:${(server.address() as AddressInfo).port}` },
          secretKeys: ["hcloud:token"],
          program: () => {
            const network = new hcloud.Network("net", { ipRange: "10.0.0.0/16" });
            const subnet = new hcloud.NetworkSubnet("subnet", {
              networkId: 1,
              type: "cloud",
              networkZone: "eu-central",
              ipRange: "10.0.1.0/24",
            });
            const firewall = new hcloud.Firewall("fw", {});
            apiMembersGuard("guard", { cluster: { id: "example" }, staticPools: ["general"], firewall, network, subnet });
            return {};
          },
        });
        const guard = resources.find((r) => r.type === "command:local:Command")!;
        const inputs = plain(guard.inputs) as { delete: string; environment: Record<string, string> };
        assert.equal(inputs.environment.HCLOUD_TOKEN, token, "the guard holds the token");
        // Asynchronously: the stand-in API answers from this process's event loop.
        const run = await new Promise<{ code: number | null; printed: string }>((resolve) => {
          const child = spawn("sh", ["-c", inputs.delete], { env: { PATH: process.env.PATH, ...inputs.environment }, timeout: 30_000 });
          let printed = "";
          child.stdout.on("data", (chunk: Buffer) => (printed += chunk.toString()));
          child.stderr.on("data", (chunk: Buffer) => (printed += chunk.toString()));
          child.on("close", (code) => resolve({ code, printed }));
        });
        assert.notEqual(run.code, 0, `the check fails on HTTP ${answer.status}`);
        const { printed } = run;
        assert.match(printed, answer.status === 200 ? /example-burst-1/ : /HTTP 401/);
        assert.ok(!printed.includes(token) && !printed.includes(Buffer.from(token).toString("base64")), printed);
      } finally {
        await new Promise((resolve) => server.close(resolve));
      }
    }
  });

  for (const scenario of scenarios()) {
    it(`${scenario.title}: no script prints a secret, and none sits in a clear input or an output`, async () => {
      const { resources, outputs } = await runUnderMocks({
        stack: "test",
        config: {
          "nodefleet:sshPrivateKey": SSH_KEY,
          "nodefleet:hrobotUser": FAKE_ROBOT_USER,
          "nodefleet:hrobotPassword": FAKE_ROBOT_PASSWORD,
        },
        secretKeys: ["nodefleet:sshPrivateKey", "nodefleet:hrobotPassword"],
        call: (args) => scalewayLookup(args) ?? args.inputs,
        program: scenario.declare,
      });
      const commands = resources.filter((r) => COMMAND_TYPES.has(r.type));
      const secrets = new Set<string>([SSH_KEY, FAKE_ROBOT_PASSWORD, KUBECONFIG_TOKEN]);
      for (const r of resources.filter((r) => !COMMAND_TYPES.has(r.type))) secretLeaves(r.inputs, secrets);
      // The plugin's bootstrap tokens: an output, a secret in the state (the engine applies additionalSecretOutputs).
      for (const r of resources.filter((r) => r.type === "nodefleet:kubernetes:NodeBootstrapToken")) secrets.add(String(r.state.token));
      const joins = commands.filter((c) => c.name.endsWith("-join"));
      assert.ok(joins.length > 0, "the scenario declares a join");
      for (const join of joins) {
        // The join's stdin carries the bootstrap token (or, for k0s, the join token made from it).
        const stdin = String(plain(join.inputs).stdin ?? "");
        const k0sToken = new RegExp(`write_file '${K0S_TOKEN_FILE}' 0600 <<'(\\w+)'\n([^\n]+)\n`).exec(stdin);
        if (k0sToken) secrets.add(k0sToken[2]!);
      }
      const needles = [...secrets].flatMap((s) => [s, Buffer.from(s).toString("base64")]);
      const leaked = (text: string) => needles.filter((n) => text.includes(n)).map((n) => `${n.slice(0, 12)}…`);
      const tokenSecrets = [...secrets].filter((s) => joins.some((j) => String(plain(j.inputs).stdin ?? "").includes(s)));
      assert.ok(tokenSecrets.length > 0, `a secret reaches a join script (else this test finds nothing): ${[...secrets].length} secrets`);

      for (const c of commands) assertNothingClear(c, leaked);
      assert.deepEqual(leaked(JSON.stringify(resolveSecrets(outputs, false))), [], "the stack's outputs show no secret in clear");

      for (const c of commands) {
        const inputs = plain(c.inputs);
        const stdin = typeof inputs.stdin === "string" ? inputs.stdin : undefined;
        for (const step of ["create", "update", "delete"] as const) {
          if (typeof inputs[step] !== "string") continue;
          // This machine's own cloud-init must not be waited for.
          const node = new FakeNode({ "cloud-init": "exit 0" });
          try {
            if (/-(hardware|install)$/.test(c.name)) {
              // The rescue system these run in (the scripts refuse any other machine).
              writeFileSync(join(node.state, "hostname"), "rescue");
              node.write("/root/.oldroot/nfs/.keep", "");
            }
            const run = node.run(scriptOf(inputs[step], stdin));
            const printed = `${run.stdout}\n${run.stderr}`;
            assert.deepEqual(leaked(printed), [], `${c.name} ${step} printed a secret:\n${printed}`);
            assert.doesNotMatch(printed, /PRIVATE KEY/, `${c.name} ${step} printed a private key`);
            if (step === "create" && c.name.endsWith("-join") && stdin?.includes(tokenSecrets[0]!) === true) {
              // The run went through the token's use: the test looked at a complete join.
              assert.equal(run.status, 0, `${c.name} joins on the fake node:\n${printed}`);
            }
          } finally {
            node.dispose();
          }
        }
      }
    });
  }
});

/** A Command's inputs outside secrets (the state keeps them in clear; an error quotes the script) hold no secret. */
function assertNothingClear(c: RecordedResource, leaked: (text: string) => string[]): void {
  const clear = JSON.stringify(mapSecrets(c.inputs, () => "[secret]"));
  assert.deepEqual(leaked(clear), [], `${c.name}: a secret in a clear input`);
}
