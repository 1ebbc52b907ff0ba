/**
 * The fake Scaleway API's IAM SSH keys (`/iam/v1alpha1/ssh-keys`): create, get, list (`name`,
 * `project_id`, `disabled`, pages), update (`name`, `disabled`) and delete, in the shape of
 * scaleway-sdk-go's `iam/v1alpha1.SSHKey` (v1.39.0, api/iam/v1alpha1/iam_sdk.go; `srn` is filled in
 * by the SDK when the answer lacks it). An Elastic Metal install's `ssh_key_ids` name these keys;
 * the server's machine (fakeScalewayMachines.ts) lets them in as the OS user.
 */
import { randomUUID } from "node:crypto";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { parseSshPublicKey } from "../fakeRobot/fakeRobotKeys";
import {
  type FakeScalewayContext,
  bodyOf,
  invalidArgument,
  notFound,
  ordered,
  page,
  queryValues,
  stringField,
  uuidParam,
} from "./fakeScalewayContext";
import type { FakeSshKey } from "./fakeScalewayState";

export function registerIamSshKeys(app: FastifyInstance, ctx: FakeScalewayContext): void {
  const { state } = ctx;
  const base = "/iam/v1alpha1/ssh-keys";
  const keyJson = (k: FakeSshKey) => ({
    id: k.id,
    name: k.name,
    public_key: k.publicKey,
    fingerprint: k.fingerprint,
    created_at: k.createdAt,
    updated_at: k.updatedAt,
    organization_id: ctx.projectId,
    project_id: ctx.projectId,
    disabled: k.disabled,
  });
  const find = (request: FastifyRequest) => {
    const id = uuidParam(request, "ssh_key_id");
    const key = state.get("sshKeys", id);
    if (!key) throw notFound("ssh_key", id);
    return key;
  };

  app.get(base, async (request) => {
    const [name] = queryValues(request, "name");
    const [projectId] = queryValues(request, "project_id");
    const [disabled] = queryValues(request, "disabled");
    const keys = state
      .all("sshKeys")
      .filter((k) => name === undefined || k.name.includes(name))
      .filter(() => projectId === undefined || projectId === ctx.projectId)
      .filter((k) => disabled === undefined || String(k.disabled) === disabled);
    return page(request, "ssh_keys", ordered(request, keys), keyJson);
  });
  app.get(`${base}/:ssh_key_id`, async (request) => keyJson(find(request)));

  app.post(base, async (request) => {
    const body = bodyOf(request);
    const publicKey = stringField(body, "public_key")?.trim();
    if (!publicKey) throw invalidArgument("public_key", "required", "is required");
    let parsed: ReturnType<typeof parseSshPublicKey>;
    try {
      parsed = parseSshPublicKey(publicKey);
    } catch (error) {
      throw invalidArgument("public_key", "format", `not an SSH public key: ${(error as Error).message}`);
    }
    const projectId = stringField(body, "project_id");
    if (projectId !== undefined && projectId !== "" && projectId !== ctx.projectId) throw notFound("project", projectId);
    const fingerprint = `${parsed.size} MD5:${parsed.fingerprint} (${parsed.openSsh.split(" ")[0]})`;
    if (state.all("sshKeys").some((k) => k.fingerprint === fingerprint))
      // One key once per account; scw/errors.go has no type for a duplicate, so it is an argument error.
      throw invalidArgument("public_key", "constraint", "this SSH key is already registered");
    const now = new Date().toISOString();
    return keyJson(
      state.put("sshKeys", {
        id: randomUUID(),
        name: stringField(body, "name") ?? "",
        publicKey,
        fingerprint,
        disabled: false,
        createdAt: now,
        updatedAt: now,
      }),
    );
  });

  app.patch(`${base}/:ssh_key_id`, async (request) => {
    const key = find(request);
    const body = bodyOf(request);
    const name = stringField(body, "name");
    if (body.disabled !== undefined && typeof body.disabled !== "boolean") throw invalidArgument("disabled", "format", "must be a boolean");
    return keyJson(
      state.put("sshKeys", {
        ...key,
        ...(name !== undefined ? { name } : {}),
        ...(typeof body.disabled === "boolean" ? { disabled: body.disabled } : {}),
        updatedAt: new Date().toISOString(),
      }),
    );
  });

  app.delete(`${base}/:ssh_key_id`, async (request, reply) => {
    state.remove("sshKeys", find(request).id);
    reply.status(204);
    return null;
  });
}
