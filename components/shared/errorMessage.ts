/** The message of a caught value: an Error's `message`, anything else (a thrown string, a rejection reason) as a string. */
export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
