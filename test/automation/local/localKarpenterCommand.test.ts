/**
 * `nodefleet local karpenter` as a user runs it. Without its pieces it names every missing one (the
 * toolchain's controller, the local cloud, the local stack, serve and its token) and applies
 * nothing. On a local cloud with the `local` stack applied and `serve --engine automation` on it
 * (started by the test), the command as a process applies the objects, runs the controller, and
 * pending pods become a NodeClaim and a Ready Node; SIGINT stops it and its controller; a second run
 * applies the same objects again (the user's replica count kept) and stops on SIGTERM.
 */
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";
import { freePort } from "../../../automation/local/freePort";
import { kube } from "../../../automation/local/kubeClient";
import { type LocalCloud, startLocalCloud } from "../../../automation/local/localCloud";
import { localFleetConfig, runPulumi } from "../../../automation/local/localStack";
import { TOKEN } from "../../support/apiHarness";
import { FIXTURE_CA_CERTIFICATE } from "../../support/fleetConfigFixture";
import { KARPENTER_LOOP_TOOLS, type KubeItem } from "../../support/karpenterLocalCloud";
import { localStackProject } from "../../support/localStackProject";
import { BIN, type ServeProcess, serveOnLocalCloud } from "../../support/serveProcess";
import { missingTools, skipUnlessAvailable } from "../../support/toolchainRequirement";
import { until } from "../../support/until";

describe("nodefleet local karpenter", function () {
  describe("without its pieces", function () {
    let dir: string;
    let server: Server | undefined;

    beforeEach(() => (dir = mkdtempSync(join(tmpdir(), "nodefleet-local-karpenter-input-"))));
    afterEach(async () => {
      await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
      server = undefined;
      rmSync(dir, { recursive: true, force: true });
    });

    /** Runs the command in `dir` with no toolchain reachable (not spawnSync: the test's fake API must answer meanwhile). */
    const run = (...args: string[]) =>
      new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve, reject) => {
        const child = spawn(process.execPath, [BIN, "local", "karpenter", ...args], {
          cwd: dir,
          env: {
            ...process.env,
            PATH: "/usr/bin:/bin",
            NODEFLEET_TOOLCHAIN_DIR: join(dir, "no-toolchain"),
            NODEFLEET_API_TOKEN: "",
            NODEFLEET_API_URL: "",
          },
          stdio: ["ignore", "pipe", "pipe"],
        });
        let stdout = "";
        let stderr = "";
        child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
        child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
        const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
        child.once("error", reject);
        child.once("close", (status) => {
          clearTimeout(timer);
          resolve({ status, stdout, stderr });
        });
      });

    /** A project whose stacks/Pulumi.local.yaml is the local stack (as `local up` writes it). */
    const project = () => {
      const projectDir = join(dir, "project");
      mkdirSync(join(projectDir, "stacks"), { recursive: true });
      writeFileSync(
        join(projectDir, "stacks", "Pulumi.local.yaml"),
        stringify({ config: localFleetConfig({ server: "https://127.0.0.1:6443", admin: { caPem: FIXTURE_CA_CERTIFICATE } }) }),
      );
      return projectDir;
    };

    it("names every missing piece at once, and how to get it, before applying anything", async function () {
      const port = await freePort();
      const { status, stdout, stderr } = await run("--token", "t", "--url", `http://127.0.0.1:${port}`);
      assert.equal(status, 1, stderr);
      assert.equal(stdout, "");
      assert.match(stderr, /cannot run Karpenter on the local cloud:/);
      assert.match(stderr, /nodefleet-karpenter is not on PATH or in the toolchain cache: run `npm run toolchain`/);
      assert.match(stderr, /local\/env\.json does not exist: start the local cloud with `nodefleet local up` first/);
      assert.match(stderr, /stacks\/Pulumi\.local\.yaml does not exist: `nodefleet local up --project-dir \.` writes it/);
      assert.match(
        stderr,
        new RegExp(
          `no scaling API answers at http://127\\.0\\.0\\.1:${port} \\(.+\\): start \`nodefleet serve --stack local --engine automation\``,
        ),
      );
      assert.ok(!existsSync(join(dir, ".nodefleet", "local", "karpenter.json")), "no controller recorded");
    });

    it("asks for the API token when neither --token, NODEFLEET_API_TOKEN nor serve's generated token is there", async function () {
      const { status, stderr } = await run("--project-dir", project());
      assert.equal(status, 1, stderr);
      assert.match(
        stderr,
        /no API token for the scaling API: pass --token or set NODEFLEET_API_TOKEN .* cluster local \(NODEFLEET_API_TOKENS="local:<token>"\)/,
      );
    });

    it("names a local cloud that was started but is not running any more", async function () {
      const kubeconfig = join(dir, "admin.kubeconfig");
      const port = await freePort();
      const b64 = (text: string) => Buffer.from(text).toString("base64");
      writeFileSync(
        kubeconfig,
        stringify({
          clusters: [
            { name: "local", cluster: { server: `https://127.0.0.1:${port}`, "certificate-authority-data": b64(FIXTURE_CA_CERTIFICATE) } },
          ],
          users: [{ name: "admin", user: { token: "x" } }],
          contexts: [{ name: "local", context: { cluster: "local", user: "admin" } }],
          "current-context": "local",
        }),
      );
      mkdirSync(join(dir, "data", "local"), { recursive: true });
      writeFileSync(join(dir, "data", "local", "env.json"), JSON.stringify({ env: { KUBECONFIG: kubeconfig } }));
      const { status, stderr } = await run("--data-dir", "data", "--token", "t");
      assert.equal(status, 1, stderr);
      assert.match(
        stderr,
        new RegExp(
          `the local cloud's control plane at https://127\\.0\\.0\\.1:${port} does not answer .*: start \`nodefleet local up --data-dir data\``,
        ),
      );
    });

    it("refuses a static pool, naming the autoscaled ones, and names a token the API refuses", async function () {
      server = createServer((_request, response) => {
        response.writeHead(401, { "content-type": "application/json" });
        response.end(JSON.stringify({ error: { code: "Unauthorized", message: "invalid token" } }));
      });
      await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
      const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
      const { status, stderr } = await run("--project-dir", project(), "--pool", "local-general", "--url", url, "--token", "wrong");
      assert.equal(status, 1, stderr);
      assert.match(
        stderr,
        /stack local: pool local-general is static, not autoscaled: Karpenter needs an autoscaled pool \(this stack's: local-burst\)/,
      );
      assert.match(stderr, new RegExp(`the scaling API at ${url.replace(/\./g, "\\.")} refused the token from --token \\(401\\)`));
    });
  });

  describe("on the local cloud with serve --engine automation (real engine, real control plane, Karpenter's controllers)", function () {
    this.timeout(900_000);
    let dir: string;
    let project: string;
    let cloud: LocalCloud | undefined;
    let serve: ServeProcess | undefined;
    let command: ChildProcess | undefined;

    before(async function () {
      skipUnlessAvailable(this, missingTools(...KARPENTER_LOOP_TOOLS));
      dir = mkdtempSync(join(tmpdir(), "nodefleet-local-karpenter-"));
      project = localStackProject(join(dir, "project"));
      cloud = await startLocalCloud({
        dataDir: join(dir, "data"),
        hcloudPort: 0,
        agentIntervalMs: 300,
        logger: { info() {}, warn() {} },
        projectDir: project,
      });
      await runPulumi(["up", "--stack", "local", "--yes", "--skip-preview", "--non-interactive"], project, cloud.env);
      serve = await serveOnLocalCloud(join(dir, "serve"), cloud.env, project);
    });

    after(async function () {
      // A failed case may leave the command running: stop it as Ctrl-C would, then any controller it recorded.
      if (command && command.exitCode === null) {
        const gone = new Promise((resolve) => command!.once("exit", resolve));
        command.kill("SIGTERM");
        await Promise.race([gone, new Promise((resolve) => setTimeout(resolve, 30_000))]);
        command.kill("SIGKILL");
      }
      const pidFile = dir ? join(dir, "data", "local", "karpenter.json") : "";
      if (pidFile && existsSync(pidFile)) {
        try {
          process.kill((JSON.parse(readFileSync(pidFile, "utf8")) as { pid: number }).pid, "SIGKILL");
        } catch {
          // Already gone.
        }
      }
      serve?.child.kill("SIGTERM");
      await serve?.exited();
      await cloud?.stop();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    /** Starts the command as a user would (in the project, the token in NODEFLEET_API_TOKEN); resolves once the NodeClass is Ready. */
    async function startCommand() {
      const child = spawn(
        process.execPath,
        [BIN, "local", "karpenter", "--data-dir", join(dir, "data"), "--url", serve!.baseUrl, "--consolidate-after", "5s"],
        {
          cwd: project,
          env: { ...process.env, NODEFLEET_API_TOKEN: TOKEN },
          stdio: ["ignore", "pipe", "pipe"],
        },
      );
      command = child;
      let stdout = "";
      let stderr = "";
      child.stdout!.on("data", (c: Buffer) => (stdout += c.toString()));
      child.stderr!.on("data", (c: Buffer) => (stderr = (stderr + c.toString()).slice(-20_000)));
      const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
      const output = () => `stdout:\n${stdout}\nstderr:\n${stderr.slice(-4000)}`;
      await Promise.race([
        until(
          "the NodeClass Ready",
          () => (/is Ready: Karpenter scales pool local-burst/.test(stdout) ? true : undefined),
          240_000,
          output,
        ),
        exited.then((code) => Promise.reject(new Error(`the command exited with ${code}:\n${output()}`))),
      ]);
      const pid = Number(/nodefleet-karpenter running \(pid (\d+)/.exec(stdout)?.[1]);
      assert.ok(pid > 0, output());
      return { child, pid, stdout: () => stdout, output, exited };
    }

    /** Stops the command with `signal`; it exits 0 and leaves no controller process or pid file. */
    async function stopCommand(run: Awaited<ReturnType<typeof startCommand>>, signal: NodeJS.Signals) {
      run.child.kill(signal);
      const code = await Promise.race([run.exited, new Promise((r) => setTimeout(() => r("timeout"), 60_000))]);
      assert.equal(code, 0, run.output());
      assert.throws(() => process.kill(run.pid, 0), /ESRCH/, `the controller (pid ${run.pid}) is gone`);
      assert.ok(!existsSync(join(dir, "data", "local", "karpenter.json")), "no controller recorded");
      command = undefined;
    }

    it("applies a NodePool mirroring the burst pool, turns pending pods into a NodeClaim and a Ready Node, and SIGINT leaves no controller", async function () {
      const run = await startCommand();
      const stdout = run.stdout();
      assert.match(stdout, /NodefleetNodeClass local-burst: endpoint http:\/\/127\.0\.0\.1:\d+, cluster local, pool local-burst/);
      assert.match(
        stdout,
        /NodePool local-burst: instance types cpx21, cpx31; limits nodes 50, cpu 200, memory 400Gi; labels node\.kubernetes\.io\/pool=local-burst; taints none/,
      );
      assert.match(stdout, /Try: kubectl --kubeconfig \S+admin\.kubeconfig scale deployment inflate --replicas 5/);
      const admin = cloud!.plane.admin;
      const nodePool = (await kube(admin, "GET", "/apis/karpenter.sh/v1/nodepools/local-burst")) as {
        spec: { limits: Record<string, string> };
      };
      assert.deepEqual(nodePool.spec.limits, { nodes: "50", cpu: "200", memory: "400Gi" });

      // As the hint says: scale the inflate Deployment the command created with 0 replicas.
      await kube(
        admin,
        "PATCH",
        "/apis/apps/v1/namespaces/default/deployments/inflate",
        { spec: { replicas: 2 } },
        "application/merge-patch+json",
      );
      const list = async (path: string) => ((await kube(admin, "GET", path)) as { items: KubeItem[] }).items;
      const node = await until(
        "a NodeClaim Ready as a Ready Node",
        async () => {
          const claim = (await list("/apis/karpenter.sh/v1/nodeclaims")).find((c) =>
            c.status?.conditions?.some((x) => x.type === "Ready" && x.status === "True"),
          );
          if (!claim?.status?.nodeName) return undefined;
          const found = (await kube(admin, "GET", `/api/v1/nodes/${claim.status.nodeName}`)) as KubeItem;
          return found.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ? found : undefined;
        },
        600_000,
        run.output,
      );
      assert.equal(node.metadata.labels?.["karpenter.sh/nodepool"], "local-burst");
      assert.equal(node.metadata.labels?.["node.kubernetes.io/pool"], "local-burst");
      assert.match(node.spec?.providerID ?? "", /^nodefleet:\/\/\/local\//);

      await stopCommand(run, "SIGINT");
    });

    it("applies the same objects again on a second run, keeping the user's replicas, and SIGTERM stops it too", async function () {
      const run = await startCommand();
      const deployment = (await kube(cloud!.plane.admin, "GET", "/apis/apps/v1/namespaces/default/deployments/inflate")) as {
        spec: { replicas: number };
      };
      assert.equal(deployment.spec.replicas, 2, "the inflate Deployment is created only when missing");
      await stopCommand(run, "SIGTERM");
    });
  });
});
