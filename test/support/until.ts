/** Polling with a deadline, for tests and benchmarks that wait on real processes. */
import { errorMessage } from "../../components/shared/errorMessage";

/**
 * Polls `probe` until it yields a value; a probe that throws counts as not yet. The error names what
 * was awaited, the probe's last error and `context()`.
 */
export async function until<T>(
  what: string,
  probe: () => Promise<T | undefined> | T | undefined,
  timeoutMs: number,
  context: () => string = () => "",
  intervalMs = 500,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) {
      const reason = last === undefined ? "" : ` (last error: ${errorMessage(last)})`;
      throw new Error(`timed out waiting for ${what}${reason}${context() ? `:\n${context()}` : ""}`);
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
