import { strict as assert } from "node:assert";
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import { nodeMetadataPatch, nodeMetadataProvider } from "../../components/kubernetes/kubernetesNodeMetadata";
import { nodeUpdateDrainProvider } from "../../components/kubernetes/kubernetesNodeDrain";
import { withSerializedProvider } from "../support/serializedProvider";
import { nodeMetadataHandler } from "../../components/provider/nodeMetadataResource";
import { nodeUpdateDrainHandler } from "../../components/provider/nodeUpdateDrainResource";

interface FakeNode {
  metadata: { name: string; resourceVersion: string; labels: Record<string, string> };
  spec: { taints?: Array<{ key: string; value?: string; effect: string }>; unschedulable?: boolean };
}

/**
 * A stand-in API server on 127.0.0.1 holding one Node: GET answers 404 until `registerAfter` GETs
 * have been seen; PATCH applies a JSON merge patch (null removes a label, taints are replaced as a
 * whole, as the API does for a merge patch; spec.unschedulable is set) and answers 409 when a given
 * resourceVersion is stale. The Node runs no pods.
 */
async function fakeApi(node: FakeNode, options: { registerAfter?: number; conflicts?: number } = {}) {
  const requests: Array<{ method: string; body?: unknown; contentType?: string }> = [];
  let gets = 0;
  let conflicts = options.conflicts ?? 0;
  const server = http.createServer((req, res) => {
    let text = "";
    req.on("data", (chunk) => (text += chunk));
    req.on("end", () => {
      const body = text ? JSON.parse(text) : undefined;
      requests.push({ method: req.method ?? "", body, contentType: req.headers["content-type"] });
      const send = (status: number, value: unknown) =>
        res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(value));
      if (req.method === "GET" && req.url?.startsWith("/api/v1/pods?")) return send(200, { items: [] });
      if (req.url !== `/api/v1/nodes/${node.metadata.name}`) return send(404, { message: "not found" });
      if (req.method === "GET") {
        gets += 1;
        return gets <= (options.registerAfter ?? 0) ? send(404, { message: "nodes not found" }) : send(200, node);
      }
      if (req.method === "PATCH") {
        const stale = body.metadata?.resourceVersion !== undefined && body.metadata.resourceVersion !== node.metadata.resourceVersion;
        if (conflicts > 0 || stale) {
          conflicts -= 1;
          node.metadata.resourceVersion = String(Number(node.metadata.resourceVersion) + 1);
          return send(409, { message: "the object has been modified" });
        }
        for (const [key, value] of Object.entries((body.metadata?.labels ?? {}) as Record<string, string | null>)) {
          if (value === null) delete node.metadata.labels[key];
          else node.metadata.labels[key] = value;
        }
        if (body.spec?.taints) node.spec.taints = body.spec.taints;
        if (typeof body.spec?.unschedulable === "boolean") node.spec.unschedulable = body.spec.unschedulable;
        node.metadata.resourceVersion = String(Number(node.metadata.resourceVersion) + 1);
        return send(200, node);
      }
      send(405, { message: "method not allowed" });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    credentials: JSON.stringify({ server: `http://127.0.0.1:${port}`, token: "abc" }),
    requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const NOT_READY = { key: "node.kubernetes.io/not-ready", effect: "NoExecute" };

function registeredNode(): FakeNode {
  return {
    metadata: {
      name: "example-kura-0",
      resourceVersion: "7",
      labels: { "kubernetes.io/hostname": "example-kura-0", "team.example.com/owner": "ops" },
    },
    spec: { taints: [NOT_READY, { key: "tuist.dev/runner-cache", value: "true", effect: "NoSchedule" }] },
  };
}

describe("Kubernetes Node labels and taints (KubernetesNodeMetadata)", function () {
  this.timeout(90_000);

  describe("nodeMetadataPatch", () => {
    it("sets declared labels, removes only the ones it declared before, and keeps taints others own", () => {
      const node = registeredNode();
      node.metadata.labels["example.com/tier"] = "cache";
      const patch = nodeMetadataPatch(
        node,
        { labels: { "example.com/tier": "cache" }, taints: [{ key: "tuist.dev/runner-cache", value: "true", effect: "NoSchedule" }] },
        { labels: { "example.com/zone": "a" }, taints: [{ key: "example.com/dedicated", value: "ci", effect: "NoSchedule" }] },
      );
      assert.deepEqual(patch, {
        metadata: { resourceVersion: "7", labels: { "example.com/tier": null, "example.com/zone": "a" } },
        spec: { taints: [NOT_READY, { key: "example.com/dedicated", value: "ci", effect: "NoSchedule" }] },
      });
    });

    it("answers nothing to do once the Node carries what is declared", () => {
      const node = registeredNode();
      const declared = {
        labels: { "team.example.com/owner": "ops" },
        taints: [{ key: "tuist.dev/runner-cache", value: "true", effect: "NoSchedule" as const }],
      };
      assert.equal(nodeMetadataPatch(node, declared, declared), undefined);
      assert.ok(
        nodeMetadataPatch(node, declared, {
          ...declared,
          taints: [{ key: "tuist.dev/runner-cache", value: "false", effect: "NoSchedule" as const }],
        }),
        "a changed taint value is a change",
      );
    });
  });

  describe("the provider, serialized, against a stand-in API server", () => {
    it("create waits for the Node to register, then patches its labels and taints (merge patch, resourceVersion)", async () => {
      const node = registeredNode();
      const api = await fakeApi(node, { registerAfter: 1 });
      try {
        await withSerializedProvider(nodeMetadataProvider, async (provider) => {
          const inputs = {
            nodeName: "example-kura-0",
            credentials: api.credentials,
            labels: { "nodefleet.io/pool": "kura", "node-role.kubernetes.io/cache": "" },
            taints: [{ key: "tuist.dev/runner-cache", value: "true", effect: "NoSchedule" }],
            registrationTimeoutSeconds: 60,
          };
          const created = await provider.create(inputs);
          assert.equal(created.id, "example-kura-0");
        });
        assert.deepEqual(
          api.requests.map((r) => r.method),
          ["GET", "GET", "PATCH"],
          "one miss while the node registers, then one patch",
        );
        assert.equal(api.requests[2].contentType, "application/merge-patch+json");
        assert.equal(node.metadata.labels["nodefleet.io/pool"], "kura");
        assert.equal(
          node.metadata.labels["node-role.kubernetes.io/cache"],
          "",
          "a label the kubelet may not set itself is set through the API",
        );
        assert.equal(node.metadata.labels["team.example.com/owner"], "ops", "labels others set stay");
        assert.deepEqual(node.spec.taints, [NOT_READY, { key: "tuist.dev/runner-cache", value: "true", effect: "NoSchedule" }]);
      } finally {
        await api.close();
      }
    });

    it("update converges a running Node: a dropped label removed, a changed taint replaced, a conflict retried", async () => {
      const node = registeredNode();
      node.metadata.labels["example.com/tier"] = "cache";
      const api = await fakeApi(node, { conflicts: 1 });
      try {
        await withSerializedProvider(nodeMetadataProvider, async (provider) => {
          const olds = {
            nodeName: "example-kura-0",
            credentials: api.credentials,
            labels: { "example.com/tier": "cache" },
            taints: [{ key: "tuist.dev/runner-cache", value: "true", effect: "NoSchedule" }],
            registrationTimeoutSeconds: 60,
          };
          const news = { ...olds, labels: { "example.com/tier2": "x" }, taints: [{ key: "tuist.dev/runner-cache", effect: "NoExecute" }] };
          const diff = await provider.diff!("example-kura-0", olds, news);
          assert.deepEqual([diff.changes, diff.replaces], [true, []]);
          await provider.update!("example-kura-0", olds, news);
        });
        assert.deepEqual(
          api.requests.map((r) => r.method),
          ["GET", "PATCH", "GET", "PATCH"],
          "409, read again, patch again",
        );
        assert.equal("example.com/tier" in node.metadata.labels, false);
        assert.equal(node.metadata.labels["example.com/tier2"], "x");
        assert.deepEqual(node.spec.taints, [NOT_READY, { key: "tuist.dev/runner-cache", effect: "NoExecute" }]);
      } finally {
        await api.close();
      }
    });

    it("a bare-metal update: the drain before it cordons the Node, the update after the join uncordons it, a later relabel leaves a cordon alone", async () => {
      const node = registeredNode();
      const api = await fakeApi(node);
      try {
        const declared = {
          nodeName: "example-kura-0",
          credentials: api.credentials,
          labels: {},
          taints: [],
          registrationTimeoutSeconds: 60,
        };
        await withSerializedProvider(nodeUpdateDrainProvider, async (provider) => {
          const created = await provider.create({
            nodeName: "example-kura-0",
            generation: "bbbbbb",
            timeoutSeconds: 30,
            credentials: api.credentials,
          });
          assert.equal(created.id, "example-kura-0-bbbbbb");
          const diff = await provider.diff!(
            "example-kura-0-bbbbbb",
            { nodeName: "example-kura-0", generation: "bbbbbb" },
            { nodeName: "example-kura-0", generation: "cccccc" },
          );
          assert.deepEqual(diff.replaces, ["generation"], "the next generation drains again");
        });
        assert.equal(node.spec.unschedulable, true, "drained: cordoned");
        await withSerializedProvider(nodeMetadataProvider, async (provider) => {
          const olds = { ...declared, generation: "aaaaaa" };
          const moved = { ...declared, generation: "bbbbbb" };
          assert.equal((await provider.diff!("example-kura-0", olds, moved)).changes, true);
          await provider.update!("example-kura-0", olds, moved);
          assert.equal(node.spec.unschedulable, false, "updated and joined: uncordoned");
          node.spec.unschedulable = true; // an operator cordons it
          await provider.update!("example-kura-0", moved, { ...moved, labels: { "example.com/tier": "x" } });
          assert.equal(node.spec.unschedulable, true, "a label change leaves the operator's cordon");
          await provider.update!(
            "example-kura-0",
            { ...declared },
            { ...declared, labels: { "example.com/tier": "y" }, generation: "bbbbbb" },
          );
          assert.equal(node.spec.unschedulable, true, "so does the first run that records a generation");
        });
      } finally {
        await api.close();
      }
    });

    it("fails, naming the Node, without usable credentials or when the Node never registers", async () => {
      await withSerializedProvider(nodeMetadataProvider, async (provider) => {
        await assert.rejects(
          provider.create({ nodeName: "example-kura-0", credentials: "", labels: {}, taints: [], registrationTimeoutSeconds: 1 }),
          /cannot set the labels and taints of Kubernetes Node example-kura-0: no usable kubeconfig/,
        );
      });
      const api = await fakeApi(registeredNode(), { registerAfter: 100 });
      try {
        await withSerializedProvider(nodeMetadataProvider, async (provider) => {
          await assert.rejects(
            provider.create({
              nodeName: "example-kura-0",
              credentials: api.credentials,
              labels: { a: "b" },
              taints: [],
              registrationTimeoutSeconds: 0,
            }),
            /Kubernetes Node example-kura-0 did not register within 0s/,
          );
        });
        assert.equal(
          api.requests.some((r) => r.method === "PATCH"),
          false,
        );
      } finally {
        await api.close();
      }
    });
  });

  describe("the plugin's NodeMetadata and NodeUpdateDrain handlers, against the same stand-in API server", () => {
    const declared = {
      nodeName: "example-kura-0",
      labels: { "nodefleet.io/pool": "kura" },
      taints: [{ key: "tuist.dev/runner-cache", value: "true", effect: "NoSchedule" }],
      registrationTimeoutSeconds: 60,
    };

    it("check refuses bad inputs, naming each property and its rule, and keeps only the declared inputs", () => {
      const { inputs, failures } = nodeMetadataHandler.check({
        nodeName: "Not_A_Node",
        labels: { a: 1 },
        taints: [{ key: "k", effect: "Sometimes" }],
        registrationTimeoutSeconds: 0,
        generation: "",
        credentials: "never stored",
      });
      assert.deepEqual(
        failures.map((f) => f.property),
        ["nodeName", "labels", "taints[0]", "registrationTimeoutSeconds", "generation"],
      );
      assert.match(failures[2]!.reason, /taint effect must be one of NoSchedule/);
      assert.equal("credentials" in inputs, false, "credentials are never a member's input");
      assert.deepEqual(nodeMetadataHandler.check({ ...declared, generation: "aaaaaa" }).failures, []);
      assert.deepEqual(
        nodeUpdateDrainHandler.check({ nodeName: "example-kura-0", timeoutSeconds: 1.5 }).failures.map((f) => f.property),
        ["generation", "timeoutSeconds"],
      );
    });

    it("diff replaces only for another Node (metadata) or another Node or generation (update drain)", () => {
      const metadata = (news: Record<string, unknown>) => nodeMetadataHandler.diff(declared, { ...declared, ...news });
      assert.deepEqual(metadata({ labels: { a: "b" }, generation: "bbbbbb" }), { changed: ["labels", "generation"], replaces: [] });
      assert.deepEqual(metadata({ nodeName: "example-kura-1" }).replaces, ["nodeName"]);
      assert.deepEqual(metadata({}).changed, []);
      const drain = { nodeName: "example-kura-0", generation: "aaaaaa", timeoutSeconds: 600 };
      assert.deepEqual(nodeUpdateDrainHandler.diff(drain, { ...drain, generation: "bbbbbb" }).replaces, ["generation"]);
      assert.deepEqual(nodeUpdateDrainHandler.diff(drain, { ...drain, timeoutSeconds: 60 }), { changed: ["timeoutSeconds"], replaces: [] });
    });

    it("create patches the Node with the provider's credentials; the update drain cordons it; the next update uncordons it; deletes change nothing", async () => {
      const node = registeredNode();
      const api = await fakeApi(node);
      const access = { credentialsJson: api.credentials };
      try {
        const created = await nodeMetadataHandler.create({ ...declared, generation: "aaaaaa" }, access);
        assert.equal(created.id, "example-kura-0");
        assert.equal(node.metadata.labels["nodefleet.io/pool"], "kura");
        assert.deepEqual(node.spec.taints, [NOT_READY, { key: "tuist.dev/runner-cache", value: "true", effect: "NoSchedule" }]);

        const drain = await nodeUpdateDrainHandler.create({ nodeName: "example-kura-0", generation: "bbbbbb", timeoutSeconds: 30 }, access);
        assert.equal(drain.id, "example-kura-0-bbbbbb");
        assert.equal(node.spec.unschedulable, true, "drained: cordoned");

        const outs = await nodeMetadataHandler.update(
          "example-kura-0",
          created.outs,
          { ...declared, labels: {}, generation: "bbbbbb" },
          access,
        );
        assert.equal(outs.generation, "bbbbbb");
        assert.equal(node.spec.unschedulable, false, "updated and joined: uncordoned");
        assert.equal("nodefleet.io/pool" in node.metadata.labels, false, "a label it no longer declares is removed");
        assert.equal(node.metadata.labels["team.example.com/owner"], "ops", "labels others set stay");

        const before = api.requests.length;
        await nodeMetadataHandler.delete("example-kura-0", outs, access);
        await nodeUpdateDrainHandler.delete(drain.id, drain.outs, access);
        assert.equal(api.requests.length, before, "deleting either sends nothing");
      } finally {
        await api.close();
      }
    });

    it("fails, naming the Node, when the provider has no usable credentials", async () => {
      await assert.rejects(
        nodeMetadataHandler.create(declared, { credentialsJson: "" }),
        /cannot set the labels and taints of Kubernetes Node example-kura-0: no usable kubeconfig/,
      );
      await assert.rejects(
        nodeUpdateDrainHandler.create({ nodeName: "example-kura-0", generation: "a", timeoutSeconds: 5 }, { credentialsJson: "" }),
        /cannot drain Kubernetes Node example-kura-0/,
      );
    });
  });
});
