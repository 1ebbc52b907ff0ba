/**
 * The SSH key `local up` uploads to the fake Hetzner API for the local stack's static pool: a valid
 * OpenSSH ed25519 key line, uploaded once (a restart finds it by name), in exchanges that match
 * Hetzner's published API.
 */
import assert from "node:assert/strict";
import { createPublicKey } from "node:crypto";
import { join } from "node:path";
import { HcloudClient } from "../../../automation/hcloud/hcloudClient";
import { buildFakeHcloud, type FakeHcloud } from "../../../automation/local/fakeHcloud/fakeHcloudApi";
import { LOCAL_SSH_KEY, ensureLocalSshKey, freshEd25519PublicKey } from "../../../automation/local/localSshKey";
import { tempDataDir } from "../../support/apiHarness";
import { type HcloudExchange, hcloudOpenApiViolations, recordHcloudExchanges } from "../../support/hcloudOpenApi";

const TOKEN = "e".repeat(64);

/** The fields of an OpenSSH public key blob: each a big-endian length and that many bytes. */
function blobFields(blob: Buffer): Buffer[] {
  const fields: Buffer[] = [];
  for (let at = 0; at < blob.length;) {
    const length = blob.readUInt32BE(at);
    fields.push(blob.subarray(at + 4, at + 4 + length));
    at += 4 + length;
  }
  return fields;
}

describe("the local cloud's SSH key", function () {
  let fake: FakeHcloud | undefined;
  afterEach(async () => {
    await fake?.app.close();
    fake = undefined;
  });

  it("is an OpenSSH ed25519 public key line whose key Node's crypto accepts", () => {
    const line = freshEd25519PublicKey("nodefleet-local");
    const [type, body, comment] = line.split(" ");
    assert.equal(type, "ssh-ed25519");
    assert.equal(comment, "nodefleet-local");
    const [name, key, ...rest] = blobFields(Buffer.from(body!, "base64"));
    assert.equal(name!.toString(), "ssh-ed25519");
    assert.equal(key!.length, 32);
    assert.deepEqual(rest, []);
    const imported = createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: key!.toString("base64url") }, format: "jwk" });
    assert.equal(imported.asymmetricKeyType, "ed25519");
    assert.notEqual(freshEd25519PublicKey("nodefleet-local"), line, "a fresh key each time");
  });

  it("is uploaded once, under the name the local stack's pools use, in exchanges that match Hetzner's API", async () => {
    const stateFile = join(tempDataDir("nodefleet-local-key-"), "hcloud.json");
    const exchanges: HcloudExchange[] = [];
    fake = buildFakeHcloud({ token: TOKEN, stateFile });
    recordHcloudExchanges(fake, exchanges);
    const endpoint = await fake.app.listen({ host: "127.0.0.1", port: 0 });
    const client = new HcloudClient({ token: TOKEN, baseUrl: endpoint });
    await ensureLocalSshKey(client);
    await ensureLocalSshKey(client);
    const keys = fake.state.objects("ssh_keys");
    assert.deepEqual(
      keys.map((k) => k.name),
      [LOCAL_SSH_KEY],
      "one key, not one per start",
    );
    assert.deepEqual(
      exchanges.map((e) => `${e.method} ${e.route} ${e.status}`),
      ["GET /ssh_keys 200", "POST /ssh_keys 201", "GET /ssh_keys 200"],
    );
    assert.deepEqual(exchanges.flatMap(hcloudOpenApiViolations), []);
  });
});
