/**
 * One error shape for every failure, `{"error": {"code", "message", "details"}}`: our own
 * ApiErrors, zod validation failures, the body parser's errors (malformed JSON 400, oversized 413,
 * wrong media type 415: jsonBodyParser.ts), over-long URLs (414), rate limiting (429) and unknown
 * routes. Nothing a client sends can turn into a 5xx; unexpected errors are logged and answered
 * without internals.
 */
import type { Socket } from "node:net";
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { hasZodFastifySchemaValidationErrors } from "fastify-type-provider-zod";
import { isStorageFailure, storageFailureReason } from "../store/storageFailure";
import { ApiError, errorBody, type ErrorCode } from "./apiError";

const FASTIFY_CODES: Record<string, { status: number; code: ErrorCode; message?: string }> = {
  FST_ERR_CTP_BODY_TOO_LARGE: { status: 413, code: "PayloadTooLarge", message: "request body is larger than the service accepts" },
  FST_ERR_CTP_INVALID_MEDIA_TYPE: { status: 415, code: "UnsupportedMediaType", message: "only application/json bodies are accepted" },
  FST_ERR_CTP_EMPTY_JSON_BODY: {
    status: 400,
    code: "MalformedJson",
    message: "body cannot be empty when content-type is application/json",
  },
  FST_ERR_CTP_INVALID_JSON_BODY: { status: 400, code: "MalformedJson", message: "request body is not valid JSON" },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: { status: 400, code: "BadRequest", message: "content-length does not match the body" },
};

function sendError(reply: FastifyReply, status: number, code: ErrorCode, message: string, details?: unknown): FastifyReply {
  return reply
    .code(status)
    .type("application/json")
    .send(errorBody(code, message, details));
}

/** zod reports a bad record key as "Invalid key in record": the rule the key broke is in its nested issues. */
function issueMessage(issue: { keyword: string; message?: string | undefined; params: unknown }): string | undefined {
  const nested = (issue.params as { issues?: Array<{ message?: string }> } | undefined)?.issues;
  if (issue.keyword === "invalid_key" && nested && nested.length > 0) return `invalid key: ${nested.map((n) => n.message).join("; ")}`;
  return issue.message;
}

function errorHandler(error: FastifyError | ApiError | Error, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  if (error instanceof ApiError) return sendError(reply, error.statusCode, error.code, error.message, error.details);
  if (hasZodFastifySchemaValidationErrors(error)) {
    const where = (error as { validationContext?: string }).validationContext ?? "request";
    const issues = error.validation.map((v) => ({
      path: `${where}${v.instancePath.replace(/\//g, ".")}`.replace(/\.$/, ""),
      message: issueMessage(v),
    }));
    // The first issues in the message too: a client that logs only the message (the driver's NodeClaim events) says what was wrong.
    const listed = issues
      .slice(0, 3)
      .map((i) => `${i.path}: ${i.message}`)
      .join("; ");
    return sendError(reply, 400, "ValidationError", `invalid ${where}${listed ? `: ${listed}` : ""}${issues.length > 3 ? "; ..." : ""}`, {
      issues,
    });
  }
  const fastifyError = error as FastifyError & { statusCode?: number };
  const known = fastifyError.code ? FASTIFY_CODES[fastifyError.code] : undefined;
  if (known) return sendError(reply, known.status, known.code, known.message ?? fastifyError.message);
  const status = fastifyError.statusCode;
  if (status === 429) return sendError(reply, 429, "RateLimited", fastifyError.message || "too many requests for this token; retry later");
  if (status === 413) return sendError(reply, 413, "PayloadTooLarge", "request body is larger than the service accepts");
  if (status !== undefined && status >= 400 && status < 500) {
    // Parser errors (SyntaxError from JSON.parse) and other client errors: message without stack or internals.
    if (error instanceof SyntaxError) return sendError(reply, 400, "MalformedJson", "request body is not valid JSON");
    return sendError(reply, status, status === 404 ? "RouteNotFound" : "BadRequest", fastifyError.message);
  }
  if (isStorageFailure(error)) {
    request.log.error({ err: error }, "the store cannot write");
    return sendError(reply, 503, "Unavailable", `${storageFailureReason(error)}; retry later`);
  }
  request.log.error({ err: error }, "unexpected error");
  return sendError(reply, 500, "InternalError", "internal error; see the service log");
}

/**
 * Fastify's `frameworkErrors` option: what its router refuses before any route or hook runs (a
 * path with invalid percent-encoding, a path parameter longer than the router allows) would
 * otherwise be answered in Fastify's own shape.
 */
export function frameworkErrorHandler(error: FastifyError, _request: FastifyRequest, reply: FastifyReply): FastifyReply {
  if (error.code === "FST_ERR_MAX_PARAM_LENGTH")
    return sendError(reply, 414, "UriTooLong", "a path parameter is longer than the service accepts");
  if (error.code === "FST_ERR_BAD_URL") return sendError(reply, 400, "BadRequest", "the path is not valid percent-encoded UTF-8");
  return sendError(reply, 400, "BadRequest", "the request could not be routed");
}

/**
 * The longest request target (path and query string) the service reads: longer is 414 UriTooLong.
 * The API's own URLs are under 200 characters. Node's parser refuses a request line and headers
 * of more than 16 KiB together (maxHeaderSize) before any route sees them: see clientErrorHandler.
 */
export const MAX_URL_LENGTH = 4096;

/**
 * True when `packet`, the data Node's parser held when the head overflowed, starts a request whose
 * request line alone is longer than a request target may be. Node does not say which part of the
 * head overflowed; when a long head arrives in several reads, the last of them may hold neither the
 * request line nor its end, and the answer stays 431.
 */
export function requestLineTooLong(packet: Buffer | undefined): boolean {
  if (!packet) return false;
  const start = packet.subarray(0, 32).toString("latin1");
  const method = /^[A-Z]{1,20} /.exec(start);
  if (!method) return false;
  const lineEnd = packet.indexOf("\n");
  return lineEnd < 0 || lineEnd > method[0].length + MAX_URL_LENGTH + " HTTP/1.1\r".length;
}

/** Refuses an over-long URL first of all, before the rate limit and authentication (whatever the route, unknown ones too). */
function refuseOverlongUrls(app: FastifyInstance): void {
  app.addHook("onRequest", async (request) => {
    if (request.url.length > MAX_URL_LENGTH)
      throw new ApiError("UriTooLong", `the URL is longer than the ${MAX_URL_LENGTH} characters the service accepts`);
  });
}

/** What Node's HTTP parser refuses (bad request line, oversized headers, timeouts), by its error code. */
const CLIENT_ERRORS: Record<string, { status: number; code: ErrorCode; message: string }> = {
  HPE_HEADER_OVERFLOW: { status: 431, code: "HeadersTooLarge", message: "the request headers are larger than the service accepts" },
  ERR_HTTP_REQUEST_TIMEOUT: { status: 408, code: "RequestTimeout", message: "the request was not received in time" },
  ERR_HTTP_HEADERS_TIMEOUT: { status: 408, code: "RequestTimeout", message: "the request headers were not received in time" },
};
const URI_TOO_LONG = {
  status: 414,
  code: "UriTooLong" as const,
  message: `the URL is longer than the ${MAX_URL_LENGTH} characters the service accepts`,
};

/**
 * Fastify's `clientErrorHandler` option: a request Node's HTTP parser refuses before Fastify sees
 * it is answered in the error shape too (Fastify's default answers in its own), then the socket is
 * closed, as Node does.
 */
export function clientErrorHandler(error: NodeJS.ErrnoException, socket: Socket): void {
  if (error.code === "ECONNRESET" || socket.destroyed) return;
  const overlongUrl = error.code === "HPE_HEADER_OVERFLOW" && requestLineTooLong((error as { rawPacket?: Buffer }).rawPacket);
  const known = overlongUrl
    ? URI_TOO_LONG
    : (error.code && CLIENT_ERRORS[error.code]) || {
        status: 400,
        code: "BadRequest" as const,
        message: "the request is not valid HTTP/1.1",
      };
  const body = JSON.stringify(errorBody(known.code, known.message));
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${known.status} ${known.code}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}

export function registerErrorHandling(app: FastifyInstance): void {
  refuseOverlongUrls(app);
  app.setErrorHandler(errorHandler);
  app.setNotFoundHandler((request, reply) =>
    sendError(reply, 404, "RouteNotFound", `no route ${request.method} ${request.url.split("?")[0]!.slice(0, 200)}`),
  );
}
