/**
 * What a kubelet does to join with a bootstrap token, done by the local cloud's node agent against
 * the real control plane: TLS bootstrap (a CSR for `system:node:<name>` sent as the bootstrap
 * token's user, approved and signed by kube-controller-manager), then registering its Node with
 * that identity (so the Node authorizer and NodeRestriction judge the labels it asks for) and
 * reporting it Ready. A token the API server refuses, or a label NodeRestriction refuses, fails here
 * as it would fail a real kubelet.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ResourceList } from "../catalog/instanceTypes";
import { KubeApiError, type KubeIdentity, kube } from "./kubeClient";

export interface KubeletJoin {
  readonly server: string;
  readonly caPem: string;
  /** `<id>.<secret>` */
  readonly bootstrapToken: string;
  readonly nodeName: string;
  readonly providerID: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly taints: ReadonlyArray<{ key: string; value?: string; effect: string }>;
  /** How long to wait for the CSR's certificate. Default 60 s. */
  readonly certificateTimeoutMs?: number;
  /** What the kubelet reports. Default: a 2-CPU, 4Gi node with 110 pods. */
  readonly resources?: NodeStatusResources;
  /** `status.nodeInfo.kubeletVersion`, as the installed kubelet reports it. */
  readonly kubeletVersion?: string;
  /** The kubelet's `--node-ip`: the Node's InternalIP. */
  readonly nodeIp?: string;
}

/** A Node's `status.capacity` and `status.allocatable`, as Kubernetes quantities. */
export interface NodeStatusResources {
  readonly capacity: ResourceList;
  readonly allocatable: ResourceList;
}

const DEFAULT_RESOURCES: NodeStatusResources = {
  capacity: { cpu: "2", memory: "4Gi", pods: "110", "ephemeral-storage": "40Gi" },
  allocatable: { cpu: "2", memory: "4Gi", pods: "110", "ephemeral-storage": "40Gi" },
};

export class KubeletJoinError extends Error {
  override readonly name = "KubeletJoinError";
  constructor(
    readonly stage: "csr" | "certificate" | "register" | "status",
    message: string,
    /** The API server's HTTP status, when it answered; none for a network error or a timeout. */
    readonly status?: number,
  ) {
    super(message);
  }

  /**
   * A failure a kubelet would retry: the API server unreachable or failing (no answer, 5xx, 429), or
   * the certificate not signed in time. A refusal (401, 403, an invalid object) stays a refusal.
   */
  get transient(): boolean {
    return this.status === undefined || this.status >= 500 || this.status === 429;
  }
}

const statusOf = (error: unknown) => (error instanceof KubeApiError ? error.status : undefined);

/** A new key and a CSR for the node's client identity (PEM texts). */
function nodeKeyAndCsr(nodeName: string): { keyPem: string; csrPem: string } {
  const dir = mkdtempSync(join(tmpdir(), "nodefleet-kubelet-"));
  try {
    execFileSync(
      "openssl",
      [
        "req",
        "-new",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-keyout",
        "node.key",
        "-out",
        "node.csr",
        "-subj",
        `/O=system:nodes/CN=system:node:${nodeName}`,
      ],
      {
        cwd: dir,
        stdio: ["ignore", "ignore", "pipe"],
      },
    );
    return { keyPem: readFileSync(join(dir, "node.key"), "utf8"), csrPem: readFileSync(join(dir, "node.csr"), "utf8") };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function requestCertificate(join_: KubeletJoin, csrPem: string): Promise<string> {
  const bootstrap: KubeIdentity = { server: join_.server, caPem: join_.caPem, token: join_.bootstrapToken };
  let name: string;
  try {
    const created = (await kube(bootstrap, "POST", "/apis/certificates.k8s.io/v1/certificatesigningrequests", {
      apiVersion: "certificates.k8s.io/v1",
      kind: "CertificateSigningRequest",
      metadata: { generateName: "node-csr-" },
      spec: {
        request: Buffer.from(csrPem).toString("base64"),
        signerName: "kubernetes.io/kube-apiserver-client-kubelet",
        usages: ["digital signature", "client auth"],
      },
    })) as { metadata: { name: string } };
    name = created.metadata.name;
  } catch (error) {
    throw new KubeletJoinError(
      "csr",
      `the API server refused the bootstrap token's certificate request: ${(error as Error).message}`,
      statusOf(error),
    );
  }
  const deadline = Date.now() + (join_.certificateTimeoutMs ?? 60_000);
  while (Date.now() < deadline) {
    const csr = (await kube(bootstrap, "GET", `/apis/certificates.k8s.io/v1/certificatesigningrequests/${name}`)) as {
      status?: { certificate?: string; conditions?: Array<{ type: string; message?: string }> };
    };
    const denied = csr.status?.conditions?.find((c) => c.type === "Denied" || c.type === "Failed");
    // A denial is the control plane's answer, not a condition that passes.
    if (denied)
      throw new KubeletJoinError("certificate", `certificate request ${name} ${denied.type.toLowerCase()}: ${denied.message ?? ""}`, 403);
    if (csr.status?.certificate) return Buffer.from(csr.status.certificate, "base64").toString("utf8");
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new KubeletJoinError("certificate", `certificate request ${name} was not approved and signed in time`);
}

/** Joins and returns the node's own identity (its client certificate). */
export async function joinAsKubelet(request: KubeletJoin): Promise<KubeIdentity> {
  const { keyPem, csrPem } = nodeKeyAndCsr(request.nodeName);
  const certPem = await requestCertificate(request, csrPem);
  const node: KubeIdentity = { server: request.server, caPem: request.caPem, certPem, keyPem };
  try {
    await kube(node, "POST", "/api/v1/nodes", {
      apiVersion: "v1",
      kind: "Node",
      metadata: {
        name: request.nodeName,
        labels: { "kubernetes.io/hostname": request.nodeName, "kubernetes.io/os": "linux", ...request.labels },
      },
      spec: {
        providerID: request.providerID,
        taints: request.taints.map((t) => ({ key: t.key, ...(t.value !== undefined ? { value: t.value } : {}), effect: t.effect })),
      },
    });
  } catch (error) {
    if (!(error instanceof KubeApiError && error.status === 409)) {
      throw new KubeletJoinError(
        "register",
        `registering Node ${request.nodeName} was refused: ${(error as Error).message}`,
        statusOf(error),
      );
    }
    // As a kubelet whose Node exists already (a machine that joined before and lost its state):
    // it is registered, if it is the same machine's.
    const existing = (await kube(node, "GET", `/api/v1/nodes/${request.nodeName}`)) as { spec?: { providerID?: string } };
    if (existing.spec?.providerID !== request.providerID) {
      throw new KubeletJoinError(
        "register",
        `Node ${request.nodeName} exists with providerID ${existing.spec?.providerID ?? "(none)"}, not ${request.providerID}`,
        409,
      );
    }
  }
  await reportReady(node, request.nodeName, request.resources, request.kubeletVersion, request.nodeIp);
  return node;
}

/** The kubelet's status heartbeat: Ready, with the node's capacity and, given `--node-ip`, its InternalIP. */
export async function reportReady(
  node: KubeIdentity,
  nodeName: string,
  resources: NodeStatusResources = DEFAULT_RESOURCES,
  kubeletVersion?: string,
  nodeIp?: string,
): Promise<void> {
  const now = new Date().toISOString();
  try {
    await kube(
      node,
      "PATCH",
      `/api/v1/nodes/${nodeName}/status`,
      {
        status: {
          conditions: [
            {
              type: "Ready",
              status: "True",
              reason: "KubeletReady",
              message: "nodefleet local node agent",
              lastHeartbeatTime: now,
              lastTransitionTime: now,
            },
          ],
          capacity: resources.capacity,
          allocatable: resources.allocatable,
          ...(kubeletVersion ? { nodeInfo: { kubeletVersion } } : {}),
          ...(nodeIp ? { addresses: [{ type: "InternalIP", address: nodeIp }] } : {}),
        },
      },
      "application/strategic-merge-patch+json",
    );
  } catch (error) {
    throw new KubeletJoinError("status", `reporting Node ${nodeName} Ready failed: ${(error as Error).message}`, statusOf(error));
  }
}
