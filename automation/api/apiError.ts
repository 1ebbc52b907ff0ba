/**
 * Errors the scaling API answers with. Every error response has the shape
 * `{"error": {"code", "message", "details"}}` (see errorHandler.ts), whatever raised it.
 */

/** Each code means one thing, with its HTTP status (several codes share a status, never the reverse). */
export const ERROR_CODES = {
  BadRequest: 400,
  MalformedJson: 400,
  ValidationError: 400,
  Unauthorized: 401,
  Forbidden: 403,
  RouteNotFound: 404,
  ClusterNotFound: 404,
  PoolNotFound: 404,
  NodeNotFound: 404,
  RequestTimeout: 408,
  Conflict: 409,
  InsufficientCapacity: 409,
  PayloadTooLarge: 413,
  UriTooLong: 414,
  UnsupportedMediaType: 415,
  HeadersTooLarge: 431,
  NoCompatibleInstanceType: 422,
  RateLimited: 429,
  InternalError: 500,
  Unavailable: 503,
} as const;
export type ErrorCode = keyof typeof ERROR_CODES;

export class ApiError extends Error {
  override readonly name = "ApiError";
  readonly statusCode: number;
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: unknown,
  ) {
    super(message);
    this.statusCode = ERROR_CODES[code];
  }
}

export interface ErrorBody {
  error: { code: string; message: string; details?: unknown };
}

export function errorBody(code: string, message: string, details?: unknown): ErrorBody {
  return { error: { code, message, ...(details === undefined ? {} : { details }) } };
}
