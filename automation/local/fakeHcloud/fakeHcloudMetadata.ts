/**
 * The fake's stand-in for Hetzner's server metadata service (http://169.254.169.254/hetzner/v1/metadata,
 * https://docs.hetzner.cloud/reference/cloud#server-metadata). A real server reaches it on the
 * link-local address and is told apart by where it calls from; the local cloud's machines share
 * loopback, so the node agent names the machine it stands in for in the path:
 * `/_metadata/servers/<id>/hetzner/v1/metadata/<key>`. Unauthenticated, as the real service is.
 * Only `instance-id` (the server's numeric id, plain text) is served: what nodes read for their
 * `hcloud://<server id>` providerID (components/bootstrap/hcloudServerId.ts).
 */
import type { FastifyInstance } from "fastify";
import type { FakeHcloudState } from "./fakeHcloudState";

/** Where the fake serves each server's metadata; requests under it skip the API's token and rate limit. */
export const FAKE_METADATA_PREFIX = "/_metadata/servers/";

/** The real service's address, which the fake's path replaces. */
const METADATA_ORIGIN = "http://169.254.169.254/";

/**
 * The fake's URL for a metadata URL a server's user data reads (`http://169.254.169.254/…`), as
 * that server; undefined for any other URL (a real machine could not reach it either).
 */
export function fakeMetadataUrl(fakeAddress: string, serverId: number, url: string): string | undefined {
  if (!url.startsWith(METADATA_ORIGIN)) return undefined;
  return `${fakeAddress.replace(/\/$/, "")}${FAKE_METADATA_PREFIX}${serverId}/${url.slice(METADATA_ORIGIN.length)}`;
}

export function registerMetadata(app: FastifyInstance, state: FakeHcloudState): void {
  app.get<{ Params: { id: string } }>(`${FAKE_METADATA_PREFIX}:id/hetzner/v1/metadata/instance-id`, async (request, reply) => {
    const server = /^\d+$/.test(request.params.id) ? state.server(Number(request.params.id)) : undefined;
    // The real service answers only the machine that asks; a deleted server asks no more.
    if (!server) return reply.status(404).type("text/plain").send("not found");
    return reply.type("text/plain").send(String(server.id));
  });
}
