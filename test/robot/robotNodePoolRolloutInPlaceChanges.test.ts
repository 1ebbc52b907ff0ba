/**
 * Changes that reach the running members of a Hetzner Robot pool of six servers, across two runs of
 * the pool under mocks (the second gets the first run's `nodes`, every Node Ready): what the engine
 * would step between them (test/support/mockEngineSteps.ts). Labels and taints are a Node patch and
 * nothing runs on the machines; a cluster-firewall change reloads only the host firewall, on every
 * member; a version re-joins within maxUnavailable.
 */
import { strict as assert } from "node:assert";
import type * as pulumi from "@pulumi/pulumi";
import { type FirewallSpec, type HetznerRobotPool, firewallSchema, parseFleetSpec } from "../../components/fleet/fleetSpec";
import { currentInPlaceMembers } from "../../components/fleet/inPlaceMembers";
import type { InPlaceRolloutSummary } from "../../components/fleet/rolloutPlan";
import { RobotNodePool } from "../../components/robot/robotNodePool";
import { clusterConfig, rawFleetConfig } from "../support/fleetConfigFixture";
import {
  ADDED_LABELS,
  OPENED_NODE_PORTS,
  type SteppedMockRun,
  assertOnlyHostFirewallReloads,
  assertOnlyNodePatches,
  engineSteps,
  reportedNodes,
  runPoolRecordingIgnoreChanges,
} from "../support/mockEngineSteps";
import { tokenKubeconfig } from "../support/tokenKubeconfig";

const FINGERPRINT = "15:28:b0:03:95:f0:77:b3:10:56:15:6b:77:22:a5:bb";
const POOL = "fsn-metal";
const SERVERS = Array.from({ length: 6 }, (_, i) => ({ serverNumber: 100 + i, name: `s${i}` }));
const NODE_IDS = SERVERS.map((s) => `${POOL}-${s.name}`);
const PREFIX = `example-${POOL}-`;
const MEMBERS = NODE_IDS.map((id) => `${PREFIX}${id}`);

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
      pools: [
        { name: POOL, provider: "hetzner-robot", mode: "static", servers: SERVERS, sshKeyFingerprints: [FINGERPRINT], ...change.pool },
      ],
    }),
  );
  const { kubeconfig: _k, ...cluster } = spec.cluster;
  const reported = previous ? reportedNodes(previous) : undefined;
  const current = reported ? currentInPlaceMembers(reported.nodes, POOL, reported.ready) : undefined;
  return runPoolRecordingIgnoreChanges(() => {
    const pool = new RobotNodePool(`example-${POOL}`, {
      cluster,
      pool: spec.pools[0] as HetznerRobotPool,
      kubeconfig: tokenKubeconfig("t0ken"),
      firewall: firewallSchema.parse(change.firewall ?? {}),
      ...(current ? { current } : {}),
    });
    return { nodes: pool.nodes, rollout: pool.rolloutSummary } as unknown as pulumi.Input<Outputs>;
  }) as Promise<Run>;
}

describe("RobotNodePool changes that reach running members (mock runtime, engine steps between runs)", function () {
  this.timeout(600_000);

  it("a label or taint change patches every Node and runs no join, no reinstall, no drain", async () => {
    const first = await up({});
    assertOnlyNodePatches(first, await up({ pool: ADDED_LABELS }, first), MEMBERS);
  });

  it("a cluster-firewall change reloads only the host firewall, on every member at once, and restarts nothing", async () => {
    const first = await up({});
    assertOnlyHostFirewallReloads(first, await up({ firewall: OPENED_NODE_PORTS }, first), MEMBERS);
  });

  it("a version change still re-joins within maxUnavailable: two joins replaced, the others same", async () => {
    const first = await up({});
    const upgraded = await up({ k0sVersion: "v1.33.5+k0s.0", pool: { rollout: { maxUnavailable: 2 } } }, first);
    const steps = engineSteps(first, upgraded);
    const joins = steps.filter((s) => s.endsWith("-join"));
    assert.deepEqual(
      joins,
      NODE_IDS.slice(0, 2).map((id) => `replace ${PREFIX}${id}-join`),
      `joins: ${joins.join(", ")}`,
    );
    assert.equal(steps.filter((s) => s.includes("-drain")).length, 2, "each drained first");
    assert.deepEqual(
      steps.filter((s) => /-(rescue|hardware|install|ready|host-firewall)$/.test(s)),
      [],
      "no reinstall, no firewall reload",
    );
    assert.deepEqual(
      upgraded.outputs.rollout.updating.map((u) => u.change),
      ["re-join", "re-join"],
    );
    assert.equal(upgraded.outputs.rollout.remaining, 4);
  });
});
