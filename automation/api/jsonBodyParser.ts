import { tokenize } from "@humanwhocodes/momoa";
import type { FastifyInstance } from "fastify";
import { ApiError } from "./apiError";

/** A problem of a body that is valid JSON but refused, with the path of the key (`body.labels.a`). */
export interface JsonKeyProblem {
  readonly path: string;
  readonly message: string;
}

type Frame =
  | { readonly kind: "object"; readonly viaKey: string | undefined; readonly keys: Set<string>; expectKey: boolean; key: string }
  | { readonly kind: "array"; index: number };

/** A key as an error message shows it: JSON-quoted (control characters escaped), cut at 100 characters. */
function shown(key: string): string {
  return JSON.stringify(key.length > 100 ? `${key.slice(0, 100)}...` : key);
}

/** The path to the key the innermost object is at: built only for a problem, so deep nesting costs nothing. */
function pathOf(root: string, stack: readonly Frame[]): string {
  const path = [root, ...stack.map((frame) => (frame.kind === "array" ? String(frame.index) : frame.key))].join(".");
  // Deep nesting and long keys: the start and the end.
  return path.length > 200 ? `${path.slice(0, 100)}...${path.slice(-100)}` : path;
}

/**
 * The keys of valid JSON `text` that the service refuses, at most `limit`, in the order they
 * appear: a key an object names twice (JSON.parse would silently keep the last value, so two
 * readers of the same body could disagree), a `__proto__` key, and a `prototype` key in an object
 * under a `constructor` key (the shapes that change an object's prototype when a body is later
 * merged into another object; the keys the fastify default parser refuses as prototype poisoning).
 *
 * Keys are compared decoded (`"a"` and `"\u0061"` are the same key). The text is split into tokens
 * by momoa's tokenizer (@humanwhocodes/momoa, the parser ESLint's JSON support is built on); the
 * nesting is followed here with an explicit stack, not momoa's recursive parser, so no depth of
 * nesting overflows the call stack.
 * Only meant for text JSON.parse accepted: anything else may be reported wrongly or not at all.
 */
export function jsonKeyProblems(text: string, root = "body", limit = 10): JsonKeyProblem[] {
  const problems: JsonKeyProblem[] = [];
  const stack: Frame[] = [];
  for (const token of tokenize(text, { mode: "json" })) {
    const frame = stack[stack.length - 1];
    switch (token.type) {
      case "LBrace":
        stack.push({ kind: "object", viaKey: frame?.kind === "object" ? frame.key : undefined, keys: new Set(), expectKey: true, key: "" });
        break;
      case "LBracket":
        stack.push({ kind: "array", index: 0 });
        break;
      case "RBrace":
      case "RBracket":
        stack.pop();
        break;
      case "Comma":
        if (frame?.kind === "array") frame.index += 1;
        else if (frame?.kind === "object") frame.expectKey = true;
        break;
      case "String": {
        if (frame?.kind !== "object" || !frame.expectKey) break;
        const key = JSON.parse(text.slice(token.loc.start.offset, token.loc.end.offset)) as string;
        frame.expectKey = false;
        frame.key = key;
        const found: string[] = [];
        if (frame.keys.has(key)) found.push(`the key ${shown(key)} appears more than once in the same object; each key may appear once`);
        frame.keys.add(key);
        if (key === "__proto__") found.push(`the key "__proto__" is not accepted: it would set an object's prototype`);
        if (key === "prototype" && frame.viaKey === "constructor")
          found.push(`a "prototype" key under a "constructor" key is not accepted: it would reach an object's prototype`);
        for (const message of found) {
          problems.push({ path: pathOf(root, stack), message });
          if (problems.length >= limit) return problems;
        }
        break;
      }
      default:
        break;
    }
  }
  return problems;
}

/**
 * Fastify's JSON parsing, stricter: the body must be JSON (MalformedJson otherwise), and valid JSON
 * naming a key twice or carrying `__proto__` (or `constructor.prototype`) is a ValidationError
 * naming the key, not MalformedJson; such a body is never handed on. An empty body is no body:
 * clients send Content-Type: application/json on every request, bodyless DELETEs included (a route
 * that needs a body still answers 400 ValidationError). Any body that is not application/json
 * (text/plain included, which Fastify would parse as a string, and a body without Content-Type) is
 * 415 UnsupportedMediaType; a request without a body is not refused for its Content-Type header.
 */
export function strictJsonBodies(app: FastifyInstance): void {
  app.removeContentTypeParser(["application/json", "text/plain"]);
  // Every other media type, and none: the body is never read. An unknown route stays 404, as Fastify has it.
  app.addContentTypeParser("*", (request, _payload, done) => {
    const { "content-length": length, "transfer-encoding": encoding } = request.headers;
    if (request.is404 || (encoding === undefined && (length === undefined || length === "0"))) return done(null, undefined);
    done(new ApiError("UnsupportedMediaType", "only application/json bodies are accepted"), undefined);
  });
  app.addContentTypeParser("application/json", { parseAs: "string" }, (_request, body, done) => {
    // A leading byte order mark is not JSON but harmless, as Fastify's own parser has it.
    const text = (body as string).charCodeAt(0) === 0xfeff ? (body as string).slice(1) : (body as string);
    if (text === "") return done(null, undefined);
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      return done(new ApiError("MalformedJson", "request body is not valid JSON"), undefined);
    }
    let problems: JsonKeyProblem[];
    try {
      problems = jsonKeyProblems(text);
    } catch {
      // Not expected for text JSON.parse took; refused rather than let through unchecked.
      return done(new ApiError("MalformedJson", "request body is not valid JSON"), undefined);
    }
    if (problems.length > 0) {
      const listed = problems
        .slice(0, 3)
        .map((p) => `${p.path}: ${p.message}`)
        .join("; ");
      return done(
        new ApiError("ValidationError", `invalid body: ${listed}${problems.length > 3 ? "; ..." : ""}`, { issues: problems }),
        undefined,
      );
    }
    done(null, value);
  });
}
