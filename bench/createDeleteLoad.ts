/**
 * The kept-alive create-and-delete loop the write benchmarks drive with autocannon: each connection
 * creates a node (a new uniqueID, so a durable write), deletes it (a PENDING claim is gone at once,
 * so at most one node per connection holds a place in the pool), and so on. The creates' latencies
 * are kept apart from the deletes'.
 */
import autocannon from "autocannon";
import { nodeIdFor } from "../automation/api/nodeIdentity";
import { TOKEN } from "../test/support/apiHarness";

export interface CreateDeleteRun {
  readonly result: autocannon.Result;
  /** Latencies in ms of the creates and of the deletes. */
  readonly creates: number[];
  readonly deletes: number[];
}

export interface CreateDeleteOptions {
  readonly connections: number;
  readonly durationSeconds: number;
  /** Starts every uniqueID: loads running at once against one cluster need prefixes of their own. */
  readonly prefix?: string;
  readonly clusterId?: string;
  readonly pool?: string;
}

export function createDeleteLoad(baseUrl: string, options: CreateDeleteOptions): Promise<CreateDeleteRun> {
  const { connections, durationSeconds, prefix = "keepalive", clusterId = "example", pool = "hel1-burst" } = options;
  let next = 0;
  const uniqueIdOf = new Map<unknown, string>();
  const answered = new Map<unknown, number>();
  const creates: number[] = [];
  const deletes: number[] = [];
  return new Promise<CreateDeleteRun>((resolve, reject) => {
    const tracker = autocannon(
      {
        url: `${baseUrl}/api/v1/clusters/${clusterId}/nodes`,
        headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
        connections,
        duration: durationSeconds,
        requests: [
          {
            method: "POST",
            setupRequest: (request, context) => {
              const uniqueID = `${prefix}-${next++}`;
              uniqueIdOf.set(context, uniqueID);
              return { ...request, body: JSON.stringify({ uniqueID, pool }) };
            },
          },
          {
            method: "DELETE",
            setupRequest: (request, context) => ({
              ...request,
              body: undefined,
              path: `/api/v1/clusters/${clusterId}/nodes/${nodeIdFor(uniqueIdOf.get(context)!)}`,
            }),
          },
        ],
      },
      (error, result) => (error ? reject(error) : resolve({ result, creates, deletes })),
    );
    // One request at a time per connection, so its answers alternate: create, delete, create...
    tracker.on("response", (client, _status, _bytes, ms) => {
      const n = answered.get(client) ?? 0;
      answered.set(client, n + 1);
      (n % 2 === 0 ? creates : deletes).push(ms);
    });
  });
}
