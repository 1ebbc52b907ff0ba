import { strict as assert } from "node:assert";
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import { nodeLocalClaims, nodeLocalPvcRemovalProvider, removeNodeLocalClaims } from "../../components/kubernetes/nodeLocalPvcRemoval";
import { withSerializedProvider } from "../support/serializedProvider";
import { nodeLocalPvcRemovalHandler } from "../../components/provider/nodeLocalPvcRemovalResource";

function pv(name: string, storageClass: string | undefined, claim: [string, string] | undefined, hosts: string[] | undefined) {
  return {
    metadata: { name },
    spec: {
      ...(storageClass ? { storageClassName: storageClass } : {}),
      ...(claim ? { claimRef: { namespace: claim[0], name: claim[1] } } : {}),
      ...(hosts
        ? {
            nodeAffinity: {
              required: { nodeSelectorTerms: [{ matchExpressions: [{ key: "kubernetes.io/hostname", operator: "In", values: hosts }] }] },
            },
          }
        : {}),
    },
  };
}

const PVS = {
  kind: "PersistentVolumeList",
  items: [
    pv("pv-a", "scw-local-nvme", ["kura", "data-kura-0"], ["example-kura-0"]),
    pv("pv-b", "scw-local-nvme", ["kura", "data-kura-1"], ["example-kura-1"]),
    pv("pv-c", "scw-bssd", ["kura", "other"], ["example-kura-0"]),
    pv("pv-d", "scw-local-nvme", undefined, ["example-kura-0"]),
    pv("pv-e", "scw-local-nvme", ["x", "y"], undefined),
  ],
};

async function apiServer(): Promise<{ url: string; seen: string[]; close: () => Promise<void> }> {
  const seen: string[] = [];
  const server = http.createServer((req, res) => {
    seen.push(`${req.method} ${req.url} ${req.headers.authorization ?? ""}`);
    if (req.method === "GET" && req.url === "/api/v1/persistentvolumes") {
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(PVS));
    } else if (req.method === "DELETE" && req.url?.endsWith("/data-kura-0")) {
      res.writeHead(404, { "content-type": "application/json" }).end("{}"); // already gone: fine
    } else {
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, seen, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

describe("node-local PVC removal", () => {
  it("picks the claims of the class's PVs pinned to the node, and nothing else", () => {
    assert.deepEqual(nodeLocalClaims(PVS, "example-kura-0", "scw-local-nvme"), [{ namespace: "kura", name: "data-kura-0" }]);
    assert.deepEqual(nodeLocalClaims(PVS, "example-kura-9", "scw-local-nvme"), []);
    assert.deepEqual(nodeLocalClaims({}, "example-kura-0", "scw-local-nvme"), []);
    assert.deepEqual(nodeLocalClaims(null, "example-kura-0", "scw-local-nvme"), []);
  });

  it("deletes them through the API server with the stored credentials (a 404 is success)", async () => {
    const api = await apiServer();
    try {
      const creds = JSON.stringify({ server: api.url, token: "tok" });
      const removed = await removeNodeLocalClaims(creds, "example-kura-0", "scw-local-nvme");
      assert.deepEqual(removed, [{ namespace: "kura", name: "data-kura-0" }]);
      assert.deepEqual(api.seen, [
        "GET /api/v1/persistentvolumes Bearer tok",
        "DELETE /api/v1/namespaces/kura/persistentvolumeclaims/data-kura-0 Bearer tok",
      ]);
      await nodeLocalPvcRemovalProvider.delete?.("example-kura-1/x", {
        nodeName: "example-kura-1",
        storageClass: "scw-local-nvme",
        serverId: "x",
        credentials: creds,
      });
      assert.equal(api.seen.at(-1), "DELETE /api/v1/namespaces/kura/persistentvolumeclaims/data-kura-1 Bearer tok");
    } finally {
      await api.close();
    }
  });

  it("fails with the reason, never a credential, when it has none or the API refuses", async () => {
    await assert.rejects(removeNodeLocalClaims("", "example-kura-0", "scw-local-nvme"), /no usable kubeconfig/);
    const server = http.createServer((_req, res) => res.writeHead(403).end(JSON.stringify({ message: "forbidden" })));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      await assert.rejects(
        removeNodeLocalClaims(JSON.stringify({ server: url, token: "s3cret" }), "n", "c"),
        (e: Error) => /HTTP 403: forbidden/.test(e.message) && !e.message.includes("s3cret"),
      );
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it("replaces on a new server id, so the departed server's claims are removed", async () => {
    const base = { nodeName: "n", storageClass: "c", serverId: "a", credentials: "" };
    const diff = await nodeLocalPvcRemovalProvider.diff?.("n/a", base, { ...base, serverId: "b" });
    assert.deepEqual(diff?.replaces, ["serverId"]);
    const same = await nodeLocalPvcRemovalProvider.diff?.("n/a", base, { ...base });
    assert.equal(same?.changes, false);
  });

  it("works from its serialized provider, as the engine runs it on delete", async () => {
    const api = await apiServer();
    try {
      await withSerializedProvider(nodeLocalPvcRemovalProvider, async (provider) => {
        const credentials = JSON.stringify({ server: api.url, token: "t" });
        await provider.delete!("example-kura-1/x", {
          nodeName: "example-kura-1",
          storageClass: "scw-local-nvme",
          serverId: "x",
          credentials,
        });
      });
      assert.deepEqual(api.seen, [
        "GET /api/v1/persistentvolumes Bearer t",
        "DELETE /api/v1/namespaces/kura/persistentvolumeclaims/data-kura-1 Bearer t",
      ]);
    } finally {
      await api.close();
    }
  });

  describe("the plugin's NodeLocalPvcRemoval handler", () => {
    const inputs = { nodeName: "example-kura-1", storageClass: "scw-local-nvme", serverId: "x" };

    it("check refuses bad inputs, naming each property and its rule", () => {
      const { failures } = nodeLocalPvcRemovalHandler.check({ nodeName: "example-kura-1", storageClass: "", serverId: 7 });
      assert.deepEqual(
        failures.map((f) => [f.property, f.reason]),
        [
          ["storageClass", "storageClass must be a non-empty string"],
          ["serverId", "serverId must be a non-empty string"],
        ],
      );
      assert.deepEqual(nodeLocalPvcRemovalHandler.check(inputs), { inputs, failures: [] });
    });

    it("replaces on a new server id, node or class, deleting the old one first", () => {
      assert.deepEqual(nodeLocalPvcRemovalHandler.diff(inputs, { ...inputs, serverId: "y" }), {
        changed: ["serverId"],
        replaces: ["serverId"],
        deleteBeforeReplace: true,
      });
      assert.deepEqual(nodeLocalPvcRemovalHandler.diff(inputs, { ...inputs }).changed, []);
    });

    it("creates without a request, and deletes the node's claims with the provider's credentials", async () => {
      const api = await apiServer();
      try {
        const access = { credentialsJson: JSON.stringify({ server: api.url, token: "p" }) };
        const created = await nodeLocalPvcRemovalHandler.create(inputs, access);
        assert.equal(created.id, "example-kura-1/x");
        assert.deepEqual(await nodeLocalPvcRemovalHandler.update(created.id, inputs, inputs, access), inputs);
        assert.deepEqual(api.seen, [], "nothing reaches the cluster until it is deleted");
        await nodeLocalPvcRemovalHandler.delete(created.id, created.outs, access);
        assert.deepEqual(api.seen, [
          "GET /api/v1/persistentvolumes Bearer p",
          "DELETE /api/v1/namespaces/kura/persistentvolumeclaims/data-kura-1 Bearer p",
        ]);
        await assert.rejects(nodeLocalPvcRemovalHandler.delete(created.id, created.outs, { credentialsJson: "" }), /no usable kubeconfig/);
      } finally {
        await api.close();
      }
    });
  });
});
