/**
 * Upstream deletes a replaced hcloud Server (Network, Firewall, PlacementGroup) with an explicit
 * name before creating its replacement (toolchain/providers/FIDELITY.md, "hcloud: Server"). For a
 * worker that would mean its server gone before anything drained it, so the fleet must never
 * replace a Server under its resource name: every input that replaces one upstream is part of its
 * generation, which is in both the resource name and the server name, and a change declares a new
 * Server beside the old one. And where a replacement does reach the API stack, its preview guard
 * refuses it whatever the order of the halves.
 */
import { strict as assert } from "node:assert";
import type { StepEventMetadata } from "@pulumi/pulumi/automation";
import { REPLACE_TRIGGERS } from "../../automation/simulated/replaceTriggers";
import { stepFromMetadata } from "../../automation/engine/automationEngine";
import type { ResourceStep } from "../../automation/engine/stackEngine";
import { previewGuardViolations } from "../../automation/reconciler/runOutcome";
import type { Claim } from "../../automation/store/claimStore";
import { hcloudStaticPoolConfig, rawFleetConfig, runFleetProgramUnderMocks } from "../support/fleetConfigFixture";

const SERVER = "hcloud:index/server:Server";

/** The Servers the git stack's program declares, by resource name, with their inputs. */
async function servers(options: { cluster?: Record<string, unknown>; pool?: Record<string, unknown> } = {}) {
  const { resources } = await runFleetProgramUnderMocks(
    rawFleetConfig({ cluster: options.cluster, pools: [hcloudStaticPoolConfig({ replicas: 2, sshKeys: ["ops"], ...options.pool })] }),
  );
  return new Map(resources.filter((r) => r.type === SERVER).map((r) => [r.name, r.inputs]));
}

/** A change of each replace-forcing input, as a user makes it in the fleet config. */
const CHANGES: Record<string, { cluster?: Record<string, unknown>; pool?: Record<string, unknown> }> = {
  image: { pool: { image: "ubuntu-22.04" } },
  location: { pool: { location: "fsn1" } },
  sshKeys: { pool: { sshKeys: ["ops", "deploy"] } },
  userData: { cluster: { k0sVersion: "v1.34.1+k0s.0" } },
};

describe("hcloud: no Server is replaced under its own name", function () {
  this.timeout(60_000);
  const replaceKeys = REPLACE_TRIGGERS[SERVER]!.properties;

  it("never sets datacenter, the one replace key not in the generation", async () => {
    const declared = await servers();
    assert.ok(declared.size > 0);
    for (const [name, inputs] of declared) assert.equal(inputs.datacenter, undefined, name);
    assert.deepEqual(
      replaceKeys.filter((k) => k !== "datacenter").sort(),
      Object.keys(CHANGES).sort(),
      "every other replace key has a change below",
    );
  });

  for (const key of Object.keys(CHANGES)) {
    it(`declares new Servers, under new names, when the ${key} changes`, async () => {
      const before = await servers();
      const after = await servers(CHANGES[key]);
      assert.equal(after.size, before.size);
      for (const [name, inputs] of after) {
        assert.ok(!before.has(name), `${name} kept its resource name although its ${key} changed`);
        assert.equal(inputs.name, name, "the server name is the resource name");
      }
    });
  }
});

describe("hcloud: the API stack's preview guard and a delete-before-replace", () => {
  const urn = "urn:pulumi:api::p::hcloud:index/server:Server::c1-k000000000001-abc123";
  const event = (op: string) => ({ op, urn, type: SERVER, provider: "", keys: ["userData"], diffs: ["userData"] }) as StepEventMetadata;
  const live: Claim[] = [{ nodeId: "k000000000001", status: "RUNNING" } as Claim];

  it("refuses a replacement of a live member's server whose old server goes first", () => {
    // The engine's events of a delete-before-replace, in its order: the old one deleted, then the new one.
    const steps = ["delete-replaced", "replace", "create-replacement"]
      .map((op) => stepFromMetadata(event(op)))
      .filter((s): s is ResourceStep => s !== undefined);
    assert.deepEqual(
      previewGuardViolations(steps, live).map((v) => [v.op, v.nodeId]),
      [["replace", "k000000000001"]],
    );
  });
});
