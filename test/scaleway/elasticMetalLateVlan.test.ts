import { strict as assert } from "node:assert";
import type * as pulumi from "@pulumi/pulumi";
import { isUnknown } from "@pulumi/pulumi/output";
import { deterministicOutputs } from "../../automation/mocks/deterministicOutputs";
import { runUnderMocks } from "../../automation/mocks/runUnderMocks";
import { scalewayLookup } from "../../automation/mocks/scalewayLookups";
import { resolveSecrets } from "../../automation/mocks/secretValues";
import { ElasticMetalNodePool } from "../../components/scaleway/elasticMetalNodePool";
import {
  DEFAULT_VLAN_WAIT_SECONDS,
  ELASTIC_METAL_SERVER_TIMEOUT_MINUTES,
  VLAN_WAIT_ENV,
  attachmentVlan,
  elasticMetalTokenTtlMinutes,
  reportedVlan,
  resolveVlan,
  vlanWaitSeconds,
} from "../../components/scaleway/elasticMetalVlan";
import { parseFleetSpec } from "../../components/fleet/fleetSpec";
import { elasticMetalPoolConfig, rawFleetConfig } from "../support/fleetConfigFixture";

const SERVER = "scaleway:elasticmetal/server:Server";
const GET_SERVER = "scaleway:elasticmetal/getServer:getServer";
const TOKEN = "nodefleet:kubernetes:NodeBootstrapToken";
const SERVER_ID = "fr-par-2/44444444-4444-4444-4444-444444444444";

/** A clock and sleep the wait advances by itself, recording each sleep. */
function fakeClock() {
  let t = 0;
  const sleeps: number[] = [];
  return {
    sleeps,
    now: () => t,
    sleep: async (ms: number) => {
      sleeps.push(ms);
      t += ms;
    },
  };
}

describe("Elastic Metal: a VLAN tag reported late, and long installs", function () {
  this.timeout(120_000);

  it("reads 0, null and an absent VLAN as not reported yet, and refuses a tag outside 1-4094", () => {
    for (const none of [0, null, undefined]) assert.equal(reportedVlan("n", none), undefined);
    assert.equal(reportedVlan("n", 1), 1);
    assert.equal(reportedVlan("n", 4094), 4094);
    for (const bad of [4095, -1, 1.5])
      assert.throws(() => reportedVlan("node-7", bad), /node node-7: the server reports VLAN .* not a VLAN id \(1-4094\)/);
    const attached = [
      { id: "fr-par/aaaa", vlan: 0 },
      { id: "fr-par/bbbb", vlan: 3001 },
    ];
    assert.equal(attachmentVlan("n", attached, "bbbb"), 3001, "the pool's network, by UUID across id formats");
    assert.equal(attachmentVlan("n", attached, "fr-par/aaaa"), undefined);
    assert.equal(attachmentVlan("n", [{ id: "x", vlan: 12 }], "other"), 12, "the only attachment");
    assert.equal(attachmentVlan("n", undefined, "x"), undefined);
  });

  it("uses the state's tag without a read; else reads live, during up every 5 s until the bound", async () => {
    let reads = 0;
    const readLive = async () => (++reads >= 4 ? 3001 : undefined);
    assert.equal(await resolveVlan({ hostname: "n", serverId: SERVER_ID, recorded: 42, readLive, dryRun: false, waitSeconds: 60 }), 42);
    assert.equal(reads, 0);
    const clock = fakeClock();
    assert.equal(
      await resolveVlan({ hostname: "n", serverId: SERVER_ID, recorded: undefined, readLive, dryRun: false, waitSeconds: 60, ...clock }),
      3001,
    );
    assert.equal(reads, 4);
    assert.deepEqual(clock.sleeps, [5000, 5000, 5000]);
  });

  it("fails an up that runs out of time naming the server and the next step; a preview reads once and answers unknown", async () => {
    let reads = 0;
    const never = async () => {
      reads++;
      return undefined;
    };
    const clock = fakeClock();
    await assert.rejects(
      resolveVlan({
        hostname: "kura-0",
        serverId: SERVER_ID,
        recorded: undefined,
        readLive: never,
        dryRun: false,
        waitSeconds: 12,
        ...clock,
      }),
      (error: Error) =>
        error.message.includes(`node kura-0: server ${SERVER_ID} still reports no VLAN tag`) &&
        error.message.includes("after 12 s") &&
        error.message.includes(VLAN_WAIT_ENV) &&
        error.message.includes("run `pulumi up` again") &&
        error.message.includes("no --refresh needed"),
    );
    assert.deepEqual(clock.sleeps, [5000, 5000, 2000], "the last sleep ends at the bound");
    assert.equal(reads, 4);
    reads = 0;
    const preview = await resolveVlan({
      hostname: "n",
      serverId: SERVER_ID,
      recorded: undefined,
      readLive: never,
      dryRun: true,
      waitSeconds: 300,
    });
    assert.ok(isUnknown(preview), "a preview shows the join as to be computed");
    assert.equal(reads, 1);
    reads = 0;
    await assert.rejects(
      resolveVlan({ hostname: "n", serverId: SERVER_ID, recorded: undefined, readLive: never, dryRun: false, waitSeconds: 0 }),
      /after 0 s/,
    );
    assert.equal(reads, 1, "a bound of 0 reads once");
  });

  it(`bounds the wait by ${VLAN_WAIT_ENV} (default ${DEFAULT_VLAN_WAIT_SECONDS} s)`, () => {
    assert.equal(vlanWaitSeconds({}), DEFAULT_VLAN_WAIT_SECONDS);
    assert.equal(vlanWaitSeconds({ [VLAN_WAIT_ENV]: "0" }), 0);
    assert.equal(vlanWaitSeconds({ [VLAN_WAIT_ENV]: "900" }), 900);
    for (const bad of ["-1", "1.5", "ten", "3601"])
      assert.throws(() => vlanWaitSeconds({ [VLAN_WAIT_ENV]: bad }), new RegExp(VLAN_WAIT_ENV));
  });

  it("gives a new member's token the install timeout, the VLAN wait and the join margin to live", () => {
    assert.equal(ELASTIC_METAL_SERVER_TIMEOUT_MINUTES, 90);
    assert.equal(elasticMetalTokenTtlMinutes({ bootstrapTokenTtlMinutes: 60 }, 300), 90 + 5 + 20);
    assert.equal(elasticMetalTokenTtlMinutes({ bootstrapTokenTtlMinutes: 60, bootstrapTokenJoinMarginMinutes: 45 }, 0), 90 + 45);
    assert.equal(elasticMetalTokenTtlMinutes({ bootstrapTokenTtlMinutes: 20 }, 61), 90 + 2 + 10, "the default margin is half a short TTL");
    assert.equal(elasticMetalTokenTtlMinutes({ bootstrapTokenTtlMinutes: 240 }, 300), 240, "a longer cluster TTL wins");
  });

  it("under mocks: a server whose state holds VLAN 0 joins with the tag read live; customTimeouts cover a long install", async () => {
    const fleet = parseFleetSpec(
      rawFleetConfig({ pools: [elasticMetalPoolConfig({ sshKeyIds: ["fr-par/11111111-2222-4333-a444-555555555555"], replicas: 1 })] }),
    );
    const options = new Map<string, pulumi.CustomResourceOptions>();
    const calls: Array<Record<string, unknown>> = [];
    const attachedTo: string[] = [];
    const { resources } = await runUnderMocks({
      stack: "test",
      config: { "nodefleet:sshPrivateKey": "-----BEGIN OPENSSH PRIVATE KEY-----\nx\n-----END OPENSSH PRIVATE KEY-----\n" },
      secretKeys: ["nodefleet:sshPrivateKey"],
      // The provider recorded the attachment before Scaleway reported its tag: 0 in the state.
      newResource: (args) => {
        const result = deterministicOutputs(args);
        if (args.type !== SERVER) return result;
        attachedTo.push(...(args.inputs.privateNetworks as Array<{ id: string }>).map((pn) => pn.id));
        const pns = (result.state.privateNetworks as Array<Record<string, unknown>>).map((pn) => ({ ...pn, vlan: 0 }));
        return { id: result.id, state: { ...result.state, privateNetworks: pns } };
      },
      call: (args) => {
        if (args.token !== GET_SERVER) return scalewayLookup(args, []) ?? args.inputs;
        calls.push(args.inputs);
        return { privateNetworks: attachedTo.map((id) => ({ id, vlan: 3001 })) };
      },
      program: () => {
        const { kubeconfig: _k, ...cluster } = fleet.cluster;
        const pool = fleet.pools[0];
        if (pool.provider !== "scaleway-elastic-metal") throw new Error("fixture must be an Elastic Metal pool");
        const component = new ElasticMetalNodePool(
          "example-kura",
          { cluster, pool },
          {
            transformations: [
              (a) => {
                options.set(a.name, a.opts);
                return undefined;
              },
            ],
          },
        );
        return { vlans: component.nodes.map((n) => n.vlan) };
      },
    });
    const server = resources.find((r) => r.type === SERVER)!;
    assert.equal(calls.length, 1, "one live read");
    assert.equal(calls[0].serverId, server.id);
    const join = resources.find((r) => r.name.endsWith("-join"))!;
    const script = (resolveSecrets({ s: join.inputs.stdin }, true) as { s: string }).s;
    assert.match(script, /^vlan_id=3001$/m, "the join configures the live tag, not the state's 0");
    assert.deepEqual(options.get(server.name)?.customTimeouts, { create: "90m", update: "90m", delete: "90m" });
    const token = resources.find((r) => r.type === TOKEN)!;
    assert.equal(token.inputs.ttlMinutes, 115, "a new member's token outlives the install, the VLAN wait and the join");
    assert.equal(options.get(token.name)?.ignoreChanges, undefined, "a new token has nothing to keep");
  });
});
