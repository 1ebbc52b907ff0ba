/**
 * A Kubernetes API server that answers only TokenReviews, over HTTPS on 127.0.0.1 with a certificate
 * of its own CA (automation/local/pki.ts), and the kubeconfig that reaches it. It knows a few tokens
 * and the audiences each is valid for, as kube-apiserver does for projected tokens; it can refuse
 * the reviewer (as RBAC without `tokenreviews: create` does), echo tokens in its errors (to prove
 * the service scrubs them) and hang (read a review and never answer it).
 */
import { readFileSync } from "node:fs";
import * as https from "node:https";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { ensurePki } from "../../automation/local/pki";
import { tempDataDir } from "./apiHarness";

export interface KnownToken {
  readonly username: string;
  readonly audiences: readonly string[];
}

export interface FakeTokenReviewServer {
  readonly kubeconfig: string;
  /** Tokens it accepts, by token. */
  readonly known: Map<string, KnownToken>;
  /** The spec of every review asked (token replaced by its position in `known`, or "unknown"). */
  readonly reviews: Array<{ readonly audiences: readonly string[] }>;
  /** Answer 403 to every review, as an API server does when the reviewer may not create TokenReviews. */
  forbidden: boolean;
  /** Put the reviewed token into the error of an unauthenticated answer. */
  echoTokens: boolean;
  /** Read every review and never answer it, as a hung API server does; close() ends the open requests. */
  hang: boolean;
  close(): Promise<void>;
}

/** The bearer token the service's kubeconfig presents to the fake. */
const REVIEWER_TOKEN = "reviewer-token-0123456789abcdef";

export async function startFakeTokenReviewServer(
  pkiDir: string = join(tempDataDir("nodefleet-tokenreview-"), "pki"),
): Promise<FakeTokenReviewServer> {
  const pki = ensurePki(pkiDir);
  const state = { forbidden: false, echoTokens: false, hang: false };
  const known = new Map<string, KnownToken>();
  const reviews: Array<{ audiences: readonly string[] }> = [];
  const server = https.createServer({ cert: readFileSync(pki.apiserverCert), key: readFileSync(pki.apiserverKey) }, (request, response) => {
    let text = "";
    request.setEncoding("utf8");
    request.on("data", (chunk: string) => (text += chunk));
    request.on("end", () => {
      if (state.hang) return;
      const send = (status: number, body: unknown) => {
        response.writeHead(status, { "content-type": "application/json" });
        response.end(JSON.stringify(body));
      };
      if (request.headers.authorization !== `Bearer ${REVIEWER_TOKEN}`) return send(401, { kind: "Status", message: "Unauthorized" });
      if (request.method !== "POST" || request.url !== "/apis/authentication.k8s.io/v1/tokenreviews") {
        return send(404, { kind: "Status", message: "not found" });
      }
      if (state.forbidden) {
        return send(403, {
          kind: "Status",
          message: 'tokenreviews.authentication.k8s.io is forbidden: User "nodefleet-api" cannot create resource "tokenreviews"',
        });
      }
      const spec = (JSON.parse(text) as { spec: { token: string; audiences?: string[] } }).spec;
      const asked = spec.audiences ?? [];
      reviews.push({ audiences: asked });
      const token = known.get(spec.token);
      const valid = token ? asked.filter((a) => token.audiences.includes(a)) : [];
      const status =
        token && valid.length > 0
          ? { authenticated: true, user: { username: token.username }, audiences: valid }
          : {
              authenticated: false,
              error: token
                ? `token audiences ${JSON.stringify(token.audiences)} is invalid for the target audiences ${JSON.stringify(asked)}`
                : `invalid bearer token${state.echoTokens ? ` ${spec.token}` : ""}`,
            };
      send(201, { apiVersion: "authentication.k8s.io/v1", kind: "TokenReview", status });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const ca = readFileSync(pki.caCert).toString("base64");
  const kubeconfig = [
    "apiVersion: v1",
    "kind: Config",
    `clusters: [{name: c, cluster: {server: 'https://127.0.0.1:${port}', certificate-authority-data: ${ca}}}]`,
    "contexts: [{name: c, context: {cluster: c, user: u}}]",
    "current-context: c",
    `users: [{name: u, user: {token: ${REVIEWER_TOKEN}}}]`,
    "",
  ].join("\n");
  return Object.assign(state, {
    kubeconfig,
    known,
    reviews,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  });
}
