/**
 * Declares resources without the source position and stack trace the Pulumi Node SDK records for
 * each one (`Resource.callsites` in @pulumi/pulumi's resource.ts parses `new Error().stack` and the
 * engine keeps every frame in the state). For a fleet member that is about 1.2 KiB per resource, a
 * quarter of the member's state, longer the deeper nodefleet is installed, and all of it points
 * into nodefleet's own code; every checkpoint write of a large stack pays for it.
 */

/** The function of the SDK whose `new Error().stack` becomes a resource's source position. */
const SDK_CALLSITES_FUNCTION = "callsites";

/** V8's own rendering of a stack (what `.stack` holds when nobody set `Error.prepareStackTrace`). */
function defaultStack(error: Error, frames: NodeJS.CallSite[]): string {
  let header: string;
  try {
    header = Error.prototype.toString.call(error);
  } catch {
    header = "Error";
  }
  return [header, ...frames.map((frame) => `    at ${String(frame)}`)].join("\n");
}

/**
 * Runs `declare` (synchronous: the SDK reads the stack inside each resource's constructor) with the
 * SDK's stack look-ups answered without frames; every other error keeps its stack.
 */
export function withoutSourcePositions<T>(declare: () => T): T {
  const previous = Error.prepareStackTrace;
  Error.prepareStackTrace = (error, frames) => {
    if (frames[0]?.getFunctionName() === SDK_CALLSITES_FUNCTION) return defaultStack(error, []);
    return previous ? previous(error, frames) : defaultStack(error, frames);
  };
  try {
    return declare();
  } finally {
    Error.prepareStackTrace = previous;
  }
}
