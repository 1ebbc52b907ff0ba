/**
 * nodefleet's provider plugin as the engine sees it: the launcher in bin/ started as a process, spoken
 * to over gRPC with the engine's own messages, against a stand-in Kubernetes API on 127.0.0.1.
 */
import { strict as assert } from "node:assert";
import { type ChildProcess, spawn } from "node:child_process";
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import * as grpc from "@grpc/grpc-js";
import * as emptyproto from "google-protobuf/google/protobuf/empty_pb";
import * as structproto from "google-protobuf/google/protobuf/struct_pb";
import * as provrpc from "@pulumi/pulumi/proto/provider_grpc_pb";
import * as provproto from "@pulumi/pulumi/proto/provider_pb";
import { packageVersion } from "../../components/shared/packageVersion";
import { FAKE_ROBOT_PASSWORD, FAKE_ROBOT_USER, fakeServerIp, startFakeRobot } from "../support/fakeRobot";
import { REPOSITORY_ROOT } from "../support/serveProcess";

const SECRET_SIG = "4dabf18193072939515e22adb298388d";
const DIFF_SOME = provproto.DiffResponse.DiffChanges.DIFF_SOME;
const urn = (type: string, name: string) => `urn:pulumi:test::nodefleet::nodefleet:hcloud:NodePool$${type}::${name}`;

interface Request {
  readonly method: string;
  readonly url: string;
  readonly body: unknown;
}

/** Answers like an API server that has the Node `known` with no pods, and accepts Secrets. */
async function kubernetesApi(known: string): Promise<{ url: string; requests: Request[]; close: () => Promise<void> }> {
  const requests: Request[] = [];
  const server = http.createServer((req, res) => {
    let text = "";
    req.on("data", (chunk: Buffer) => (text += chunk.toString()));
    req.on("end", () => {
      requests.push({ method: req.method ?? "", url: req.url ?? "", body: text ? JSON.parse(text) : undefined });
      const reply = (status: number, body: unknown) =>
        res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
      if (req.url?.startsWith(`/api/v1/nodes/${known}`)) return reply(200, { metadata: { name: known }, spec: {} });
      if (req.url?.startsWith("/api/v1/pods")) return reply(200, { items: [] });
      if (req.url?.startsWith("/api/v1/namespaces/kube-system/secrets")) return reply(req.method === "POST" ? 201 : 200, {});
      reply(404, { message: "not found" });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, requests, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

type Client = InstanceType<typeof provrpc.ResourceProviderClient>;

function call<Res>(client: Client, method: string, request: unknown): Promise<Res> {
  return new Promise((resolve, reject) =>
    (client as unknown as Record<string, (r: unknown, cb: (e: Error | null, v: Res) => void) => void>)[method]!(request, (error, value) =>
      error ? reject(error) : resolve(value),
    ),
  );
}

const struct = (value: Record<string, unknown>) => structproto.Struct.fromJavaScript(value as never);

describe("nodefleet's provider plugin (bin/pulumi-resource-nodefleet over gRPC)", function () {
  this.timeout(60_000);
  let plugin: ChildProcess;
  let client: Client;
  let api: Awaited<ReturnType<typeof kubernetesApi>>;

  before(async function () {
    api = await kubernetesApi("node-a");
    plugin = spawn(join(REPOSITORY_ROOT, "bin", "pulumi-resource-nodefleet"), [], { stdio: ["ignore", "pipe", "inherit"] });
    const port = await new Promise<string>((resolve, reject) => {
      plugin.stdout!.once("data", (chunk: Buffer) => resolve(chunk.toString().trim()));
      plugin.once("exit", (code) => reject(new Error(`the plugin exited with ${code}`)));
    });
    client = new provrpc.ResourceProviderClient(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
    const configure = new provproto.ConfigureRequest();
    configure.getVariablesMap().set("nodefleet:config:credentials", JSON.stringify({ server: api.url, token: "t0ken" }));
    await call(client, "configure", configure);
  });

  after(async () => {
    client?.close();
    plugin?.kill();
    await api?.close();
  });

  it("reports this package's version", async () => {
    const info = await call<{ getVersion(): string }>(client, "getPluginInfo", new emptyproto.Empty());
    assert.equal(info.getVersion(), packageVersion());
  });

  it("never replaces itself when the credentials change", async () => {
    const request = new provproto.DiffRequest().setOlds(struct({ credentials: "a" })).setNews(struct({ credentials: "b" }));
    const diff = await call<provproto.DiffResponse>(client, "diffConfig", request);
    assert.equal(diff.getChanges(), provproto.DiffResponse.DiffChanges.DIFF_SOME);
    assert.deepEqual(diff.getReplacesList(), []);
  });

  it("refuses bad inputs, naming each property and its rule", async () => {
    const request = new provproto.CheckRequest()
      .setUrn(urn("nodefleet:kubernetes:NodeBootstrapToken", "t"))
      .setNews(struct({ nodeName: "Not_A_Node", clusterKind: "k3s", ttlMinutes: 0, description: "d", secretObject: "yes" }));
    const check = await call<provproto.CheckResponse>(client, "check", request);
    assert.deepEqual(
      check.getFailuresList().map((f) => f.getProperty()),
      ["nodeName", "ttlMinutes", "clusterKind", "secretObject"],
    );
    assert.match(check.getFailuresList()[0]!.getReason(), /DNS subdomain/);
  });

  it("creates a token with its Secret, keeps the token secret, deletes the Secret once the Node registered", async () => {
    const inputs = { nodeName: "node-b", clusterKind: "kubeadm", ttlMinutes: 60, description: "for node-b", secretObject: true };
    const created = await call<provproto.CreateResponse>(
      client,
      "create",
      new provproto.CreateRequest().setUrn(urn("nodefleet:kubernetes:NodeBootstrapToken", "node-b-token")).setProperties(struct(inputs)),
    );
    const outs = created.getProperties()!.toJavaScript() as Record<string, unknown>;
    const token = (outs.token as Record<string, unknown>)[SECRET_SIG] ? String((outs.token as { value: unknown }).value) : "";
    assert.match(token, /^[a-z0-9]{6}\.[a-z0-9]{16}$/, "the token comes back in a secret envelope");
    assert.equal(created.getId(), `bootstrap-token-${outs.tokenId as string}`);
    const post = api.requests.find((r) => r.method === "POST");
    const secret = post?.body as { metadata: { name: string }; type: string; stringData: Record<string, string> };
    assert.equal(secret.metadata.name, `bootstrap-token-${outs.tokenId as string}`);
    assert.equal(secret.type, "bootstrap.kubernetes.io/token");
    assert.equal(`${secret.stringData["token-id"]}.${secret.stringData["token-secret"]}`, token);
    assert.equal(secret.stringData["auth-extra-groups"], "system:bootstrappers:kubeadm:default-node-token");
    const minutesLeft = (Date.parse(secret.stringData.expiration!) - Date.now()) / 60_000;
    assert.ok(minutesLeft > 58 && minutesLeft <= 60, `expires in the TTL (${minutesLeft} min)`);

    const olds = { ...inputs, tokenId: outs.tokenId, token, expiration: outs.expiration };
    await call(
      client,
      "update",
      new provproto.UpdateRequest()
        .setUrn(urn("nodefleet:kubernetes:NodeBootstrapToken", "node-b-token"))
        .setId(created.getId())
        .setOlds(struct(olds))
        .setNews(struct({ ...inputs, secretObject: false })),
    );
    assert.ok(
      api.requests.some(
        (r) => r.method === "DELETE" && r.url === `/api/v1/namespaces/kube-system/secrets/bootstrap-token-${outs.tokenId as string}`,
      ),
    );
  });

  it("replaces a token only for a new join window, node or TTL, and updates the Secret's presence in place", async () => {
    const base = { nodeName: "n", clusterKind: "k0s", ttlMinutes: 60, description: "d", joinWindow: "1", secretObject: true };
    const diff = (news: Record<string, unknown>) =>
      call<provproto.DiffResponse>(
        client,
        "diff",
        new provproto.DiffRequest()
          .setUrn(urn("nodefleet:kubernetes:NodeBootstrapToken", "n-token"))
          .setOlds(struct(base))
          .setNews(struct(news)),
      );
    assert.deepEqual((await diff({ ...base, joinWindow: "2" })).getReplacesList(), ["joinWindow"]);
    const inPlace = await diff({ ...base, secretObject: false });
    assert.deepEqual([inPlace.getReplacesList(), inPlace.getDiffsList()], [[], ["secretObject"]]);
    assert.equal((await diff(base)).getChanges(), provproto.DiffResponse.DiffChanges.DIFF_NONE);
  });

  it("drains, then deletes, a Node when its drain and its removal are deleted", async () => {
    api.requests.length = 0;
    await call(
      client,
      "delete",
      new provproto.DeleteRequest()
        .setUrn(urn("nodefleet:kubernetes:NodeDrain", "node-a-drain"))
        .setId("node-a")
        .setProperties(struct({ nodeName: "node-a", timeoutSeconds: 5 })),
    );
    await call(
      client,
      "delete",
      new provproto.DeleteRequest()
        .setUrn(urn("nodefleet:kubernetes:NodeRemoval", "node-a-node-removal"))
        .setId("node-a")
        .setProperties(struct({ nodeName: "node-a" })),
    );
    assert.deepEqual(
      api.requests.map((r) => `${r.method} ${r.url.split("?")[0]}`),
      ["GET /api/v1/nodes/node-a", "PATCH /api/v1/nodes/node-a", "GET /api/v1/pods", "DELETE /api/v1/nodes/node-a"],
    );
    assert.deepEqual((api.requests[1]!.body as { spec: unknown }).spec, { unschedulable: true }, "cordoned first");
  });

  it("serves the bare-metal members' types: a NodeMetadata check names the property, a PVC removal is deleted before its replacement", async () => {
    const check = await call<provproto.CheckResponse>(
      client,
      "check",
      new provproto.CheckRequest()
        .setUrn(urn("nodefleet:kubernetes:NodeMetadata", "m"))
        .setNews(struct({ nodeName: "node-a", labels: {}, taints: "none", registrationTimeoutSeconds: 60 })),
    );
    assert.deepEqual(
      check.getFailuresList().map((f) => [f.getProperty(), f.getReason()]),
      [["taints", "taints must be a list"]],
    );
    const removal = { nodeName: "node-a", storageClass: "local", serverId: "s1" };
    const diff = await call<provproto.DiffResponse>(
      client,
      "diff",
      new provproto.DiffRequest()
        .setUrn(urn("nodefleet:kubernetes:NodeLocalPvcRemoval", "p"))
        .setOlds(struct(removal))
        .setNews(struct({ ...removal, serverId: "s2" })),
    );
    assert.deepEqual([diff.getReplacesList(), diff.getDeletebeforereplace()], [["serverId"], true]);
    const drain = await call<provproto.CreateResponse>(
      client,
      "create",
      new provproto.CreateRequest()
        .setUrn(urn("nodefleet:kubernetes:NodeUpdateDrain", "node-a-g1-drain"))
        .setProperties(struct({ nodeName: "node-a", generation: "g1", timeoutSeconds: 5 })),
    );
    assert.equal(drain.getId(), "node-a-g1");
  });

  it("updates itself in place when the Robot credentials come or change, never replacing itself", async () => {
    for (const [olds, news] of [
      [{ credentials: "a" }, { credentials: "a", robotCredentials: "r" }],
      [
        { credentials: "a", robotCredentials: "r" },
        { credentials: "a", robotCredentials: "s" },
      ],
    ]) {
      const request = new provproto.DiffRequest().setOlds(struct(olds!)).setNews(struct(news!));
      const diff = await call<provproto.DiffResponse>(client, "diffConfig", request);
      assert.deepEqual([diff.getChanges(), diff.getDiffsList(), diff.getReplacesList()], [DIFF_SOME, ["robotCredentials"], []]);
    }
  });

  it("boots a Robot server into rescue with the credentials of its configuration, keeping none in the resource's state", async () => {
    const robot = await startFakeRobot([321]);
    try {
      // Configured as the engine does for a Robot pool's provider: both credentials, secrets, in the args.
      const configure = new provproto.ConfigureRequest().setArgs(
        struct({
          credentials: { [SECRET_SIG]: "1b47061264138c4ac30d75fd1eb44270", value: JSON.stringify({ server: api.url, token: "t0ken" }) },
          robotCredentials: {
            [SECRET_SIG]: "1b47061264138c4ac30d75fd1eb44270",
            value: JSON.stringify({ user: FAKE_ROBOT_USER, password: FAKE_ROBOT_PASSWORD }),
          },
        }),
      );
      await call(client, "configure", configure);
      const inputs = {
        serverNumber: 321,
        fingerprints: ["15:28:b0:03:95:f0:77:b3:10:56:15:6b:77:22:a5:bb"],
        generation: "g1",
        baseUrl: robot.baseUrl,
        // Nothing answers there: a silent server, reset with hw at once.
        probe: "127.0.0.1:9",
        sshPrivateKey: { [SECRET_SIG]: "1b47061264138c4ac30d75fd1eb44270", value: "PRIVATE KEY" },
      };
      const rescueUrn = urn("nodefleet:hrobot:RobotRescue", "a-rescue");
      const check = await call<provproto.CheckResponse>(
        client,
        "check",
        new provproto.CheckRequest().setUrn(rescueUrn).setNews(struct(inputs)),
      );
      assert.deepEqual(check.getFailuresList(), []);
      const created = await call<provproto.CreateResponse>(
        client,
        "create",
        new provproto.CreateRequest().setUrn(rescueUrn).setProperties(check.getInputs()),
      );
      const outs = created.getProperties()!.toJavaScript() as Record<string, unknown>;
      assert.equal(created.getId(), "321");
      assert.deepEqual([outs.serverIp, outs.resetType], [fakeServerIp(321), "hw"]);
      assert.equal(outs.credentials, undefined, "no credentials in the state");
      assert.ok(!JSON.stringify(outs).includes(FAKE_ROBOT_PASSWORD));
      assert.deepEqual(
        (outs.sshPrivateKey as Record<string, unknown>)[SECRET_SIG],
        "1b47061264138c4ac30d75fd1eb44270",
        "the key stays secret",
      );
      assert.deepEqual(robot.rescue.get(321), inputs.fingerprints);
      const diff = await call<provproto.DiffResponse>(
        client,
        "diff",
        new provproto.DiffRequest()
          .setUrn(rescueUrn)
          .setOlds(struct(outs))
          .setNews(struct({ ...inputs, generation: "g2" })),
      );
      assert.deepEqual([diff.getReplacesList(), diff.getDeletebeforereplace()], [["generation"], true], "a new generation reinstalls");
      await call(client, "delete", new provproto.DeleteRequest().setUrn(rescueUrn).setId("321").setProperties(struct(outs)));
      assert.equal(robot.rescue.has(321), false, "delete deactivates the rescue");
    } finally {
      await robot.close();
    }
  });

  it("answers an unknown resource type with an error naming it", async () => {
    await assert.rejects(
      call(client, "create", new provproto.CreateRequest().setUrn(urn("nodefleet:kubernetes:Nothing", "x")).setProperties(struct({}))),
      /has no resource type nodefleet:kubernetes:Nothing/,
    );
  });
});
