/**
 * Changes that reach the running members of a Hetzner Robot pool of six servers, across two runs of
 * the pool under mocks (the second gets the first run's `nodes`, every Node Ready): what the engine
 * would step between them (test/support/mockEngineSteps.ts). Labels and taints are a Node patch and
 * nothing runs on the machines; a cluster-firewall change reloads only the host firewall, on every
 * member; a version re-joins within maxUnavailable.
 */
import { strict as assert } from "node:assert";
import type * as pulumi from "@pulumi/pulumi";
import { resolveSecrets } from "../../automation/mocks/secretValues";
import { type FirewallSpec, type HetznerRobotPool, firewallSchema, parseFleetSpec } from "../../components/fleet/fleetSpec";
import { currentInPlaceMembers } from "../../components/fleet/inPlaceMembers";
import type { InPlaceRolloutSummary } from "../../components/fleet/rolloutPlan";
import { RobotNodePool } from "../../components/robot/robotNodePool";
import { clusterConfig, rawFleetConfig } from "../support/fleetConfigFixture";
import { type SteppedMockRun, engineSteps, runRecordingIgnoreChanges } from "../support/mockEngineSteps";
import { tokenKubeconfig } from "../support/tokenKubeconfig";

const FINGERPRINT = "15:28:b0:03:95:f0:77:b3:10:56:15:6b:77:22:a5:bb";
const SSH_KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAAexample\n-----END OPENSSH PRIVATE KEY-----\n";
const POOL = "fsn-metal";
const SERVERS = Array.from({ length: 6 }, (_, i) => ({ serverNumber: 100 + i, name: `s${i}` }));
const NODE_IDS = SERVERS.map((s) => `${POOL}-${s.name}`);
const PREFIX = `example-${POOL}-`;

interface Change {
  readonly k0sVersion?: string;
  readonly pool?: Record<string, unknown>;
  readonly firewall?: Partial<FirewallSpec>;
}
type Outputs = { nodes: Array<Record<string, unknown>>; rollout: InPlaceRolloutSummary };
type Run = SteppedMockRun<Outputs>;

/** One run of the pool as `change` wants it, starting from `previous` (a run's outputs) when given. */
async function up(change: Change, previous?: Run): Promise<Run> {
  const spec = parseFleetSpec(
    rawFleetConfig({
      cluster: clusterConfig({ k0sVersion: change.k0sVersion ?? "v1.33.4+k0s.0" }),
      pools: [{ name: POOL, provider: "hetzner-robot", mode: "static", servers: SERVERS, sshKeyFingerprints: [FINGERPRINT], ...change.pool }],
    }),
  );
  const { kubeconfig: _k, ...cluster } = spec.cluster;
  const nodes = previous ? (resolveSecrets(previous.outputs.nodes, true) as Array<Record<string, unknown>>) : undefined;
  const current = nodes ? currentInPlaceMembers(nodes, POOL, new Set(nodes.map((n) => String(n.hostname)))) : undefined;
  return runRecordingIgnoreChanges({
    stack: "test",
    config: { "nodefleet:sshPrivateKey": SSH_KEY },
    secretKeys: ["nodefleet:sshPrivateKey"],
    program: () => {
      const pool = new RobotNodePool(`example-${POOL}`, {
        cluster,
        pool: spec.pools[0] as HetznerRobotPool,
        kubeconfig: tokenKubeconfig("t0ken"),
        firewall: firewallSchema.parse(change.firewall ?? {}),
        ...(current ? { current } : {}),
      });
      return { nodes: pool.nodes, rollout: pool.rolloutSummary } as unknown as pulumi.Input<Outputs>;
    },
  }) as Promise<Run>;
}

const inputsOf = (run: Run, name: string) => {
  const found = run.resources.find((r) => r.name === name);
  assert.ok(found, `no resource named ${name}`);
  return resolveSecrets(found.inputs, true) as Record<string, unknown>;
};

describe("RobotNodePool changes that reach running members (mock runtime, engine steps between runs)", function () {
  this.timeout(600_000);

  it("a label or taint change patches every Node and runs no join, no reinstall, no drain", async () => {
    const first = await up({});
    const relabelled = await up({ pool: { labels: { "example.com/team": "build" }, taints: [{ key: "example.com/dedicated", value: "ci", effect: "NoSchedule" }] } }, first);
    const steps = engineSteps(first, relabelled);
    assert.deepEqual(steps, NODE_IDS.map((id) => `update ${PREFIX}${id}-node-metadata`), `only the Node patches: ${steps.join(", ")}`);
    assert.deepEqual(relabelled.outputs.rollout, { pool: POOL, inPlace: true, updating: [], remaining: 0 }, "nothing to roll");
    for (const id of NODE_IDS) {
      const metadata = inputsOf(relabelled, `${PREFIX}${id}-node-metadata`);
      assert.equal((metadata.labels as Record<string, string>)["example.com/team"], "build", `${id}: the label reaches its Node`);
      assert.deepEqual(metadata.taints, [{ key: "example.com/dedicated", value: "ci", effect: "NoSchedule" }]);
    }
  });

  it("a cluster-firewall change reloads only the host firewall, on every member at once, and restarts nothing", async () => {
    const first = await up({});
    const opened = await up({ firewall: { nodePortSources: ["198.51.100.0/24"] } }, first);
    const steps = engineSteps(first, opened);
    assert.deepEqual(steps, NODE_IDS.map((id) => `update ${PREFIX}${id}-host-firewall`), `only the host firewalls: ${steps.join(", ")}`);
    for (const id of NODE_IDS) {
      const script = String(inputsOf(opened, `${PREFIX}${id}-host-firewall`).stdin);
      assert.match(script, /ip saddr \{ 198\.51\.100\.0\/24 \} tcp dport 30000-32767 accept/, `${id} gets the new rule`);
      assert.doesNotMatch(script, /restart kubelet|k0s (install|start)|join token/i, "no kubelet or k0s restart, no token");
      assert.match(script, /systemctl restart nodefleet-firewall\.service/);
    }
    assert.deepEqual(opened.outputs.rollout.updating, [], "no member is drained for it");
  });

  it("a version change still re-joins within maxUnavailable: two joins replaced, the others same", async () => {
    const first = await up({});
    const upgraded = await up({ k0sVersion: "v1.33.5+k0s.0", pool: { rollout: { maxUnavailable: 2 } } }, first);
    const steps = engineSteps(first, upgraded);
    const joins = steps.filter((s) => s.endsWith("-join"));
    assert.deepEqual(joins, NODE_IDS.slice(0, 2).map((id) => `replace ${PREFIX}${id}-join`), `joins: ${joins.join(", ")}`);
    assert.equal(steps.filter((s) => s.includes("-drain")).length, 2, "each drained first");
    assert.deepEqual(steps.filter((s) => /-(rescue|hardware|install|ready|host-firewall)$/.test(s)), [], "no reinstall, no firewall reload");
    assert.deepEqual(upgraded.outputs.rollout.updating.map((u) => u.change), ["re-join", "re-join"]);
    assert.equal(upgraded.outputs.rollout.remaining, 4);
  });
});
