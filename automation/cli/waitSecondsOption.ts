/**
 * `nodes create --wait-seconds`: checked here, before any request, with the API's own rule (a whole
 * number of seconds from 0 to 120, api/schemas.ts createNodeQuerySchema), so a typo costs no round
 * trip and the error names the option the user typed rather than the API's query parameter.
 */
import { InvalidArgumentError } from "commander";

const MAX_WAIT_SECONDS = 120;

export function parseWaitSeconds(value: string): number {
  // Decimal digits only, as the API: Number() would also take "0x10", "1e2" and " 5".
  if (!/^[0-9]{1,3}$/.test(value) || Number(value) > MAX_WAIT_SECONDS) {
    throw new InvalidArgumentError(`--wait-seconds must be a whole number of seconds from 0 to ${MAX_WAIT_SECONDS}`);
  }
  return Number(value);
}
