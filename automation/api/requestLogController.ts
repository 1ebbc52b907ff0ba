/**
 * Fastify's per-request log lines ("incoming request", "request completed", an unknown route) at
 * debug instead of info: at the default level a busy service would write two lines per request,
 * which buries what the service itself has to say (engine runs, sold-out offerings, orphans) and
 * costs every request a write. NODEFLEET_LOG_LEVEL=debug brings them back. A request that failed
 * inside Fastify stays at error.
 */
import { LogController, type FastifyReply, type FastifyRequest } from "fastify";

export class DebugRequestLogs extends LogController {
  override incomingRequest(request: FastifyRequest): void {
    if (this.isLogDisabled(request)) return;
    request.log.debug({ req: request }, "incoming request");
  }

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if (error) {
      super.requestCompleted(error, request, reply);
      return;
    }
    if (this.isLogDisabled(request)) return;
    reply.log.debug({ res: reply, responseTime: reply.elapsedTime }, "request completed");
  }

  override routeNotFound(request: FastifyRequest): void {
    if (this.isLogDisabled(request)) return;
    request.log.debug(`Route ${request.raw.method ?? ""}:${request.raw.url ?? ""} not found`);
  }
}
