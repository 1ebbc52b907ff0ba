/**
 * The error answers every route of the scaling API can give, by HTTP status (all in the one error
 * shape): each route spreads them into its `response` schemas and describes or adds its own.
 */
import { MAX_URL_LENGTH } from "../errorHandler";
import { errorResponseSchema } from "../schemas";

export const errorResponses = {
  400: errorResponseSchema,
  401: errorResponseSchema,
  403: errorResponseSchema,
  404: errorResponseSchema,
  414: errorResponseSchema.describe(
    `UriTooLong: the URL is longer than ${MAX_URL_LENGTH} characters, or a path parameter longer than the service accepts`,
  ),
  429: errorResponseSchema,
  503: errorResponseSchema.describe("Unavailable: the service is shutting down or cannot write its store; retry"),
};
