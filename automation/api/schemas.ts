/**
 * The zod schemas of the scaling API: they validate requests, serialise responses and are the
 * single source of the OpenAPI document (`/openapi.json`, committed as openapi.json).
 */
import { z } from "zod";
import { DNS_LABEL, labelsSchema, taintSchema } from "../../components/fleet/fleetSpec";
import { REQUIREMENT_OPERATORS } from "../catalog/requirements";


export const errorResponseSchema = z
  .object({
    error: z.object({
      code: z.string().describe("Machine-readable code, e.g. NodeNotFound, InsufficientCapacity, ValidationError"),
      message: z.string(),
      details: z.unknown().optional(),
    }),
  })
  .describe("Every error response");

export const clusterParams = z.object({ clusterId: z.string().min(1).max(63) });
export const nodeParams = clusterParams.extend({ nodeId: z.string().min(1).max(63) });

const quantity = z.string().describe("Kubernetes resource quantity");
export const resourceListSchema = z.object({
  cpu: quantity,
  memory: quantity,
  pods: quantity,
  "ephemeral-storage": quantity,
});

export const NODE_STATUSES = ["PENDING", "PROVISIONING", "RUNNING", "FAILED", "TERMINATING"] as const;

export const requirementSchema = z
  .strictObject({
    key: z.string().min(1).max(317),
    operator: z.enum(REQUIREMENT_OPERATORS),
    values: z.array(z.string().max(63)).max(100).optional(),
  })
  // As the Kubernetes API server validates a node selector requirement.
  .superRefine((r, context) => {
    const count = r.values?.length ?? 0;
    const problem =
      (r.operator === "In" || r.operator === "NotIn") && count === 0
        ? `operator ${r.operator} needs at least one value`
        : (r.operator === "Exists" || r.operator === "DoesNotExist") && count > 0
          ? `operator ${r.operator} takes no values`
          : (r.operator === "Gt" || r.operator === "Lt") && (count !== 1 || !/^-?\d+$/.test(r.values![0]!))
            ? `operator ${r.operator} needs exactly one integer value`
            : undefined;
    if (problem) context.addIssue({ code: "custom", path: ["values"], message: problem });
  });

export const createNodeBodySchema = z
  .strictObject({
    uniqueID: z
      .string()
      .max(63)
      .regex(DNS_LABEL, { error: "uniqueID must be lower-case letters, digits and '-', starting and ending with a letter or digit" })
      .describe("The NodeClaim name; creates with the same uniqueID are idempotent"),
    pool: z.string().min(1).max(63).describe("An autoscaled pool of the cluster"),
    instanceType: z.string().min(1).max(63).optional().describe("Server type; the cheapest available fitting type when absent"),
    zone: z.string().min(1).max(63).optional().describe("Hetzner location, e.g. hel1"),
    requirements: z.array(requirementSchema).max(100).optional().describe("Kubernetes node selector requirements"),
    labels: labelsSchema
      .refine((l) => Object.keys(l).length <= 100, { error: "at most 100 labels" })
      .optional(),
    taints: z.array(taintSchema).max(50).optional(),
  })
  .describe("A node to create");
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

export const nodeSchema = z.object({
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
  labels: z.record(z.string(), z.string()),
  taints: z.array(z.object({ key: z.string(), value: z.string().optional(), effect: z.string() })),
  createdAt: z.string(),
  updatedAt: z.string(),
  failureReason: z.string().optional(),
  drifted: z.boolean(),
  driftReason: z.string().optional(),
});
export type NodeView = z.infer<typeof nodeSchema>;

export const listNodesQuerySchema = z.strictObject({ pool: z.string().min(1).max(63).optional() });
export const nodeListSchema = z.object({ nodes: z.array(nodeSchema) });
export const deleteNodeResponseSchema = z.object({ nodeID: z.string(), status: z.literal("TERMINATING") });

export const offeringSchema = z.object({
  zone: z.string(),
  capacityType: z.literal("on-demand"),
  price: z.number().describe("EUR per hour, net"),
  available: z.boolean(),
});
export const instanceTypeSchema = z.object({
  name: z.string(),
  pool: z.string(),
  provider: z.literal("hcloud"),
  arch: z.enum(["amd64", "arm64"]),
  cpu: z.number(),
  memoryMiB: z.number(),
  gpu: z.number(),
  capacity: resourceListSchema,
  overhead: resourceListSchema,
  offerings: z.array(offeringSchema),
});
export const instanceTypeListSchema = z.object({ instanceTypes: z.array(instanceTypeSchema) });

export const clusterSchema = z.object({
  id: z.string(),
  kind: z.enum(["k0s", "kubeadm"]),
  providerIdScheme: z.string(),
  pools: z.array(
    z.object({
      name: z.string(),
      provider: z.literal("hcloud"),
      location: z.string(),
      serverTypes: z.array(z.string()),
      limits: z.object({ maxNodes: z.number(), cpu: z.number().optional(), memoryGiB: z.number().optional() }),
      usage: z.object({ nodes: z.number(), cpu: z.number(), memoryGiB: z.number() }),
    }),
  ),
});

export const operationSchema = z.object({
  id: z.number(),
  kind: z.enum(["up", "refresh", "preview"]),
  startedAt: z.string(),
  finishedAt: z.string().optional(),
  result: z.enum(["running", "succeeded", "failed", "abandoned"]),
  summary: z
    .object({ create: z.number(), update: z.number(), replace: z.number(), delete: z.number(), same: z.number() })
    .optional(),
  nodes: z.array(z.string()),
  error: z.string().optional(),
  details: z.unknown().optional(),
});
export const operationListSchema = z.object({ operations: z.array(operationSchema) });

export const healthSchema = z.object({ status: z.literal("ok") });
export const readinessSchema = z.object({
  status: z.enum(["ready", "starting", "degraded", "stopping"]),
  details: z.record(z.string(), z.unknown()).optional(),
});
