/**
 * The fake Hetzner API's images: the system images of the catalog plus snapshots taken of servers
 * (`POST /servers/{id}/actions/create_image`), listed with the filters Hetzner documents for
 * `GET /images` (name, label_selector, type, architecture, sort), updated (labels, description)
 * and deleted. A snapshot carries its server's architecture, so a server of the other architecture
 * cannot boot from it, as on Hetzner (https://docs.hetzner.cloud/#images).
 */
import type { FastifyInstance, FastifyRequest } from "fastify";
import { type Architecture, FAKE_IMAGES, type FakeImage, findImage, imageJson } from "./fakeHcloudCatalog";
import { bodyOf, filtered, idParam, invalidInput, labelsField, notFound, page, queryValues } from "./fakeHcloudContext";
import type { FakeHcloudState, FakeObject, FakeServer } from "./fakeHcloudState";

/** The state's collection snapshots live in. */
const SNAPSHOTS = "images";

/** A snapshot as stored (an object of the `images` collection; `name` is empty: Hetzner names system images only). */
interface FakeSnapshot extends FakeObject {
  readonly description: string;
  readonly architecture: Architecture;
  readonly osFlavor: FakeImage["osFlavor"];
  readonly createdFrom: { readonly id: number; readonly name: string };
}

function snapshots(state: FakeHcloudState): FakeSnapshot[] {
  return state.objects(SNAPSHOTS) as FakeSnapshot[];
}

export function snapshotJson(s: FakeSnapshot): Record<string, unknown> {
  return {
    id: s.id,
    type: "snapshot",
    status: "available",
    name: null,
    description: s.description,
    image_size: 1.2,
    disk_size: 20,
    created: s.created,
    created_from: s.createdFrom,
    bound_to: null,
    os_flavor: s.osFlavor,
    os_version: null,
    rapid_deploy: false,
    protection: { delete: false },
    deprecated: null,
    deleted: null,
    labels: s.labels,
    architecture: s.architecture,
  };
}

/** What a server boots from: a system image by id or name, or a snapshot by id, of `architecture`; undefined if none. */
export function bootImage(state: FakeHcloudState, idOrName: unknown, architecture: Architecture): { id: number; name: string } | undefined {
  const system = findImage(idOrName, architecture);
  if (system) return system;
  const id = typeof idOrName === "number" ? idOrName : typeof idOrName === "string" && /^\d+$/.test(idOrName) ? Number(idOrName) : NaN;
  const snapshot = snapshots(state).find((s) => s.id === id && s.architecture === architecture);
  return snapshot ? { id: snapshot.id, name: String(snapshot.id) } : undefined;
}

/** The image JSON of what a server booted from (a system image name or a snapshot id), or null. */
export function bootImageJson(state: FakeHcloudState, image: string, architecture: Architecture): Record<string, unknown> | null {
  const system = findImage(image, architecture);
  if (system) return imageJson(system);
  const snapshot = snapshots(state).find((s) => String(s.id) === image);
  return snapshot ? snapshotJson(snapshot) : null;
}

/** A new snapshot of `server` (the create_image action's image); its creation time is strictly after every other snapshot's. */
export function takeSnapshot(
  state: FakeHcloudState,
  server: FakeServer,
  architecture: Architecture,
  body: Record<string, unknown>,
): FakeSnapshot {
  if (body.type !== undefined && body.type !== "snapshot")
    throw invalidInput("type", "only snapshots are supported by the fake (backups need the server's backup option)");
  if (body.description !== undefined && typeof body.description !== "string") throw invalidInput("description", "must be a string");
  const latest = Math.max(0, ...snapshots(state).map((s) => Date.parse(s.created)));
  const snapshot: FakeSnapshot = {
    id: state.newId(),
    name: "",
    labels: labelsField(body) ?? {},
    created: new Date(Math.max(Date.now(), latest + 1)).toISOString(),
    description: typeof body.description === "string" ? body.description : `${server.name}-snapshot`,
    architecture,
    osFlavor: findImage(server.image, architecture)?.osFlavor ?? "ubuntu",
    createdFrom: { id: server.id, name: server.name },
  };
  state.putObject(SNAPSHOTS, snapshot);
  return snapshot;
}

type Listed = { readonly name: string; readonly labels: Record<string, string>; readonly created: string; readonly id: number } & (
  { readonly type: "system"; readonly image: FakeImage } | { readonly type: "snapshot"; readonly snapshot: FakeSnapshot }
);

/** `sort` values as Hetzner documents them: `id`, `name`, `created`, each `:asc` (default) or `:desc`. */
function byOrder(sort: string | undefined): (a: Listed, b: Listed) => number {
  const [field = "id", direction = "asc"] = (sort ?? "id").split(":");
  const sign = direction === "desc" ? -1 : 1;
  const key = (l: Listed): string | number => (field === "name" ? l.name : field === "created" ? Date.parse(l.created) : l.id);
  return (a, b) => {
    const [x, y] = [key(a), key(b)];
    return (x < y ? -1 : x > y ? 1 : a.id - b.id) * sign;
  };
}

export function registerImages(app: FastifyInstance, state: FakeHcloudState): void {
  const listed = (): Listed[] => [
    ...FAKE_IMAGES.map((image) => ({
      type: "system" as const,
      image,
      id: image.id,
      name: image.name,
      labels: {},
      created: "2024-04-25T12:00:00Z",
    })),
    ...snapshots(state).map((snapshot) => ({
      type: "snapshot" as const,
      snapshot,
      id: snapshot.id,
      name: "",
      labels: snapshot.labels,
      created: snapshot.created,
    })),
  ];
  const render = (l: Listed) => (l.type === "system" ? imageJson(l.image) : snapshotJson(l.snapshot));
  const architectureOf = (l: Listed) => (l.type === "system" ? l.image.architecture : l.snapshot.architecture);
  const find = (request: FastifyRequest) => {
    const id = idParam(request);
    const found = listed().find((l) => l.id === id);
    if (!found) throw notFound("image", id);
    return found;
  };

  app.get("/images", async (request) => {
    const [architecture] = queryValues(request, "architecture");
    const types = queryValues(request, "type");
    const [sort] = queryValues(request, "sort");
    const images = filtered(request, listed())
      .filter((l) => (architecture === undefined || architectureOf(l) === architecture) && (types.length === 0 || types.includes(l.type)))
      .sort(byOrder(sort));
    return page(request, "images", images, render);
  });
  app.get("/images/:id", async (request) => ({ image: render(find(request)) }));
  app.put("/images/:id", async (request) => {
    const found = find(request);
    if (found.type !== "snapshot") throw invalidInput("id", "system images cannot be changed");
    const body = bodyOf(request);
    if (body.description !== undefined && typeof body.description !== "string") throw invalidInput("description", "must be a string");
    const updated: FakeSnapshot = {
      ...found.snapshot,
      labels: labelsField(body) ?? found.snapshot.labels,
      ...(typeof body.description === "string" ? { description: body.description } : {}),
    };
    state.putObject(SNAPSHOTS, updated);
    return { image: snapshotJson(updated) };
  });
  app.delete("/images/:id", async (request, reply) => {
    const found = find(request);
    if (found.type !== "snapshot") throw invalidInput("id", "system images cannot be deleted");
    state.removeObject(SNAPSHOTS, found.id);
    reply.status(204);
    return null;
  });
}
