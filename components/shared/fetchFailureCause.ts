/**
 * What a failed fetch's cause says: fetch itself reports only "fetch failed", its cause the reason
 * (ECONNREFUSED and the address, a reset, a DNS failure). The code first when the message lacks it.
 */
export function fetchFailureCause(error: unknown): string | undefined {
  const cause = error instanceof Error ? (error.cause as { code?: string; message?: string } | undefined) : undefined;
  if (cause?.code && cause.message && !cause.message.includes(cause.code)) return `${cause.code} (${cause.message})`;
  // `||`: a refused connection to a name with several addresses is an AggregateError with an empty message.
  return cause?.message || cause?.code;
}
