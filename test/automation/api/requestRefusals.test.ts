/**
 * What the scaling API refuses, over real HTTP on 127.0.0.1 (fake engine), and how: reserved label
 * keys on a create (400 naming the key and the rule, nothing admitted), valid JSON with `__proto__`
 * or a repeated key (400 ValidationError naming the key, never MalformedJson, never a polluted
 * prototype), bodies that are not JSON (415) and over-long URLs (414), each before anything else
 * happens and never as a 5xx.
 */
import { strict as assert } from "node:assert";
import * as net from "node:net";
import fc from "fast-check";
import { MAX_URL_LENGTH, requestLineTooLong } from "../../../automation/api/errorHandler";
import { reservedLabelRule } from "../../../components/fleet/reservedLabels";
import { TOKEN, apiError, startTestApi, type TestApi } from "../../support/apiHarness";

const NODES = "/api/v1/clusters/example/nodes";
const json = { "content-type": "application/json" };
const pool = "hel1-burst";

interface ErrorAnswer {
  error: { code: string; message: string; details?: { issues?: Array<{ path: string; message: string }> } };
}

describe("requests the scaling API refuses", function () {
  let api: TestApi;
  let counter = 0;
  const uniqueID = (name: string) => `${name}-${(counter += 1)}`;

  beforeEach(async () => {
    api = await startTestApi();
  });
  afterEach(async () => api.close());

  const post = async (body: string, headers: Record<string, string> = json, path = NODES) => {
    const response = await api.client.raw("POST", path, { body, headers });
    return { status: response.status, body: response.body as ErrorAnswer };
  };
  const admitted = (id: string) => api.app.nodefleet.store.byUniqueId("example", id) !== undefined;

  describe("reserved label keys", () => {
    it("refuses the create of the attack, labels {kubernetes.io/hostname: evil}, naming the key and the rule, and admits nothing", async () => {
      const id = uniqueID("evil");
      const { status, body } = await post(JSON.stringify({ uniqueID: id, pool, labels: { "kubernetes.io/hostname": "evil" } }));
      assert.equal(status, 400);
      assert.equal(body.error.code, "ValidationError");
      assert.match(body.error.message, /label kubernetes\.io\/hostname is reserved: .*Karpenter refuses it/);
      assert.match(JSON.stringify(body.error.details), /label kubernetes\.io\/hostname is reserved/);
      assert.equal(admitted(id), false);
      assert.deepEqual(await api.client.listNodes(), []);
    });

    it("refuses every kubernetes.io and k8s.io key the kubelet may not set, subdomains included, and nodefleet.io/ keys", async () => {
      for (const key of [
        "kubernetes.io/team",
        "node-role.kubernetes.io/worker",
        "foo.kubernetes.io/bar",
        "topology.kubernetes.io/rack",
        "k8s.io/foo",
        "sub.k8s.io/foo",
        "nodefleet.io/pool",
        "nodefleet.io/node",
      ]) {
        const id = uniqueID("reserved");
        const { status, body } = await post(JSON.stringify({ uniqueID: id, pool, labels: { "example.com/team": "a", [key]: "x" } }));
        assert.equal(status, 400, key);
        assert.equal(body.error.code, "ValidationError", key);
        assert.ok(body.error.message.includes(`label ${key} is reserved: `), body.error.message);
        assert.equal(admitted(id), false, key);
      }
      // Several at once: each named.
      const error = await apiError(
        api.client.createNode({
          uniqueID: uniqueID("several"),
          pool,
          labels: { "kubernetes.io/hostname": "a", "k8s.io/b": "c", "nodefleet.io/d": "e" },
        }),
      );
      const issues = (error.details as { issues: Array<{ message: string }> }).issues.map((i) => i.message).join("\n");
      for (const key of ["kubernetes.io/hostname", "k8s.io/b", "nodefleet.io/d"])
        assert.ok(issues.includes(`label ${key} is reserved`), issues);
    });

    it("accepts the well-known labels a kubelet may set (but hostname), its own namespaces, Karpenter's and other prefixes, and hands them to the kubelet", async () => {
      const labels = {
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/os": "linux",
        "beta.kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/os": "linux",
        "beta.kubernetes.io/instance-type": "cpx21",
        "node.kubernetes.io/instance-type": "cpx21",
        "topology.kubernetes.io/zone": "hel1",
        "topology.kubernetes.io/region": "eu-central",
        "failure-domain.beta.kubernetes.io/zone": "hel1",
        "failure-domain.beta.kubernetes.io/region": "eu-central",
        "node.kubernetes.io/lifecycle": "on-demand",
        "team.node.kubernetes.io/x": "y",
        "kubelet.kubernetes.io/x": "y",
        "karpenter.sh/nodepool": "default",
        "karpenter.sh/capacity-type": "on-demand",
        "karpenter.nodefleet.io/nodefleetnodeclass": "default",
        "example.com/team": "a",
        constructor: "fine",
      };
      const { node } = await api.client.createNode({ uniqueID: uniqueID("well-known"), pool, instanceType: "cpx21", labels });
      const claim = api.app.nodefleet.store.get("example", node.nodeID)!;
      assert.deepEqual(claim.snapshot.kubeletLabels, labels);
      for (const [key, value] of Object.entries(labels)) assert.equal(node.labels[key], value, key);
    });

    it("accepts Karpenter's node-restriction.kubernetes.io/ and kops.k8s.io/ labels and keeps them from the kubelet (Karpenter sets them)", async () => {
      const labels = { "node-restriction.kubernetes.io/team": "a", "kops.k8s.io/instancegroup": "b", "example.com/team": "c" };
      const { node } = await api.client.createNode({ uniqueID: uniqueID("isolation"), pool, labels });
      const claim = api.app.nodefleet.store.get("example", node.nodeID)!;
      assert.deepEqual(claim.snapshot.requestLabels, labels);
      assert.deepEqual(claim.snapshot.kubeletLabels, { "example.com/team": "c" }, "the kubelet would refuse to start with them");
    });

    it("refuses a replay that adds a reserved label (Karpenter's retried Create may add labels, not these)", async () => {
      const id = uniqueID("replay");
      await api.client.createNode({ uniqueID: id, pool, labels: { "karpenter.sh/nodepool": "default" } });
      const again = await apiError(
        api.client.createNode({ uniqueID: id, pool, labels: { "karpenter.sh/nodepool": "default", "kubernetes.io/hostname": "evil" } }),
      );
      assert.equal(again.status, 400);
      assert.equal(again.code, "ValidationError");
    });

    it("answers 400 for exactly the keys reservedLabels.ts reserves, 201 for the others", async function () {
      this.timeout(60_000);
      const dnsLabel = fc.stringMatching(/^[a-z0-9]([-a-z0-9]{0,6}[a-z0-9])?$/);
      const domain = fc.oneof(
        fc.constantFrom(
          "kubernetes.io",
          "k8s.io",
          "node.kubernetes.io",
          "kubelet.kubernetes.io",
          "topology.kubernetes.io",
          "node-restriction.kubernetes.io",
          "kops.k8s.io",
          "nodefleet.io",
          "karpenter.sh",
          "example.com",
        ),
        fc.tuple(dnsLabel, fc.constantFrom("kubernetes.io", "k8s.io", "nodefleet.io", "node.kubernetes.io")).map(([a, b]) => `${a}.${b}`),
      );
      const key = fc.oneof(
        fc.tuple(domain, fc.stringMatching(/^[a-z0-9]([-a-z0-9_.]{0,8}[a-z0-9])?$/)).map(([d, n]) => `${d}/${n}`),
        fc.constantFrom("kubernetes.io/hostname", "kubernetes.io/arch", "topology.kubernetes.io/zone", "beta.kubernetes.io/os"),
      );
      await fc.assert(
        fc.asyncProperty(key, async (k) => {
          const { status, body } = await post(JSON.stringify({ uniqueID: uniqueID("prop"), pool, labels: { [k]: "v" } }));
          const reserved = reservedLabelRule(k, "karpenter");
          if (reserved) {
            assert.equal(status, 400, k);
            assert.ok(body.error.message.includes(reserved.message), body.error.message);
          } else {
            assert.equal(status, 201, `${k}: ${JSON.stringify(body)}`);
          }
        }),
        { numRuns: 60 },
      );
    });
  });

  describe("JSON bodies", () => {
    it("answers valid JSON with a __proto__ key 400 ValidationError naming it, not MalformedJson, and pollutes no prototype", async () => {
      const bodies: Array<[string, string]> = [
        [`{"uniqueID":"p1","pool":"${pool}","__proto__":{"polluted":"yes"}}`, "body.__proto__"],
        [`{"uniqueID":"p2","pool":"${pool}","labels":{"__proto__":{"polluted":"yes"}}}`, "body.labels.__proto__"],
        [`{"uniqueID":"p3","pool":"${pool}","labels":{"\\u005f_proto__":"x"}}`, "body.labels.__proto__"],
        [
          `{"uniqueID":"p4","pool":"${pool}","requirements":[{"key":"a","operator":"Exists","__proto__":{"polluted":"yes"}}]}`,
          "body.requirements.0.__proto__",
        ],
        [`{"uniqueID":"p5","pool":"${pool}","constructor":{"prototype":{"polluted":"yes"}}}`, "body.constructor.prototype"],
      ];
      for (const [text, path] of bodies) {
        const { status, body } = await post(text);
        assert.equal(status, 400, text);
        assert.equal(body.error.code, "ValidationError", text);
        assert.deepEqual(
          body.error.details?.issues?.map((i) => i.path),
          [path],
        );
        assert.ok(body.error.message.includes(path), body.error.message);
      }
      for (const id of ["p1", "p2", "p3", "p4", "p5"]) assert.equal(admitted(id), false, id);
      assert.equal(({} as Record<string, unknown>).polluted, undefined);
      assert.equal(Object.prototype.hasOwnProperty.call(Object.prototype, "polluted"), false);
      // Malformed JSON is still MalformedJson, and the service still answers.
      assert.equal((await post('{"__proto__": ')).body.error.code, "MalformedJson");
      assert.equal((await api.client.createNode({ uniqueID: uniqueID("after"), pool })).created, true);
    });

    it("refuses a repeated key with 400 naming the key and where it is, however it is written", async () => {
      const cases: Array<[string, string, string]> = [
        [`{"uniqueID":"d1","pool":"${pool}","pool":"other"}`, "body.pool", '"pool"'],
        [`{"uniqueID":"d2","pool":"${pool}","pool":"${pool}"}`, "body.pool", '"pool"'],
        [`{"uniqueID":"d3","\\u0070ool":"${pool}","pool":"${pool}"}`, "body.pool", '"pool"'],
        [`{"uniqueID":"d4","pool":"${pool}","labels":{"a":"1","b":"2","a":"3"}}`, "body.labels.a", '"a"'],
        [
          `{"uniqueID":"d5","pool":"${pool}","requirements":[{"key":"a","operator":"Exists"},{"key":"b","operator":"Exists","operator":"In"}]}`,
          "body.requirements.1.operator",
          '"operator"',
        ],
        [`{"uniqueID":"d6","uniqueID":"d6b","pool":"${pool}"}`, "body.uniqueID", '"uniqueID"'],
      ];
      for (const [text, path, key] of cases) {
        const { status, body } = await post(text);
        assert.equal(status, 400, text);
        assert.equal(body.error.code, "ValidationError", text);
        assert.deepEqual(
          body.error.details?.issues?.map((i) => i.path),
          [path],
          text,
        );
        assert.ok(body.error.message.includes(`${path}: the key ${key} appears more than once`), body.error.message);
      }
      for (const id of ["d1", "d2", "d3", "d4", "d5", "d6", "d6b"]) assert.equal(admitted(id), false, id);
      // The same key in two objects is no repeat.
      const fine = await post(
        `{"uniqueID":"d7","pool":"${pool}","requirements":[{"key":"kubernetes.io/arch","operator":"Exists"},{"key":"kubernetes.io/os","operator":"Exists"}]}`,
      );
      assert.equal(fine.status, 201, JSON.stringify(fine.body));
    });

    it("refuses a repeated key on a bodyless route's JSON too (DELETE), and takes deep nesting without a 5xx", async () => {
      const { node } = await api.client.createNode({ uniqueID: uniqueID("delete"), pool });
      const response = await api.client.raw("DELETE", `${NODES}/${node.nodeID}`, { body: '{"a":1,"a":2}', headers: json });
      assert.equal(response.status, 400);
      assert.equal((response.body as ErrorAnswer).error.code, "ValidationError");
      const deep = await post(`{"uniqueID":"deep","pool":"${pool}","labels":${"[".repeat(20_000)}${"]".repeat(20_000)}}`);
      assert.equal(deep.status, 400);
      assert.equal(deep.body.error.code, "ValidationError");
      const deepProto = await post(
        `{"uniqueID":"deep2","pool":"${pool}","labels":${"[".repeat(20_000)}{"__proto__":1}${"]".repeat(20_000)}}`,
      );
      assert.equal(deepProto.status, 400);
      assert.ok(JSON.stringify(deepProto.body).length < 2000, "the path of a deep key is cut short");
    });

    it("never answers a create with repeated or prototype keys spliced in anywhere with a 5xx, and refuses every one that has them", async function () {
      this.timeout(60_000);
      const member = fc.constantFrom<[string, string]>(
        ["pool", `"${pool}"`],
        ["pool", '"elsewhere"'],
        ["__proto__", '{"polluted":"yes"}'],
        ["constructor", '{"prototype":{"polluted":"yes"}}'],
        ["labels", '{"a":"1"}'],
        ["labels", '{"a":"1","a":"2"}'],
        ["instanceType", '"cpx31"'],
        ["zone", "null"],
      );
      await fc.assert(
        fc.asyncProperty(fc.array(member, { maxLength: 4 }), fc.nat(), async (extra, at) => {
          const id = uniqueID("splice");
          const members: Array<[string, string]> = [
            ["uniqueID", JSON.stringify(id)],
            ["pool", `"${pool}"`],
          ];
          members.splice(at % (members.length + 1), 0, ...extra);
          const text = `{${members.map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(",")}}`;
          const refusedKeys =
            new Set(members.map(([k]) => k)).size < members.length ||
            text.includes('"__proto__"') ||
            text.includes('"prototype"') ||
            text.includes('"a":"1","a"');
          const { status, body } = await post(text);
          assert.ok(status < 500, `${text} -> ${status}`);
          if (refusedKeys) {
            assert.equal(status, 400, text);
            assert.equal(body.error.code, "ValidationError", text);
            assert.equal(admitted(id), false, text);
          }
        }),
        { numRuns: 80 },
      );
      assert.equal(({} as Record<string, unknown>).polluted, undefined);
    });
  });

  describe("media types", () => {
    it("answers a body that is not application/json 415 UnsupportedMediaType on a body route, whatever else it is", async () => {
      const body = JSON.stringify({ uniqueID: "media", pool });
      for (const type of [
        "text/plain",
        "text/plain; charset=utf-8",
        "application/xml",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "application/merge-patch+json",
        "application/jsonx",
        "???",
      ]) {
        const response = await post(body, { "content-type": type });
        assert.equal(response.status, 415, type);
        assert.equal(response.body.error.code, "UnsupportedMediaType", type);
      }
      // No Content-Type at all: fetch sends a Blob without one.
      const bare = await fetch(`${api.baseUrl}${NODES}`, {
        method: "POST",
        body: new Blob([body]),
        headers: { authorization: `Bearer ${TOKEN}` },
      });
      assert.equal(bare.status, 415);
      assert.equal(((await bare.json()) as ErrorAnswer).error.code, "UnsupportedMediaType");
      assert.equal(admitted("media"), false);
      for (const type of ["application/json", "application/json; charset=utf-8", "Application/JSON"]) {
        const response = await post(JSON.stringify({ uniqueID: uniqueID("json"), pool }), { "content-type": type });
        assert.equal(response.status, 201, type);
      }
    });

    it("does not refuse a bodyless request for its Content-Type, nor turn an unknown route into 415", async () => {
      const { node } = await api.client.createNode({ uniqueID: uniqueID("bodyless"), pool });
      const deleted = await api.client.raw("DELETE", `${NODES}/${node.nodeID}`, { headers: { "content-type": "text/plain" } });
      assert.equal(deleted.status, 202, JSON.stringify(deleted.body));
      const withBody = await api.client.raw("DELETE", `${NODES}/${node.nodeID}`, { body: "x", headers: { "content-type": "text/plain" } });
      assert.equal(withBody.status, 415);
      const unknown = await post("x", { "content-type": "text/plain" }, "/api/v1/nothing-here");
      assert.equal(unknown.status, 404);
      assert.equal(unknown.body.error.code, "RouteNotFound");
    });
  });

  describe("over-long URLs", () => {
    const exchange = (request: string) =>
      new Promise<string>((resolve, reject) => {
        const socket = net.connect(Number(new URL(api.baseUrl).port), "127.0.0.1");
        let received = "";
        socket.on("data", (chunk) => (received += chunk));
        socket.on("error", reject);
        socket.on("close", () => resolve(received));
        socket.write(request);
      });
    const padded = (base: string, length: number) => `${base}${"a".repeat(length - base.length)}`;

    it(`answers a URL of more than ${MAX_URL_LENGTH} characters 414 UriTooLong on every route, before authentication, without echoing it`, async () => {
      const anonymous = api.clientWith(undefined);
      for (const [client, method, base] of [
        [api.client, "GET", `${NODES}?pool=`],
        [api.client, "GET", "/api/v1/clusters/example?x="],
        [api.client, "GET", "/api/v1/nothing-here/"],
        [api.client, "DELETE", `${NODES}/k000000000000?x=`],
        [anonymous, "GET", `${NODES}?pool=`],
        [anonymous, "GET", "/readyz?x="],
      ] as const) {
        const response = await client.raw(method, padded(base, MAX_URL_LENGTH + 1));
        assert.equal(response.status, 414, `${method} ${base}`);
        assert.equal((response.body as ErrorAnswer).error.code, "UriTooLong");
        assert.doesNotMatch(JSON.stringify(response.body), /aaaaaaaa/);
      }
      const create = await post(JSON.stringify({ uniqueID: "long-url", pool }), json, padded(`${NODES}?x=`, 10_000));
      assert.equal(create.status, 414);
      assert.equal(admitted("long-url"), false);
      // At the limit the URL is read (and its query refused for what it says).
      const atLimit = await api.client.raw("GET", padded(`${NODES}?pool=`, MAX_URL_LENGTH));
      assert.equal(atLimit.status, 400);
      assert.equal((atLimit.body as ErrorAnswer).error.code, "ValidationError");
      // A long path parameter stays 414 as before.
      assert.equal((await api.client.raw("GET", `${NODES}/${"a".repeat(500)}`)).status, 414);
    });

    it("tells an over-long request line from oversized headers by the data Node's parser held", () => {
      const packet = (text: string) => Buffer.from(text, "latin1");
      assert.equal(requestLineTooLong(packet(`GET /${"a".repeat(MAX_URL_LENGTH + 10)} HTTP/1.1\r\nHost: t\r\n`)), true);
      assert.equal(requestLineTooLong(packet(`DELETE /${"a".repeat(20_000)}`)), true, "the line has not ended yet");
      assert.equal(requestLineTooLong(packet(`GET /${"a".repeat(MAX_URL_LENGTH - 10)} HTTP/1.1\r\nX-Pad: ${"a".repeat(20_000)}`)), false);
      assert.equal(requestLineTooLong(packet(`GET /healthz HTTP/1.1\r\nX-Pad: ${"a".repeat(20_000)}`)), false);
      // A later read of a long head: which part it belongs to is not known, so it stays 431.
      assert.equal(requestLineTooLong(packet("a".repeat(1000))), false);
      assert.equal(requestLineTooLong(undefined), false);
    });

    it("answers a request line longer than Node's header limit 414 too, and oversized headers still 431", async () => {
      for (const length of [20_000, 100_000]) {
        const answer = await exchange(`GET ${padded(`${NODES}?pool=`, length)} HTTP/1.1\r\nHost: t\r\n\r\n`);
        assert.match(answer, /^HTTP\/1.1 414 /, answer.slice(0, 100));
        assert.equal((JSON.parse(answer.slice(answer.indexOf("\r\n\r\n") + 4)) as ErrorAnswer).error.code, "UriTooLong");
      }
      const headers = await exchange(`GET /healthz HTTP/1.1\r\nHost: t\r\nX-Pad: ${"a".repeat(20_000)}\r\n\r\n`);
      assert.match(headers, /^HTTP\/1.1 431 /);
      // The service still answers.
      assert.equal((await api.client.raw("GET", "/healthz")).status, 200);
    });
  });
});
