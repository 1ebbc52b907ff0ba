/**
 * Errors that mean the store (or the disk under the data directory) cannot write right now: a full
 * disk, an I/O error, a read-only file system. They are the service's condition, not the client's
 * request: answered 503 (retry later), reported by /readyz, and retried by the reconciler until the
 * disk recovers.
 */
const STORAGE_CODES = /^(SQLITE_FULL|SQLITE_IOERR.*|SQLITE_READONLY.*|ENOSPC|EDQUOT|EROFS|EIO|NODEFLEET_SYNC_FAILED)$/;

export function isStorageFailure(error: unknown): boolean {
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === "string" && STORAGE_CODES.test(code);
}

/** What to tell a client or an operator, without internals beyond the condition itself. */
export function storageFailureReason(error: unknown): string {
  const code = String((error as { code?: unknown }).code);
  // After a failed fsync the write may or may not be on disk: a replay with the same uniqueID is the safe retry.
  if (code === "NODEFLEET_SYNC_FAILED")
    return "the data directory's disk failed to persist a write, so the service stops until a restart recovers what is on disk; whether this request was recorded is unknown";
  const what =
    code === "SQLITE_FULL" || code === "ENOSPC" || code === "EDQUOT"
      ? "the disk of the data directory is full"
      : `the data directory cannot be written (${code})`;
  return `${what}; nothing was recorded`;
}
