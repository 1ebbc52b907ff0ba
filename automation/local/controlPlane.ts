/**
 * A real Kubernetes control plane on 127.0.0.1 from the toolchain's binaries: etcd,
 * kube-apiserver (bootstrap-token authentication, Node authorizer, NodeRestriction),
 * kube-controller-manager (CSR approval and signing with the cluster CA, token cleaner) and
 * kube-scheduler. State and certificates persist in `<dir>`; `stop()` ends the processes, and a
 * later start continues with the same cluster. `stopApiServer()` and `startApiServer()` take the
 * kube-apiserver alone away and back (same port, same etcd), for tests of a control-plane outage. The bootstrap RBAC a k0s or kubeadm control plane
 * installs for joining kubelets is applied on start.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, openSync, readFileSync, writeFileSync } from "node:fs";
import { freePort, portIsFree } from "./freePort";
import { join } from "node:path";
import { stringify } from "yaml";
import { findTool } from "../engine/toolchain";
import { type KubeIdentity, kube, kubeCreate } from "./kubeClient";
import { type ClusterPki, ensurePki } from "./pki";

export interface ControlPlane {
  readonly server: string;
  readonly pki: ClusterPki;
  /** An admin (system:masters) identity for the API. */
  readonly admin: KubeIdentity;
  /** Path of the admin kubeconfig. */
  readonly adminKubeconfig: string;
  stop(): Promise<void>;
  /** Ends the kube-apiserver only (its port then refuses connections); etcd and the controllers keep running. */
  stopApiServer(): Promise<void>;
  /** Starts the kube-apiserver again with the same flags and waits until it is ready. */
  startApiServer(): Promise<void>;
}

export class ControlPlaneError extends Error {
  override readonly name = "ControlPlaneError";
}

const BINARIES = ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"] as const;

/** The control plane's binaries from the toolchain; throws naming the missing ones and the fix. */
export function controlPlaneBinaries(env: NodeJS.ProcessEnv): Record<(typeof BINARIES)[number], string> {
  const found = Object.fromEntries(BINARIES.map((name) => [name, findTool(name, env)]));
  const missing = BINARIES.filter((name) => !found[name]);
  if (missing.length) throw new ControlPlaneError(`${missing.join(", ")} not found: run \`npm run toolchain\``);
  return found as Record<(typeof BINARIES)[number], string>;
}

/** Kubeconfig for `identity` files, as kubectl and the Kubernetes provider read it. */
function kubeconfigYaml(server: string, pki: ClusterPki, user: { cert: string; key: string }): string {
  return stringify({
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: "local", cluster: { server, "certificate-authority-data": readFileSync(pki.caCert).toString("base64") } }],
    users: [
      {
        name: "admin",
        user: {
          "client-certificate-data": readFileSync(user.cert).toString("base64"),
          "client-key-data": readFileSync(user.key).toString("base64"),
        },
      },
    ],
    contexts: [{ name: "local", context: { cluster: "local", user: "admin" } }],
    "current-context": "local",
  });
}

/** Kills the processes a previous start recorded, if they still run the same binaries. */
function killLeftovers(pidFile: string): void {
  let recorded: Array<{ pid: number; binary: string }>;
  try {
    recorded = JSON.parse(readFileSync(pidFile, "utf8")) as Array<{ pid: number; binary: string }>;
  } catch {
    return;
  }
  const running = (pid: number, binary: string) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0")[0] === binary;
    } catch {
      return false;
    }
  };
  // Until it is a zombie or gone: an exiting process loses its command line before it closes its
  // sockets, so the command line cannot tell when the ports are free.
  const exited = (pid: number) => {
    try {
      return readFileSync(`/proc/${pid}/stat`, "utf8").includes(") Z ");
    } catch {
      return true;
    }
  };
  const left = recorded.filter(({ pid, binary }) => running(pid, binary));
  for (const { pid } of left) process.kill(pid, "SIGKILL");
  // A zombie's other threads may still hold its sockets a moment longer: assertPortsFree waits for those.
  const deadline = Date.now() + 10_000;
  while (left.some(({ pid }) => !exited(pid)) && Date.now() < deadline) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 100);
}

async function waitReady(admin: KubeIdentity, processes: ChildProcess[], timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = "";
  while (Date.now() < deadline) {
    const dead = processes.find((p) => p.exitCode !== null);
    if (dead)
      throw new ControlPlaneError(`${dead.spawnfile} exited with code ${dead.exitCode} (see its log in the control-plane directory)`);
    try {
      await kube(admin, "GET", "/readyz");
      return;
    } catch (error) {
      last = (error as Error).message;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new ControlPlaneError(`the API server was not ready within ${timeoutMs / 1000} s: ${last}`);
}

/** What kubeadm and k0s install so that bootstrap tokens can request, and get, kubelet certificates. */
async function applyBootstrapRbac(admin: KubeIdentity): Promise<void> {
  const bindings = [
    ["nodefleet:kubelet-bootstrap", "system:node-bootstrapper", "system:bootstrappers"],
    ["nodefleet:node-autoapprove-bootstrap", "system:certificates.k8s.io:certificatesigningrequests:nodeclient", "system:bootstrappers"],
    [
      "nodefleet:node-autoapprove-certificate-rotation",
      "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
      "system:nodes",
    ],
  ];
  for (const [name, role, group] of bindings) {
    await kubeCreate(admin, "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRoleBinding",
      metadata: { name },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: role },
      subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "Group", name: group }],
    });
  }
}

/** Ports persisted in `<dir>/ports.json`, so join tokens and kubeconfigs stay valid across restarts. */
async function stablePorts(dir: string): Promise<{ etcdClient: number; etcdPeer: number; api: number }> {
  const file = join(dir, "ports.json");
  try {
    return JSON.parse(readFileSync(file, "utf8")) as { etcdClient: number; etcdPeer: number; api: number };
  } catch {
    const [etcdClient, etcdPeer, api] = await Promise.all([freePort(), freePort(), freePort()]);
    const ports = { etcdClient: etcdClient!, etcdPeer: etcdPeer!, api: api! };
    writeFileSync(file, JSON.stringify(ports));
    return ports;
  }
}

/** Refuses ports another process holds, naming them: the components would only exit with a line in their logs. */
async function assertPortsFree(
  ports: { etcdClient: number; etcdPeer: number; api: number },
  dir: string,
  only?: ReadonlyArray<"etcdClient" | "etcdPeer" | "api">,
): Promise<void> {
  const roles = (
    [
      ["etcdClient", "etcd's client"],
      ["etcdPeer", "etcd's peer"],
      ["api", "kube-apiserver's"],
    ] as const
  ).filter(([key]) => !only || only.includes(key));
  // Leftovers just killed release their ports as their last threads exit.
  const deadline = Date.now() + 10_000;
  for (const [key, role] of roles) {
    const port = ports[key];
    let free = await portIsFree(port);
    while (!free && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      free = await portIsFree(port);
    }
    if (!free) {
      throw new ControlPlaneError(
        `127.0.0.1:${port}, the control plane's ${role} port (kept in ${join(dir, "ports.json")} so that kubeconfigs and join tokens stay valid), is in use by another process: stop it, or remove ${dir} to start a new cluster`,
      );
    }
  }
}

export async function startControlPlane(options: {
  dir: string;
  env?: NodeJS.ProcessEnv;
  readyTimeoutMs?: number;
  /** Where the admin kubeconfig is written (default `<dir>/admin.kubeconfig`). */
  adminKubeconfig?: string;
}): Promise<ControlPlane> {
  const env = options.env ?? process.env;
  const bin = controlPlaneBinaries(env);
  const dir = options.dir;
  mkdirSync(join(dir, "logs"), { recursive: true, mode: 0o700 });
  const pki = ensurePki(join(dir, "pki"));
  const ports = await stablePorts(dir);
  const { etcdClient, etcdPeer, api: apiPort } = ports;
  const server = `https://127.0.0.1:${apiPort}`;
  const adminKubeconfig = options.adminKubeconfig ?? join(dir, "admin.kubeconfig");
  writeFileSync(adminKubeconfig, kubeconfigYaml(server, pki, { cert: pki.adminCert, key: pki.adminKey }), { mode: 0o600 });

  // A previous local cloud killed without stopping (SIGKILL, a crash) leaves its processes behind.
  const pidFile = join(dir, "pids.json");
  killLeftovers(pidFile);
  await assertPortsFree(ports, dir);
  const processes: ChildProcess[] = [];
  /** How each component was started, so an outage can be ended by starting the exited ones again. */
  const commands = new Map<ChildProcess, { name: (typeof BINARIES)[number]; args: string[] }>();
  const start = (name: (typeof BINARIES)[number], args: string[]) => {
    const log = openSync(join(dir, "logs", `${name}.log`), "a");
    const child = spawn(bin[name], args, { stdio: ["ignore", log, log], env: { PATH: env.PATH ?? "" } });
    processes.push(child);
    commands.set(child, { name, args });
    writeFileSync(pidFile, JSON.stringify(processes.map((p) => ({ pid: p.pid, binary: p.spawnfile }))));
    return child;
  };
  const end = async (child: ChildProcess) => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
    await exited;
    clearTimeout(timer);
  };
  const stop = async () => {
    for (const child of [...processes].reverse()) await end(child);
  };

  try {
    start("etcd", [
      `--data-dir=${join(dir, "etcd")}`,
      `--listen-client-urls=http://127.0.0.1:${etcdClient}`,
      `--advertise-client-urls=http://127.0.0.1:${etcdClient}`,
      `--listen-peer-urls=http://127.0.0.1:${etcdPeer}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${etcdPeer}`,
      `--initial-cluster=default=http://127.0.0.1:${etcdPeer}`,
      "--log-level=warn",
    ]);
    const apiServerArgs = [
      `--etcd-servers=http://127.0.0.1:${etcdClient}`,
      "--bind-address=127.0.0.1",
      "--advertise-address=127.0.0.1",
      `--secure-port=${apiPort}`,
      `--tls-cert-file=${pki.apiserverCert}`,
      `--tls-private-key-file=${pki.apiserverKey}`,
      `--client-ca-file=${pki.caCert}`,
      `--service-account-issuer=https://kubernetes.default.svc`,
      `--service-account-key-file=${pki.serviceAccountPub}`,
      `--service-account-signing-key-file=${pki.serviceAccountKey}`,
      "--service-cluster-ip-range=10.96.0.0/16",
      "--enable-bootstrap-token-auth=true",
      "--authorization-mode=Node,RBAC",
      "--enable-admission-plugins=NodeRestriction",
      "--allow-privileged=true",
      "--profiling=false",
    ];
    let apiServer = start("kube-apiserver", apiServerArgs);
    const admin: KubeIdentity = {
      server,
      caPem: readFileSync(pki.caCert, "utf8"),
      certPem: readFileSync(pki.adminCert, "utf8"),
      keyPem: readFileSync(pki.adminKey, "utf8"),
    };
    // Both controllers talk to the API server as admin and serve nothing themselves.
    const controllerFlags = [
      `--kubeconfig=${adminKubeconfig}`,
      `--authentication-kubeconfig=${adminKubeconfig}`,
      `--authorization-kubeconfig=${adminKubeconfig}`,
      "--bind-address=127.0.0.1",
      "--secure-port=0",
      "--leader-elect=false",
    ];
    start("kube-controller-manager", [
      ...controllerFlags,
      "--controllers=*,bootstrapsigner,tokencleaner",
      `--cluster-signing-cert-file=${pki.caCert}`,
      `--cluster-signing-key-file=${pki.caKey}`,
      `--root-ca-file=${pki.caCert}`,
      `--service-account-private-key-file=${pki.serviceAccountKey}`,
      "--use-service-account-credentials=true",
    ]);
    start("kube-scheduler", controllerFlags);
    await waitReady(admin, processes, options.readyTimeoutMs ?? 90_000);
    await applyBootstrapRbac(admin);
    const stopApiServer = async () => {
      await end(apiServer);
    };
    // The controllers may give up on an API server that is away for long (kube-controller-manager
    // exits): started again too, as a real control plane's supervisor would.
    const startApiServer = async () => {
      const exited = processes.filter((p) => p.exitCode !== null || p.signalCode !== null);
      if (exited.length === 0) return;
      if (exited.includes(apiServer)) await assertPortsFree({ etcdClient: 0, etcdPeer: 0, api: apiPort }, dir, ["api"]);
      for (const child of exited) {
        processes.splice(processes.indexOf(child), 1);
        const { name, args } = commands.get(child)!;
        const restarted = start(name, args);
        if (child === apiServer) apiServer = restarted;
      }
      await waitReady(admin, processes, options.readyTimeoutMs ?? 90_000);
    };
    return { server, pki, admin, adminKubeconfig, stop, stopApiServer, startApiServer };
  } catch (error) {
    await stop();
    throw error;
  }
}
