/**
 * `nodes list` as a table: the columns a person scans (`-o wide` adds the ones a person looks up:
 * addresses, IDs, image, why a node failed or drifted). An empty cell is "-".
 */
import type { NodeView } from "../client/nodefleetClient";
import { columns } from "./columns";
import { humanAge } from "./humanAge";

interface Column {
  readonly header: string;
  readonly cell: (node: NodeView, now: Date) => string | null | undefined;
}

/** The status and what qualifies it, kubectl style: "RUNNING,Drifted", "FAILED,InsufficientCapacity". */
function status(node: NodeView): string {
  return [node.status, node.status === "FAILED" ? node.failureCode : undefined, node.drifted ? "Drifted" : undefined]
    .filter(Boolean)
    .join(",");
}

const NARROW: readonly Column[] = [
  { header: "NODE ID", cell: (n) => n.nodeID },
  { header: "STATUS", cell: status },
  { header: "POOL", cell: (n) => n.pool },
  { header: "INSTANCE TYPE", cell: (n) => n.instanceType },
  { header: "ZONE", cell: (n) => n.zone },
  { header: "IPV4", cell: (n) => n.ipv4 },
  { header: "AGE", cell: (n, now) => humanAge(new Date(n.createdAt), now) },
];

const WIDE: readonly Column[] = [
  ...NARROW,
  { header: "PRIVATE IP", cell: (n) => n.privateIpv4 },
  { header: "PROVIDER ID", cell: (n) => n.providerID },
  { header: "INSTANCE ID", cell: (n) => n.instanceID },
  { header: "IMAGE", cell: (n) => n.imageID },
  { header: "REASON", cell: (n) => n.failureReason ?? (n.drifted ? `${n.driftReason ?? "Drifted"}: ${n.driftDetails ?? ""}` : undefined) },
];

export function nodeTable(nodes: readonly NodeView[], options: { readonly wide: boolean; readonly now?: Date }): string {
  const shown = options.wide ? WIDE : NARROW;
  const now = options.now ?? new Date();
  return columns(
    shown.map((column) => column.header),
    nodes.map((node) => shown.map((column) => column.cell(node, now) || "-")),
  );
}
