/**
 * Stale stack locks in an object-storage backend: Pulumi's self-managed backend on S3-compatible
 * storage (`s3://bucket[/prefix]?endpoint=…`, as Hetzner's and Scaleway's object storage serve it).
 * A pulumi process killed during a run leaves its lock object behind, and every later run of the
 * stack then fails as locked; the rule is the file backend's (fileBackendState.ts `lockIsStale`: a
 * lock taken on this machine by a process that no longer runs), read and removed through the S3 API,
 * and in serve's shared mode also a lock from another machine while the caller holds the stack's
 * run lock across replicas (docs/scaling-api.md, "A dead replica's stack lock").
 * Keys: `<prefix>.pulumi/locks/organization/<project>/<stack>/<id>.json`, the lock holding pid,
 * username, hostname and timestamp (pkg/backend/diy/lock.go and backend.go of the Pulumi CLI).
 */
import { DeleteObjectCommand, GetObjectCommand, ListObjectsV2Command, S3Client, type S3ClientConfig } from "@aws-sdk/client-s3";
import { hostname } from "node:os";
import { setTimeout as delay } from "node:timers/promises";
import { type StackLock, lockIsStale } from "./fileBackendState";

/** Where an `s3://` backend keeps its objects, and how to reach them. */
export interface ObjectStoreLocation {
  readonly bucket: string;
  /** The key prefix the backend URL's path gives (empty or ending in `/`). */
  readonly prefix: string;
  readonly client: S3ClientConfig;
}

const TRUE = new Set(["true", "1"]);

/**
 * The bucket, prefix and client settings of an `s3://` backend URL, read as gocloud's s3blob reads
 * them (`region`, `endpoint`, `disableSSL` or `disable_https`, `s3ForcePathStyle` or
 * `use_path_style`); undefined for any other backend. Credentials: AWS_ACCESS_KEY_ID and
 * AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN) of `env`, else the AWS SDK's default chain.
 */
export function objectStoreLocation(backendUrl: string, env: NodeJS.ProcessEnv = process.env): ObjectStoreLocation | undefined {
  if (!backendUrl.startsWith("s3://")) return undefined;
  const url = new URL(backendUrl);
  const query = url.searchParams;
  const trimmed = decodeURIComponent(url.pathname).replace(/^\/+/, "");
  const prefix = trimmed === "" || trimmed.endsWith("/") ? trimmed : `${trimmed}/`;
  const plain = TRUE.has(query.get("disableSSL") ?? query.get("disable_https") ?? "");
  const endpoint = query.get("endpoint");
  const region = query.get("region") ?? env.AWS_REGION ?? env.AWS_DEFAULT_REGION ?? "us-east-1";
  const client: S3ClientConfig = {
    region,
    forcePathStyle: TRUE.has(query.get("s3ForcePathStyle") ?? query.get("use_path_style") ?? ""),
    ...(endpoint ? { endpoint: endpoint.includes("://") ? endpoint : `${plain ? "http" : "https"}://${endpoint}` } : {}),
    ...(env.AWS_ACCESS_KEY_ID && env.AWS_SECRET_ACCESS_KEY
      ? {
          credentials: {
            accessKeyId: env.AWS_ACCESS_KEY_ID,
            secretAccessKey: env.AWS_SECRET_ACCESS_KEY,
            ...(env.AWS_SESSION_TOKEN ? { sessionToken: env.AWS_SESSION_TOKEN } : {}),
          },
        }
      : {}),
  };
  return { bucket: url.hostname, prefix, client };
}

/** The stack's locks in the bucket; a lock that cannot be read (being written or deleted) is skipped. */
export async function objectStoreLocks(location: ObjectStoreLocation, project: string, stack: string): Promise<StackLock[]> {
  const s3 = new S3Client(location.client);
  try {
    const dir = `${location.prefix}.pulumi/locks/organization/${project}/${stack}/`;
    const keys: string[] = [];
    let token: string | undefined;
    do {
      const page = await s3.send(new ListObjectsV2Command({ Bucket: location.bucket, Prefix: dir, ContinuationToken: token }));
      for (const object of page.Contents ?? []) if (object.Key?.endsWith(".json")) keys.push(object.Key);
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    const locks: StackLock[] = [];
    for (const key of keys) {
      try {
        const object = await s3.send(new GetObjectCommand({ Bucket: location.bucket, Key: key }));
        const content = JSON.parse((await object.Body?.transformToString()) ?? "") as Omit<StackLock, "path">;
        locks.push({ ...content, path: key });
      } catch {
        // Deleted since the list, or not a lock Pulumi wrote: not ours to judge.
      }
    }
    return locks;
  } finally {
    s3.destroy();
  }
}

/**
 * A run fenced across replicas (serve's shared mode): it holds a lock every replica's run of the
 * stack takes first, so another machine's stack lock is a dead run's (lockIsStale `fenced`).
 */
export interface StackFence {
  /** Whether the run holds that lock now, as its store confirms. */
  held(): Promise<boolean>;
  /**
   * How long another machine's lock is given to go by itself first: a replica that lost its lock
   * while its CLI ran stops that CLI (at once, killed after its force-stop time), releasing it.
   */
  readonly graceMs: number;
  /** Told once when the run starts waiting for another machine's locks. */
  waiting?(locks: readonly StackLock[]): void;
}

/** How often a fenced run looks again for another machine's lock during the grace. */
const FENCE_POLL_MS = 1000;

/**
 * Removes the stack's stale locks from the bucket, never a live process's; returns the removed ones.
 * With a fence held, another machine's lock still there after the fence's grace is stale too.
 */
export async function removeStaleObjectStoreLocks(
  location: ObjectStoreLocation,
  project: string,
  stack: string,
  fence?: StackFence,
): Promise<StackLock[]> {
  const host = hostname();
  let locks = await objectStoreLocks(location, project, stack);
  const foreign = () => locks.filter((lock) => lock.hostname !== host);
  let fenced = false;
  if (fence && foreign().length > 0 && (await fence.held())) {
    fence.waiting?.(foreign());
    const until = Date.now() + fence.graceMs;
    while (foreign().length > 0 && Date.now() < until) {
      await delay(Math.min(FENCE_POLL_MS, until - Date.now()));
      locks = await objectStoreLocks(location, project, stack);
    }
    fenced = foreign().length > 0 && (await fence.held());
  }
  const stale = locks.filter((lock) => lockIsStale(lock, host, fenced));
  if (stale.length === 0) return stale;
  const s3 = new S3Client(location.client);
  try {
    for (const lock of stale) await s3.send(new DeleteObjectCommand({ Bucket: location.bucket, Key: lock.path }));
  } finally {
    s3.destroy();
  }
  return stale;
}
