/**
 * The automation engine's parts that need no pulumi CLI: crash-recovery planning, the Hetzner
 * client (against a real HTTP server on 127.0.0.1), passphrase handling, CLI detection, engine
 * event mapping, per-stack serialisation and progress lines.
 */
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { type AddressInfo } from "node:net";
import { createServer, type Server } from "node:http";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import type { StepEventMetadata } from "@pulumi/pulumi/automation";
import { AutomationEngine, stepFromMetadata } from "../../../automation/engine/automationEngine";
import { adoptPendingCreates, hcloudServerLookup, planPendingCreates } from "../../../automation/engine/crashRecovery";
import {
  type PendingOperation,
  fileBackendDir,
  fileBackendUrl,
  isNodefleetFileBackend,
  lockIsStale,
  pendingOperations,
  pruneStackHistory,
  removeStaleLocks,
  removeTornSidecars,
} from "../../../automation/engine/fileBackendState";
import { HcloudClient, type HcloudServer } from "../../../automation/hcloud/hcloudClient";
import { resolvePassphrase } from "../../../automation/engine/passphrase";
import { formatStepLine } from "../../../automation/engine/progressFormat";
import { PulumiCliMissingError, requirePulumiCommand } from "../../../automation/engine/pulumiCli";
import { StackQueue } from "../../../automation/engine/stackQueue";
import { tempDirPerTest } from "../../support/tempDirPerTest";

function server(id: number, name: string, labels: Record<string, string>): HcloudServer {
  return {
    id,
    name,
    labels,
    status: "running",
    created: "2026-01-01T00:00:00Z",
    server_type: { name: "cpx21" },
    public_net: { ipv4: { ip: "203.0.113.9" }, ipv6: null },
    private_net: [],
  };
}

function pendingServer(urn: string, name: string, labels: Record<string, string>): PendingOperation {
  return {
    type: "creating",
    resource: { urn, type: "hcloud:index/server:Server", custom: true, inputs: { name, labels, serverType: "cpx21" } },
  };
}

/** Hetzner's look-up over servers by name, as the client answers them. */
function hetzner(byName: (name: string) => HcloudServer[]) {
  const client = { listServers: async ({ name }: { name: string }) => byName(name) } as unknown as HcloudClient;
  return { "hcloud:index/server:Server": hcloudServerLookup(client) };
}

describe("automation engine parts", function () {
  describe("crash recovery planning", function () {
    const ours = { "nodefleet.io/cluster": "c1" };

    it("imports a server found by name with our labels, clears the rest with a reason", async function () {
      const pending: PendingOperation[] = [
        pendingServer("urn:a", "c1-a", ours),
        pendingServer("urn:b", "c1-b", ours),
        pendingServer("urn:c", "c1-c", ours),
        { type: "creating", resource: { urn: "urn:net", type: "hcloud:index/network:Network", inputs: { name: "n" } } },
        { type: "updating", resource: { urn: "urn:u", type: "hcloud:index/server:Server", inputs: {} } },
      ];
      const atProvider: Record<string, HcloudServer[]> = {
        "c1-a": [server(1, "c1-a", { ...ours, extra: "x" })],
        "c1-c": [server(3, "c1-c", { "nodefleet.io/cluster": "someone-else" })],
      };
      const looked: string[] = [];
      const actions = await planPendingCreates(
        pending,
        hetzner((name) => (looked.push(name), atProvider[name] ?? [])),
        "import",
      );
      assert.deepEqual(looked, ["c1-a", "c1-b", "c1-c"], "only server creates are looked up, one request each");
      assert.deepEqual(
        actions.map((a) => `${a.action} ${a.urn}`),
        ["import urn:a", "clear urn:b", "clear urn:c", "clear urn:net", "clear urn:u"],
      );
      assert.match((actions[2] as { reason: string }).reason, /without our labels/);
    });

    it("deletes instead when told to", async function () {
      const actions = await planPendingCreates(
        [pendingServer("urn:a", "c1-a", ours)],
        hetzner(() => [server(1, "c1-a", ours)]),
        "delete",
      );
      assert.equal(actions[0].action, "delete");
    });

    it("applies the plan to the exported state: imported servers join the resources with their id, every pending create leaves", async function () {
      const pending = [
        pendingServer("urn:a", "c1-a", ours),
        pendingServer("urn:b", "c1-b", ours),
        { type: "updating", resource: { urn: "urn:u", type: "hcloud:index/server:Server", inputs: {} } },
      ];
      const actions = await planPendingCreates(
        pending,
        hetzner((name) => (name === "c1-a" ? [server(42, "c1-a", ours)] : [])),
        "import",
      );
      const existing = { urn: "urn:stack", type: "pulumi:pulumi:Stack", custom: false };
      const edited = adoptPendingCreates({ resources: [existing], pending_operations: pending, manifest: { version: "v" } }, actions);
      assert.deepEqual(edited.resources, [
        existing,
        {
          urn: "urn:a",
          type: "hcloud:index/server:Server",
          custom: true,
          id: "42",
          inputs: { name: "c1-a", labels: ours, serverType: "cpx21" },
          outputs: { name: "c1-a", labels: ours, serverType: "cpx21" },
        },
      ]);
      assert.deepEqual(edited.pending_operations, [pending[2]], "the pending creates are gone; the refresh clears the rest");
      assert.deepEqual(edited.manifest, { version: "v" });
    });

    it("treats only a dead process's lock of this host as stale", function () {
      assert.equal(lockIsStale({ pid: process.pid, hostname: hostname() }), false);
      assert.equal(lockIsStale({ pid: 2 ** 22 + 4242, hostname: hostname() }), true);
      assert.equal(lockIsStale({ pid: 2 ** 22 + 4242, hostname: "another-host" }), false);
    });

    it("treats another host's lock as stale only in a run fenced across replicas, and never a live process's of this host", function () {
      const remote = { pid: process.pid, hostname: "another-host" };
      assert.equal(lockIsStale(remote, hostname(), true), true, "fenced: no other run of the stack is live");
      assert.equal(lockIsStale(remote, hostname(), false), false, "not fenced: another host's lock is never judged");
      assert.equal(
        lockIsStale({ pid: process.pid, hostname: hostname() }, hostname(), true),
        false,
        "a live process of this host keeps its lock",
      );
      assert.equal(lockIsStale({ pid: 2 ** 22 + 4242, hostname: hostname() }, hostname(), true), true);
    });

    it("reads locks and pending operations from the file backend and removes only stale locks", function () {
      const dir = mkdtempSync(join(tmpdir(), "nodefleet-backend-"));
      try {
        const locks = join(dir, ".pulumi", "locks", "organization", "nodefleet", "s1");
        mkdirSync(locks, { recursive: true });
        writeFileSync(
          join(locks, "dead.json"),
          JSON.stringify({ pid: 2 ** 22 + 4242, hostname: hostname(), username: "u", timestamp: "t" }),
        );
        writeFileSync(join(locks, "live.json"), JSON.stringify({ pid: process.pid, hostname: hostname(), username: "u", timestamp: "t" }));
        writeFileSync(
          join(locks, "remote.json"),
          JSON.stringify({ pid: 2 ** 22 + 4242, hostname: "another-host", username: "u", timestamp: "t" }),
        );
        assert.deepEqual(
          removeStaleLocks(dir, "nodefleet", "s1").map((l) => l.path),
          [join(locks, "dead.json")],
        );
        assert.deepEqual(readdirSync(locks).sort(), ["live.json", "remote.json"]);

        assert.deepEqual(pendingOperations(dir, "nodefleet", "s1"), [], "no checkpoint yet");
        mkdirSync(join(dir, ".pulumi", "stacks", "nodefleet"), { recursive: true });
        const op = pendingServer("urn:a", "c1-a", ours);
        writeFileSync(
          join(dir, ".pulumi", "stacks", "nodefleet", "s1.json"),
          JSON.stringify({ version: 3, checkpoint: { latest: { resources: [], pending_operations: [op] } } }),
        );
        assert.deepEqual(pendingOperations(dir, "nodefleet", "s1"), [op]);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
    it("removes only torn metadata sidecars of stacks and locks, and reads the directory of a URL with options", function () {
      const dir = mkdtempSync(join(tmpdir(), "nodefleet-backend-"));
      try {
        const stacks = join(dir, ".pulumi", "stacks", "nodefleet");
        const history = join(dir, ".pulumi", "history", "nodefleet");
        mkdirSync(stacks, { recursive: true });
        mkdirSync(history, { recursive: true });
        writeFileSync(join(stacks, "s1.json"), "{}");
        writeFileSync(join(stacks, "s1.json.attrs"), "");
        writeFileSync(join(stacks, "s2.json.attrs"), '{"user.content_type":"application/octet-stream"');
        writeFileSync(join(stacks, "s3.json.attrs"), '{"md5":"x"}');
        writeFileSync(join(history, "h.json.attrs"), "");
        assert.deepEqual(removeTornSidecars(dir).sort(), [join(stacks, "s1.json.attrs"), join(stacks, "s2.json.attrs")]);
        assert.deepEqual(readdirSync(stacks).sort(), ["s1.json", "s3.json.attrs"]);
        assert.deepEqual(readdirSync(history), ["h.json.attrs"], "history is not read by the runs, so not scanned");
        assert.equal(fileBackendDir(fileBackendUrl(dir)), dir);
        assert.equal(fileBackendDir(`file://${dir}`), dir);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
    it("prunes a stack's update history and backups to the newest updates, leaving other stacks and the state alone", function () {
      const dir = mkdtempSync(join(tmpdir(), "nodefleet-backend-"));
      try {
        const history = join(dir, ".pulumi", "history", "nodefleet", "c-api");
        const backups = join(dir, ".pulumi", "backups", "nodefleet", "c-api");
        const other = join(dir, ".pulumi", "history", "nodefleet", "c");
        for (const d of [history, backups, other]) mkdirSync(d, { recursive: true });
        // Nanosecond stamps of different lengths: newest by value, not by text.
        const stamps = ["999999999999999999", "1796146402201909544", "1796146409750662333", "1796146438439743214"];
        for (const stamp of stamps) {
          writeFileSync(join(history, `c-api-${stamp}.history.json`), "{}");
          writeFileSync(join(history, `c-api-${stamp}.checkpoint.json`), "{}");
          writeFileSync(join(backups, `c-api.${stamp}.json`), "{}");
          writeFileSync(join(other, `c-${stamp}.history.json`), "{}");
        }
        assert.equal(pruneStackHistory(dir, "nodefleet", "c-api", 2), 6);
        const newest = stamps.slice(2);
        assert.deepEqual(
          readdirSync(history).sort(),
          newest.flatMap((s) => [`c-api-${s}.checkpoint.json`, `c-api-${s}.history.json`]).sort(),
        );
        assert.deepEqual(readdirSync(backups).sort(), newest.map((s) => `c-api.${s}.json`).sort());
        assert.equal(readdirSync(other).length, 4, "another stack's history is untouched");
        assert.equal(pruneStackHistory(dir, "nodefleet", "c-api", 2), 0, "idempotent");
        assert.equal(pruneStackHistory(dir, "nodefleet", "never-ran", 2), 0, "a stack without history");
        assert.equal(isNodefleetFileBackend(fileBackendUrl(dir)), true);
        assert.equal(isNodefleetFileBackend(`file://${dir}`), false, "an operator's own file backend is left as it is");
        assert.equal(isNodefleetFileBackend("s3://bucket?metadata=skip"), false);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  });

  describe("Hetzner Cloud client", function () {
    let http: Server;
    let baseUrl: string;
    const seen: string[] = [];

    before(async function () {
      http = createServer((req, res) => {
        seen.push(`${req.method} ${req.url} ${req.headers.authorization}`);
        const url = new URL(req.url!, "http://x");
        res.setHeader("content-type", "application/json");
        if (req.method === "GET" && url.pathname === "/servers") {
          const page = Number(url.searchParams.get("page"));
          res.end(
            JSON.stringify({ servers: [server(page, `s${page}`, {})], meta: { pagination: { next_page: page < 2 ? page + 1 : null } } }),
          );
        } else if (req.method === "DELETE" && url.pathname === "/servers/404") {
          res.statusCode = 404;
          res.end(JSON.stringify({ error: { code: "not_found", message: "server not found" } }));
        } else if (req.method === "DELETE" && url.pathname === "/servers/500") {
          res.statusCode = 500;
          res.end(JSON.stringify({ error: { code: "server_error", message: "boom" } }));
        } else {
          res.end(JSON.stringify({ action: { id: 1 } }));
        }
      });
      await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
      baseUrl = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
    });

    after(function () {
      http.close();
    });

    it("pages through servers with the label selector and counts every request", async function () {
      const counted: string[] = [];
      const client = new HcloudClient({ token: "t0ken", baseUrl, onRequest: (m, p) => counted.push(`${m} ${p}`) });
      const servers = await client.listServers({ labelSelector: "nodefleet.io/cluster=c1", name: "s" });
      assert.deepEqual(
        servers.map((s) => s.id),
        [1, 2],
      );
      assert.equal(client.requestCount, 2);
      assert.equal(counted.length, 2);
      assert.match(seen[0], /label_selector=nodefleet.io%2Fcluster%3Dc1/);
      assert.match(seen[0], /Bearer t0ken$/);
    });

    it("treats not-found on delete as success and reports other errors with the API's code", async function () {
      const client = new HcloudClient({ token: "t", baseUrl });
      await client.deleteServer(404);
      await client.deleteServer(7);
      await assert.rejects(client.deleteServer(500), /500 server_error: boom/);
      assert.equal(client.requestCount, 3);
    });
  });

  describe("passphrase", function () {
    const dataDir = tempDirPerTest("nodefleet-pass-");

    it("generates one passphrase file, mode 0600, and keeps it", function () {
      const first = resolvePassphrase(dataDir(), {});
      assert.equal(first.source, "generated");
      const path = first.envVars.PULUMI_CONFIG_PASSPHRASE_FILE;
      assert.equal(statSync(path).mode & 0o777, 0o600);
      const content = readFileSync(path, "utf8");
      assert.ok(content.length >= 40);
      const second = resolvePassphrase(dataDir(), {});
      assert.equal(second.source, "data-dir");
      assert.equal(readFileSync(second.envVars.PULUMI_CONFIG_PASSPHRASE_FILE, "utf8"), content);
    });

    it("prefers the operator's PULUMI_CONFIG_PASSPHRASE, then PULUMI_CONFIG_PASSPHRASE_FILE", function () {
      assert.equal(
        resolvePassphrase(dataDir(), { PULUMI_CONFIG_PASSPHRASE: "p", PULUMI_CONFIG_PASSPHRASE_FILE: "/f" }).source,
        "PULUMI_CONFIG_PASSPHRASE",
      );
      assert.deepEqual(resolvePassphrase(dataDir(), { PULUMI_CONFIG_PASSPHRASE_FILE: "/f" }).envVars, {
        PULUMI_CONFIG_PASSPHRASE_FILE: "/f",
      });
    });
  });

  describe("pulumi CLI detection", function () {
    it("says how to install the CLI when it is not on PATH", async function () {
      const nowhere = { PATH: "/nonexistent", NODEFLEET_TOOLCHAIN_DIR: "/nonexistent/toolchain" };
      await assert.rejects(requirePulumiCommand(nowhere), (error: unknown) => {
        assert.ok(error instanceof PulumiCliMissingError);
        assert.match(error.message, /npm run toolchain/);
        return true;
      });
      const dataDir = mkdtempSync(join(tmpdir(), "nodefleet-cli-"));
      try {
        await assert.rejects(AutomationEngine.create({ dataDir, env: nowhere }), PulumiCliMissingError);
      } finally {
        rmSync(dataDir, { recursive: true, force: true });
      }
    });
  });

  describe("engine events to steps", function () {
    const meta = (op: string, extra: Partial<StepEventMetadata> = {}): StepEventMetadata =>
      ({
        op,
        urn: "urn:pulumi:s::p::hcloud:index/server:Server::m0-server",
        type: "hcloud:index/server:Server",
        provider: "",
        ...extra,
      }) as StepEventMetadata;

    it("collapses replacement halves and hides engine plumbing", function () {
      assert.deepEqual(stepFromMetadata(meta("replace", { diffs: ["userData", "labels"], keys: ["userData"] })), {
        op: "replace",
        urn: "urn:pulumi:s::p::hcloud:index/server:Server::m0-server",
        type: "hcloud:index/server:Server",
        name: "m0-server",
        keys: ["labels", "userData"],
        replaceKeys: ["userData"],
      });
      assert.equal(stepFromMetadata(meta("create-replacement")), undefined);
      assert.equal(stepFromMetadata(meta("delete-replaced")), undefined);
      // A failing half is the replacement's failure.
      for (const half of ["create-replacement", "delete-replaced", "discard-replaced"]) {
        assert.deepEqual(
          (({ op, error }) => ({ op, error }))(stepFromMetadata(meta(half), "resource_unavailable")!),
          { op: "replace", error: "resource_unavailable" },
          half,
        );
      }
      assert.equal(stepFromMetadata(meta("create", { type: "pulumi:pulumi:Stack" })), undefined);
      assert.equal(stepFromMetadata(meta("same", { type: "pulumi:providers:hcloud" })), undefined);
      assert.equal(stepFromMetadata(meta("refresh", { diffs: ["labels"] }))?.op, "update");
      assert.equal(stepFromMetadata(meta("create"), "boom")?.error, "boom");
    });
  });

  describe("per-stack queue", function () {
    it("runs one task at a time per stack, in order, and stacks independently", async function () {
      const queue = new StackQueue();
      const events: string[] = [];
      const task = (name: string, ms: number) => async () => {
        events.push(`start ${name}`);
        await new Promise((r) => setTimeout(r, ms));
        events.push(`end ${name}`);
        return name;
      };
      const failing = queue.run("a", async () => {
        throw new Error("first fails");
      });
      const results = Promise.all([queue.run("a", task("a1", 30)), queue.run("a", task("a2", 1)), queue.run("b", task("b1", 1))]);
      assert.equal(queue.depth("a"), 3);
      await assert.rejects(failing, /first fails/);
      assert.deepEqual(await results, ["a1", "a2", "b1"]);
      assert.ok(events.indexOf("end a1") < events.indexOf("start a2"), events.join(","));
      assert.ok(events.indexOf("end b1") < events.indexOf("end a1"), "another stack does not wait");
      assert.equal(queue.depth(), 0);
    });
  });

  describe("progress lines", function () {
    it("show the running count, the op, the changed keys, and say when it is a simulation", function () {
      const step = {
        op: "replace" as const,
        urn: "u",
        type: "hcloud:index/server:Server",
        name: "m0-server",
        keys: ["labels", "userData"],
        replaceKeys: ["userData"],
      };
      assert.equal(
        formatStepLine(step, 3, { simulated: true, total: 9 }),
        "[simulated] [3/9] +- replace hcloud:index/server:Server m0-server (replace: userData)",
      );
      assert.equal(
        formatStepLine({ ...step, op: "create", keys: [], replaceKeys: undefined, error: "sold out" }, 1, { simulated: false }),
        "[1] + create hcloud:index/server:Server m0-server FAILED: sold out",
      );
    });
  });
});
