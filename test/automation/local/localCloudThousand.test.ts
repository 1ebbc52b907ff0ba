/**
 * The local cloud at a thousand machines (issue 35, part 6), asserted by structure and counts, not
 * by time (the times are in bench/localCloudThousand.bench.ts): the fake Hetzner API creates,
 * pages, selects and looks up 1000 servers over HTTP, keeps them through a kill without rewriting
 * its state per request; the node agent's pass over 1000 joined machines makes one list of Pods
 * and one of Nodes, renews each Lease once per renewal interval, and keeps a bounded number of
 * requests in flight over kept-alive connections. The agent talks to a stub of kube-apiserver on
 * 127.0.0.1 that counts what it is asked.
 */
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import { type Server, createServer } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type FakeHcloud, buildFakeHcloud } from "../../../automation/local/fakeHcloud/fakeHcloudApi";
import type { FakeServer } from "../../../automation/local/fakeHcloud/fakeHcloudState";
import { NodeAgent } from "../../../automation/local/nodeAgent";
import { ensurePki } from "../../../automation/local/pki";

const TOKEN = "b".repeat(64);
const MACHINES = 1000;
const POOLS = ["alpha", "beta", "gamma", "delta"];

describe("the local cloud at 1000 machines", function () {
  this.timeout(300_000);
  let dir: string;
  before(function () {
    dir = mkdtempSync(join(tmpdir(), "nodefleet-thousand-"));
  });
  after(function () {
    rmSync(dir, { recursive: true, force: true });
  });

  describe("fake Hetzner API", function () {
    let fake: FakeHcloud;
    let baseUrl: string;
    const api = async (method: string, path: string, body?: unknown) => {
      const response = await fetch(`${baseUrl}${path}`, {
        method,
        headers: { Authorization: `Bearer ${TOKEN}`, ...(body ? { "Content-Type": "application/json" } : {}) },
        ...(body ? { body: JSON.stringify(body) } : {}),
      });
      return { status: response.status, body: (await response.json()) as Record<string, any> };
    };
    /** Every page of a server list, following `next_page`. */
    const allPages = async (query: string) => {
      const servers: Array<{ id: number; name: string; labels: Record<string, string> }> = [];
      const pages: number[] = [];
      for (let page: number | null = 1; page !== null;) {
        const { status, body } = await api("GET", `/servers?${query}&per_page=50&page=${page}`);
        assert.equal(status, 200, JSON.stringify(body));
        servers.push(...body.servers);
        pages.push(page);
        page = body.meta.pagination.next_page;
      }
      return { servers, pages };
    };

    before(async function () {
      fake = buildFakeHcloud({
        token: TOKEN,
        stateFile: join(dir, "hcloud.json"),
        actionMs: 10,
        bootDelayMs: 0,
        rateLimitPerHour: 1_000_000,
      });
      baseUrl = await fake.app.listen({ port: 0, host: "127.0.0.1" });
    });
    after(async function () {
      await fake?.app.close();
    });

    it("creates 1000 servers through its HTTP interface, 16 requests at a time, without writing its whole state per request", async function () {
      // A user data of a realistic size: what makes a whole-state write per request cost.
      const userData = `#cloud-config\n# ${"x".repeat(6000)}\n`;
      let next = 0;
      const statuses: number[] = [];
      await Promise.all(
        Array.from({ length: 16 }, async () => {
          for (let i = next++; i < MACHINES; i = next++) {
            const { status } = await api("POST", "/servers", {
              name: `m${i}`,
              server_type: "cx22",
              image: "ubuntu-24.04",
              location: "fsn1",
              labels: { pool: POOLS[i % POOLS.length]!, "nodefleet.io/node": `n${i}` },
              user_data: userData,
            });
            statuses.push(status);
          }
        }),
      );
      assert.deepEqual(
        statuses.filter((s) => s !== 201),
        [],
      );
      assert.equal(fake.state.servers.length, MACHINES);
      // 1000 creates are some 4000 changes of a state that grows to ~7 MB: folded a handful of times, not 4000.
      assert.ok(fake.state.snapshotWrites <= 12, `${fake.state.snapshotWrites} snapshot writes for ${MACHINES} creates`);
    });

    it("pages through all 1000 (20 pages of 50) and selects them by label and by name", async function () {
      const all = await allPages("");
      assert.equal(all.pages.length, 20);
      assert.equal(new Set(all.servers.map((s) => s.id)).size, MACHINES, "every server once across the pages");
      const last = await api("GET", "/servers?per_page=50&page=20");
      assert.deepEqual(last.body.meta.pagination, {
        page: 20,
        per_page: 50,
        previous_page: 19,
        next_page: null,
        last_page: 20,
        total_entries: MACHINES,
      });

      const beta = await allPages("label_selector=pool%3Dbeta");
      assert.equal(beta.servers.length, MACHINES / POOLS.length);
      assert.equal(beta.pages.length, 5);
      assert.ok(beta.servers.every((s) => s.labels.pool === "beta"));
      const two = await allPages(`label_selector=${encodeURIComponent("pool in (alpha,delta),nodefleet.io/node")}`);
      assert.equal(two.servers.length, MACHINES / 2);
      const notBeta = await allPages(`label_selector=${encodeURIComponent("pool!=beta")}`);
      assert.equal(notBeta.servers.length, (MACHINES * 3) / 4);

      const one = await api("GET", `/servers?label_selector=${encodeURIComponent("nodefleet.io/node=n777")}`);
      assert.deepEqual(
        one.body.servers.map((s: { name: string }) => s.name),
        ["m777"],
      );
      const byName = await api("GET", "/servers?name=m999");
      assert.equal(byName.body.servers.length, 1);
      assert.equal(byName.body.servers[0].labels["nodefleet.io/node"], "n999");
      const got = await api("GET", `/servers/${byName.body.servers[0].id as number}`);
      assert.equal(got.body.server.name, "m999");
      assert.equal((await api("GET", "/servers?name=m1000")).body.servers.length, 0);
      // The name index follows a rename.
      assert.equal((await api("PUT", `/servers/${got.body.server.id as number}`, { name: "m999-renamed" })).status, 200);
      assert.equal((await api("GET", "/servers?name=m999")).body.servers.length, 0);
      assert.equal((await api("GET", "/servers?name=m999-renamed")).body.servers.length, 1);
      assert.equal((await api("POST", "/servers", { name: "m998", server_type: "cx22", image: "ubuntu-24.04" })).status, 409);
    });

    it("gives back all 1000 after a kill (no close, so nothing folded the journal on the way out)", async function () {
      const deleted = (await api("GET", "/servers?name=m0")).body.servers[0].id as number;
      assert.equal((await api("DELETE", `/servers/${deleted}`)).status, 200);
      // A second fake on the same files, as a restart after SIGKILL reads them.
      const restarted = buildFakeHcloud({ token: TOKEN, stateFile: join(dir, "hcloud.json"), actionMs: 10, bootDelayMs: 0 });
      const names = new Set(restarted.state.servers.map((s) => s.name));
      assert.equal(names.size, MACHINES - 1);
      assert.ok(names.has("m999-renamed") && !names.has("m999") && !names.has("m0"));
      assert.ok(restarted.state.servers.every((s) => s.status === "running"));
      await restarted.app.close();
    });
  });

  describe("node agent", function () {
    let server: Server;
    let clock = Date.parse("2026-12-03T12:00:00Z");
    /** What the stub was asked, by kind, since the last `take()`. */
    let asked = new Map<string, number>();
    let inFlight = 0;
    let maxInFlight = 0;
    let connections = 0;
    const leases = new Set<string>();
    const notReady = new Set<string>();
    const deleted = new Set<string>();
    const nodeName = (i: number) => `node-${i}`;
    const take = () => {
      const out = Object.fromEntries([...asked.entries()].sort());
      asked = new Map();
      return out;
    };

    const answer = (res: ServerResponse, status: number, body: unknown) => {
      res.writeHead(status, { "Content-Type": "application/json" });
      res.end(JSON.stringify(body));
    };
    const route = (req: IncomingMessage, res: ServerResponse) => {
      const url = new URL(req.url!, "https://127.0.0.1");
      const path = url.pathname;
      const lease = /^\/apis\/coordination\.k8s\.io\/v1\/namespaces\/kube-node-lease\/leases(?:\/(.+))?$/.exec(path);
      const node = /^\/api\/v1\/nodes\/([^/]+)(\/status)?$/.exec(path);
      const podStatus = /^\/api\/v1\/namespaces\/default\/pods\/([^/]+)\/status$/.exec(path);
      let kind: string;
      if (req.method === "GET" && path === "/api/v1/nodes") {
        kind = "list nodes";
        const items = Array.from({ length: MACHINES }, (_, i) => nodeName(i))
          .filter((name) => !deleted.has(name))
          .map((name) => ({
            metadata: { name },
            status: {
              conditions: [
                {
                  type: "Ready",
                  status: notReady.has(name) ? "Unknown" : "True",
                  lastHeartbeatTime: new Date(clock).toISOString(),
                },
              ],
            },
          }));
        answer(res, 200, { items });
      } else if (req.method === "GET" && path === "/api/v1/pods") {
        kind = "list pods";
        assert.equal(url.searchParams.get("fieldSelector"), "spec.nodeName!=");
        answer(res, 200, {
          items: [
            {
              metadata: { name: "web-1", namespace: "default", uid: "u1" },
              spec: { nodeName: nodeName(5), containers: [] },
              status: { phase: "Pending" },
            },
            {
              metadata: { name: "web-2", namespace: "default", uid: "u2" },
              spec: { nodeName: nodeName(6), containers: [] },
              status: { phase: "Running" },
            },
          ],
        });
      } else if (req.method === "PATCH" && podStatus) {
        kind = "start pod";
        answer(res, 200, {});
      } else if (req.method === "PATCH" && lease?.[1]) {
        kind = leases.has(lease[1]) ? "renew lease" : "renew absent lease";
        answer(res, leases.has(lease[1]) ? 200 : 404, {});
      } else if (req.method === "POST" && lease && !lease[1]) {
        kind = "create lease";
        let body = "";
        req.on("data", (chunk: Buffer) => (body += chunk.toString()));
        req.on("end", () => {
          const created = JSON.parse(body) as { metadata: { name: string; ownerReferences: Array<{ kind: string; uid: string }> } };
          assert.equal(created.metadata.ownerReferences[0]?.kind, "Node");
          leases.add(created.metadata.name);
          answer(res, 201, created);
        });
        return kind;
      } else if (req.method === "GET" && node && !node[2]) {
        kind = "get node";
        answer(res, deleted.has(node[1]!) ? 404 : 200, { metadata: { name: node[1], uid: `uid-${node[1]}` } });
      } else if (req.method === "PATCH" && node?.[2]) {
        kind = "report status";
        answer(res, 200, {});
      } else {
        kind = `unexpected ${req.method} ${path}`;
        answer(res, 404, {});
      }
      return kind;
    };

    before(async function () {
      const pki = ensurePki(join(dir, "pki"));
      server = createServer({ key: readFileSync(pki.apiserverKey), cert: readFileSync(pki.apiserverCert) }, (req, res) => {
        inFlight++;
        maxInFlight = Math.max(maxInFlight, inFlight);
        res.on("finish", () => inFlight--);
        const kind = route(req, res);
        asked.set(kind, (asked.get(kind) ?? 0) + 1);
      });
      server.on("secureConnection", () => connections++);
      await new Promise<void>((listening) => server.listen(0, "127.0.0.1", listening));
    });
    after(async function () {
      server?.closeAllConnections();
      await new Promise((closed) => server?.close(closed));
    });

    it("keeps 1000 joined machines with one pass: one list of Pods and of Nodes, each Lease once per interval, bounded and kept-alive", async function () {
      const apiServer = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const pki = ensurePki(join(dir, "pki"));
      const identity = {
        server: apiServer,
        caPem: readFileSync(pki.caCert, "utf8"),
        certPem: readFileSync(pki.adminCert, "utf8"),
        keyPem: readFileSync(pki.adminKey, "utf8"),
      };
      // 1000 machines that joined before a restart: their identities on their disks, as the agent keeps them.
      const machines = join(dir, "machines");
      mkdirSync(machines, { recursive: true });
      const servers: FakeServer[] = Array.from({ length: MACHINES }, (_, i) => {
        const s: FakeServer = {
          id: 5000 + i,
          name: nodeName(i),
          status: "running",
          created: "2026-12-03T11:00:00.000Z",
          labels: {},
          serverType: "cx22",
          location: "fsn1",
          image: "ubuntu-24.04",
          userData: "",
          ipv4: null,
          ipv6: null,
          privateNets: [],
          placementGroup: null,
          deleteProtection: false,
          rebuildProtection: false,
        };
        const machine = { state: "joined", nodeName: s.name, identity, kubeletVersion: "v1.33.4+k0s" };
        writeFileSync(join(machines, `${s.id}.json`), JSON.stringify({ serverName: s.name, serverCreated: s.created, machine }));
        return s;
      });
      const warnings: string[] = [];
      const agent = new NodeAgent(
        () => servers,
        { info() {}, warn: (record, message) => warnings.push(`${message} ${JSON.stringify(record)}`) },
        { stateDir: machines, cluster: identity, now: () => clock, concurrency: 16 },
      );

      // The first pass after the restart: every machine reports its status again and makes its Lease.
      await agent.tick();
      assert.deepEqual(take(), {
        "create lease": MACHINES,
        "get node": MACHINES,
        "list nodes": 1,
        "list pods": 1,
        "renew absent lease": MACHINES,
        "report status": MACHINES,
        "start pod": 1,
      });
      assert.equal(agent.machine(5000)?.state, "joined");

      // Passes within the renewal interval: one list of pods, whatever the number of machines.
      for (let pass = 0; pass < 4; pass++) {
        clock += 2000;
        await agent.tick();
        assert.deepEqual(take(), { "list pods": 1, "start pod": 1 });
      }

      // Ten seconds on: every Lease renewed once, the Nodes read with one list, and only those not Ready reported.
      notReady.add(nodeName(10)).add(nodeName(11));
      clock += 2000;
      await agent.tick();
      assert.deepEqual(take(), { "list nodes": 1, "list pods": 1, "renew lease": MACHINES, "report status": 2, "start pod": 1 });

      // A Node deleted (nodefleet's Node removal while the server runs): its kubelet stops reporting, said once.
      // The garbage collector deletes its Lease with it (the Lease is owned by the Node).
      deleted.add(nodeName(20));
      leases.delete(nodeName(20));
      clock += 10_000;
      await agent.tick();
      assert.deepEqual(take(), {
        "get node": 1,
        "list nodes": 1,
        "list pods": 1,
        "renew absent lease": 1,
        "renew lease": MACHINES - 1,
        "report status": 2,
        "start pod": 1,
      });
      clock += 10_000;
      await agent.tick();
      assert.equal(take()["renew lease"], MACHINES - 1);
      assert.equal(warnings.filter((w) => w.includes(nodeName(20))).length, 1, warnings.join("\n"));

      assert.ok(maxInFlight <= 16, `${maxInFlight} requests in flight at once`);
      // Kept alive: one identity here, so its connections are reused across passes (a new one per request would be thousands).
      assert.ok(connections <= 16, `${connections} TLS connections for ${MACHINES * 5} requests`);

      // A deleted server's machine is forgotten, its disk erased, and its Lease no longer renewed.
      servers.splice(0, 1);
      clock += 10_000;
      await agent.tick();
      assert.equal(agent.machine(5000), undefined);
      assert.equal(take()["renew lease"], MACHINES - 2);
    });
  });
});
