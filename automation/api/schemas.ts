/**
 * The zod schemas of the scaling API: they validate requests, serialise responses and are the
 * single source of the OpenAPI document (`/openapi.json`, committed as openapi.json). Schemas the
 * Go driver's client names are `named` and become component schemas.
 */
import { z } from "zod";
import { DNS_SUBDOMAIN, DNS_SUBDOMAIN_MAX, labelKey, labelsSchema, taintListSchema, taintSchema } from "../../components/fleet/fleetSpec";
import { reservedLabels } from "../../components/fleet/reservedLabels";
import { NUMERIC_OPERATORS, REQUIREMENT_OPERATORS } from "../catalog/requirements";
import { DRIFT_REASON } from "../reconciler/memberSnapshot";
import { ERROR_CODES, type ErrorCode } from "./apiError";

/**
 * A component schema of the OpenAPI document. The id goes to zod's global registry, where
 * `.describe()` puts descriptions too: the document generator reads both from there.
 */
function named<T extends z.ZodType>(id: string, schema: T): T {
  return schema.meta({ id }) as T;
}

const errorCodeSchema = named(
  "ErrorCode",
  z
    .enum(Object.keys(ERROR_CODES) as [ErrorCode, ...ErrorCode[]])
    .describe("One code per meaning; NodeNotFound is the only code meaning the node is gone"),
);
export const errorResponseSchema = named(
  "Error",
  z
    .object({
      error: z.object({
        code: errorCodeSchema,
        message: z.string(),
        details: z.unknown().optional(),
      }),
    })
    .describe("Every error response"),
);

export const clusterParams = z.object({ clusterId: z.string().min(1).max(63) });
export const nodeParams = clusterParams.extend({ nodeId: z.string().min(1).max(63) });

const quantity = z.string().describe("Kubernetes resource quantity");
const resourceListSchema = named(
  "ResourceList",
  z.object({
    cpu: quantity,
    memory: quantity,
    pods: quantity,
    "ephemeral-storage": quantity,
  }),
);

const NODE_STATUSES = ["PENDING", "PROVISIONING", "RUNNING", "FAILED", "TERMINATING"] as const;

const requirementSchema = named(
  "Requirement",
  z
    .strictObject({
      // As the API server validates a node selector requirement's key (a label key).
      key: labelKey.min(1).max(317),
      operator: z.enum(REQUIREMENT_OPERATORS),
      values: z.array(z.string().max(63)).max(100).optional(),
      minValues: z
        .number()
        .int()
        .min(1, { error: "minValues must be at least 1" })
        .max(50, { error: "minValues must be at most 50" })
        .optional()
        .describe("Karpenter's minValues: at least this many distinct values of the key must fit, else 422 NoCompatibleInstanceType"),
    })
    // As the Kubernetes API server (and Karpenter's NodeClaim validation, for Gte and Lte) validates a requirement.
    .superRefine((r, context) => {
      const count = r.values?.length ?? 0;
      const problem =
        (r.operator === "In" || r.operator === "NotIn") && count === 0
          ? `operator ${r.operator} needs at least one value`
          : (r.operator === "Exists" || r.operator === "DoesNotExist") && count > 0
            ? `operator ${r.operator} takes no values`
            : NUMERIC_OPERATORS.includes(r.operator) && (count !== 1 || !/^-?\d+$/.test(r.values![0]!))
              ? `operator ${r.operator} needs exactly one integer value`
              : undefined;
      if (problem) context.addIssue({ code: "custom", path: ["values"], message: problem });
    }),
);

const taintViewSchema = named("Taint", taintSchema);

export const createNodeBodySchema = named(
  "CreateNodeRequest",
  z
    .strictObject({
      uniqueID: z
        .string()
        .max(DNS_SUBDOMAIN_MAX, { error: `uniqueID must be at most ${DNS_SUBDOMAIN_MAX} characters` })
        .regex(DNS_SUBDOMAIN, {
          error:
            "uniqueID must be a DNS subdomain: lower-case letters, digits, '-' and '.', each dot-separated part starting and ending with a letter or digit",
        })
        .describe("The NodeClaim name (a Kubernetes object name); creates with the same uniqueID are idempotent"),
      pool: z.string().min(1).max(63).describe("An autoscaled pool of the cluster"),
      instanceType: z.string().min(1).max(63).optional().describe("Server type; the cheapest available fitting type when absent"),
      zone: z.string().min(1).max(63).optional().describe("Hetzner location, e.g. hel1"),
      requirements: z
        .array(requirementSchema)
        .max(100)
        .optional()
        .describe("Kubernetes node selector requirements (In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte, Lte)"),
      labels: labelsSchema
        .refine((l) => Object.keys(l).length <= 100, { error: "at most 100 labels" })
        // The kubernetes.io/k8s.io keys neither the kubelet nor Karpenter may set, kubernetes.io/hostname and nodefleet.io/ (reservedLabels.ts).
        .superRefine((labels, context) => {
          for (const { key, message } of reservedLabels(labels, "karpenter")) context.addIssue({ code: "custom", path: [key], message });
        })
        .optional()
        .describe(
          "NodeClaim labels; a replay may carry more than the first create. Keys are qualified names as Kubernetes validates them (an optional DNS-subdomain prefix of at most 253 characters and '/', then at most 63 alphanumerics, '-', '_' or '.'), a rule OpenAPI 3.0 cannot state for object keys",
        ),
      taints: taintListSchema
        .max(50)
        .optional()
        .describe("Merged with the pool's taints by (key, effect), these values winning; a repeated (key, effect) is 400"),
    })
    .describe("A node to create"),
);
export type CreateNodeBody = z.infer<typeof createNodeBodySchema>;

export const createNodeQuerySchema = z.strictObject({
  // Decimal digits only: Number() would also take "0x10", "", " 5" and "1e2".
  waitSeconds: z
    .preprocess(
      (value) => (typeof value === "string" && /^[0-9]{1,3}$/.test(value) ? Number(value) : value),
      z
        .number({ error: "waitSeconds must be a whole number of seconds from 0 to 120, written in decimal digits" })
        .int()
        .min(0)
        .max(120, { error: "waitSeconds must be at most 120" }),
    )
    .optional()
    .describe("Wait until the node is RUNNING or FAILED (at most this long) before answering"),
});

export const nodeSchema = named(
  "Node",
  z.object({
    nodeID: z.string(),
    providerID: z.string(),
    status: z.enum(NODE_STATUSES),
    instanceID: z.string().nullable(),
    pool: z.string(),
    instanceType: z.string(),
    zone: z.string(),
    ipv4: z.string().nullable(),
    privateIpv4: z.string().nullable(),
    capacity: resourceListSchema,
    allocatable: resourceListSchema,
    imageID: z.string().describe("The image the server boots (Karpenter's NodeClaim status.imageID)"),
    labels: z
      .record(z.string(), z.string())
      .describe("Every label the Node carries, including instance-type, zone, region, arch, os and capacity-type"),
    taints: z.array(taintViewSchema).describe("The pool's and the request's taints merged by (key, effect)"),
    createdAt: z.string(),
    updatedAt: z.string(),
    failureCode: z
      .string()
      .optional()
      .describe(
        "FAILED only: InsufficientCapacity (sold out, quota, unusable image or a full pool: the offering or pool is backed off) or CreateFailed",
      ),
    failureReason: z.string().optional().describe("FAILED only: what went wrong, for people"),
    drifted: z.boolean(),
    driftReason: z
      .string()
      .regex(DRIFT_REASON)
      .optional()
      .describe(
        "A Kubernetes condition Reason naming what drifted, e.g. ServerTypeDrift or ImageDrift,LabelsDrift (Karpenter's IsDrifted)",
      ),
    driftDetails: z.string().optional().describe("The drifted fields with their old and new values, for people"),
  }),
);
export type NodeView = z.infer<typeof nodeSchema>;

export const listNodesQuerySchema = z.strictObject({ pool: z.string().min(1).max(63).optional() });
export const nodeListSchema = named("NodeList", z.object({ nodes: z.array(nodeSchema) }));
export const deleteNodeResponseSchema = named("DeleteNodeResponse", z.object({ nodeID: z.string(), status: z.literal("TERMINATING") }));

const offeringSchema = named(
  "Offering",
  z.object({
    zone: z.string(),
    capacityType: z.literal("on-demand"),
    price: z.number().describe("EUR per hour, net"),
    available: z
      .boolean()
      .describe(
        "false while sold out, not sold in the zone, while the pool has no room for this type under its limits, or while a recent create failed in a way the next would repeat (quota, unusable image, full network or placement group)",
      ),
    unavailableReason: z.string().optional().describe("Why the offering is unavailable; absent while it is available"),
    backoffUntil: z
      .string()
      .datetime()
      .optional()
      .describe(
        "While a recent create failed in a way the next would repeat (sold out, quota, unusable image, full pool): when the offering is tried again. Absent for any other reason",
      ),
  }),
);
export const instanceTypeSchema = named(
  "InstanceType",
  z.object({
    name: z.string(),
    pool: z.string(),
    provider: z.literal("hcloud"),
    arch: z.enum(["amd64", "arm64"]),
    os: z.literal("linux"),
    region: z.string().describe("The node's topology.kubernetes.io/region: the Hetzner network zone, e.g. eu-central"),
    cpu: z.number(),
    memoryMiB: z
      .number()
      .describe(
        "The server's GiB less the estimated VM overhead, as the nodefleet.io/instance-memory label gives it; stays the estimate when capacitySource is learned",
      ),
    gpu: z.number(),
    capacity: resourceListSchema,
    overhead: resourceListSchema,
    capacitySource: z
      .enum(["estimated", "learned"])
      .describe(
        "Where capacity and overhead come from. estimated: capacity from the server type's figures less a fixed VM overhead, overhead from the kubelet's reservations. learned: capacity and allocatable (capacity - overhead) are the smallest any Ready Node of this server type, the pool's image and the cluster's kubelet settings reported; a Node reporting less lowers them, none raises them",
      ),
    offerings: z.array(offeringSchema),
  }),
);
export const instanceTypeListSchema = named("InstanceTypeList", z.object({ instanceTypes: z.array(instanceTypeSchema) }));

const poolSchema = named(
  "Pool",
  z.object({
    name: z.string(),
    provider: z.literal("hcloud"),
    location: z.string(),
    serverTypes: z.array(z.string()),
    limits: z.object({ maxNodes: z.number(), cpu: z.number().optional(), memoryGiB: z.number().optional() }),
    usage: z.object({ nodes: z.number(), cpu: z.number(), memoryGiB: z.number() }),
    templateHash: z
      .string()
      .describe(
        "Fingerprint of the pool's current template: it changes with anything that could drift the pool's nodes, so a driver re-checks their drift then",
      ),
    labels: z
      .record(z.string(), z.string())
      .describe(
        "The labels the pool's template puts on every node of the pool (its labels in the fleet spec), before a create's own labels; a Karpenter NodePool for the pool should carry them in its template so Karpenter knows them before a node exists",
      ),
    taints: z
      .array(taintViewSchema)
      .describe(
        "The taints the pool's template puts on every node of the pool (its taints in the fleet spec), before a create's own taints are merged in by (key, effect). A Karpenter NodePool for the pool must carry each of them, with the same key, value and effect, in spec.template.spec.taints or startupTaints: Karpenter schedules pods by the NodePool's taints, and the nodefleet driver keeps its NodeClass NotReady (reason NodePoolTaintsNotCovered) while a NodePool using it does not",
      ),
  }),
);
export const clusterSchema = named(
  "Cluster",
  z.object({
    id: z.string(),
    kind: z.enum(["k0s", "kubeadm"]),
    providerIdScheme: z.string(),
    pools: z.array(poolSchema),
  }),
);

export const operationSchema = named(
  "Operation",
  z.object({
    id: z.number(),
    kind: z.enum(["up", "refresh", "preview"]),
    startedAt: z.string(),
    finishedAt: z.string().optional(),
    result: z.enum(["running", "succeeded", "failed", "abandoned"]),
    summary: z.object({ create: z.number(), update: z.number(), replace: z.number(), delete: z.number(), same: z.number() }).optional(),
    nodes: z.array(z.string()),
    error: z.string().optional(),
    details: z.unknown().optional(),
  }),
);
export const operationListSchema = named("OperationList", z.object({ operations: z.array(operationSchema) }));

export const healthSchema = named("Health", z.object({ status: z.literal("ok") }));
export const readinessSchema = named(
  "Readiness",
  z.object({
    status: z.enum(["ready", "starting", "degraded", "stopping"]),
    details: z.record(z.string(), z.unknown()).optional(),
  }),
);
