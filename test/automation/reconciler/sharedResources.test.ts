/**
 * The batch's shared network and firewall: looked up by the names git's stack gives them, one
 * request each, and nothing when either is missing (the program's own look-up then reports it).
 */
import { strict as assert } from "node:assert";
import { HcloudClient } from "../../../automation/hcloud/hcloudClient";
import { lookUpSharedResources } from "../../../automation/reconciler/sharedResources";

function client(found: { networks?: object[]; firewalls?: object[] }, requests: string[]): HcloudClient {
  const fetchStub = (async (url: string) => {
    const { pathname, searchParams } = new URL(url);
    const key = pathname.split("/").pop() as "networks" | "firewalls";
    requests.push(`${key}?name=${searchParams.get("name")}`);
    return new Response(JSON.stringify({ [key]: found[key] ?? [], meta: { pagination: { next_page: null } } }), { status: 200 });
  }) as unknown as typeof fetch;
  return new HcloudClient({ token: "t", fetch: fetchStub });
}

describe("shared resources of a batch", () => {
  const fleet = { cluster: { id: "c1" }, network: {} } as Parameters<typeof lookUpSharedResources>[1];

  it("finds the cluster's network and firewall by name in one request each", async () => {
    const requests: string[] = [];
    const shared = await lookUpSharedResources(
      client(
        {
          networks: [{ id: 7, name: "c1-network", labels: { "nodefleet.io/cluster": "c1" } }],
          firewalls: [{ id: 9, name: "c1-nodes", labels: {} }],
        },
        requests,
      ),
      fleet,
    );
    assert.deepEqual(requests.sort(), ["firewalls?name=c1-nodes", "networks?name=c1-network"]);
    assert.deepEqual(shared, {
      found: {
        network: { id: 7, name: "c1-network", labels: { "nodefleet.io/cluster": "c1" } },
        firewall: { id: 9, name: "c1-nodes", labels: {} },
      },
    });
  });

  it("uses the network name the stack config gives", async () => {
    const requests: string[] = [];
    await lookUpSharedResources(client({}, requests), { ...fleet, network: { name: "shared-net" } } as typeof fleet);
    assert.ok(requests.includes("networks?name=shared-net"), requests.join(", "));
  });

  it("names what is missing", async () => {
    assert.deepEqual(await lookUpSharedResources(client({ networks: [{ id: 7, name: "c1-network", labels: {} }] }, []), fleet), {
      missing: ["firewall c1-nodes"],
    });
    assert.deepEqual(await lookUpSharedResources(client({ firewalls: [{ id: 9, name: "c1-nodes", labels: {} }] }, []), fleet), {
      missing: ["network c1-network"],
    });
    assert.deepEqual(await lookUpSharedResources(client({}, []), fleet), { missing: ["network c1-network", "firewall c1-nodes"] });
  });
});
