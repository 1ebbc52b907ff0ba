import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import type * as pulumi from "@pulumi/pulumi";
import { deterministicOutputs } from "../../../automation/mocks/deterministicOutputs";

/** Pulumi's wire form of a secret, as the mock runtime hands inputs over. */
const secret = (value: unknown) => ({ "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", value });
const server = (inputs: Record<string, unknown>) =>
  deterministicOutputs({
    type: "hcloud:index/server:Server",
    name: "w1",
    inputs,
    custom: true,
  } as unknown as pulumi.runtime.MockResourceArgs).state;

describe("deterministic outputs of the simulated engine", function () {
  it("record a server's user data as the hcloud plugin does: its base64 SHA-1, secret when the input is", function () {
    const text = "#cloud-config\nhostname: w1\n";
    const hash = createHash("sha1").update(text).digest("base64");
    assert.deepEqual(server({ userData: secret(text) }).userData, secret(hash));
    assert.equal(server({ userData: text }).userData, hash);
    assert.equal("userData" in server({}), false);
  });
});
