/**
 * The fake Scaleway API against Scaleway's own API definitions: the Go module
 * automation/local/fakeScaleway/sdkcheck drives every endpoint through the official scaleway-sdk-go
 * and re-decodes each answer strictly into the SDK's types (a field the fake invents or omits
 * fails). This test starts the fakes it needs on loopback ports and runs that module's `go test`.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { type FakeScaleway, buildFakeScaleway } from "../../../automation/local/fakeScaleway/fakeScalewayApi";
import { findTool } from "../../../automation/engine/toolchain";
import { REPOSITORY_ROOT } from "../../support/serveProcess";
import { tempDirPerTest } from "../../support/tempDirPerTest";
import { skipUnlessAvailable } from "../../support/toolchainRequirement";

const MODULE = join(REPOSITORY_ROOT, "automation", "local", "fakeScaleway", "sdkcheck");

/** Runs a command to its end without blocking this process (the fakes answer from it meanwhile). */
function run(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv): Promise<{ code: number | null; output: string }> {
  return new Promise((done, fail) => {
    const child = spawn(command, args, { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.on("error", fail);
    child.on("close", (code) => done({ code, output }));
  });
}

describe("fake Scaleway API through scaleway-sdk-go", function () {
  this.timeout(900_000);
  const dir = tempDirPerTest("nodefleet-fakescw-sdk-");
  const fakes: FakeScaleway[] = [];
  const secretKey = randomUUID();
  const projectId = randomUUID();
  // Before the temporary directory goes: a closing fake writes its last snapshot there.
  const closeFakes = async () => {
    for (const fake of fakes.splice(0)) await fake.app.close();
  };

  it("answers every endpoint the SDK calls in the SDK's own types, strictly decoded", async function () {
    const go = findTool("go");
    skipUnlessAvailable(this, go ? undefined : "the go command is not on PATH (the SDK check is a Go test)");
    const start = async (name: string, options: { missingPermissions?: string[] }) => {
      const fake = buildFakeScaleway({
        secretKey,
        projectId,
        stateFile: join(dir(), `${name}.json`),
        actionMs: 100,
        installMs: 300,
        vlanDelayMs: 400,
        ...options,
      });
      fakes.push(fake);
      return fake.app.listen({ port: 0, host: "127.0.0.1" });
    };
    try {
      await checkThroughTheSdk(start);
    } finally {
      await closeFakes();
    }
  });

  async function checkThroughTheSdk(start: (name: string, options: { missingPermissions?: string[] }) => Promise<string>): Promise<void> {
    const go = findTool("go")!;
    const url = await start("main", {});
    const deniedUrl = await start("denied", { missingPermissions: ["ElasticMetalFullAccess"] });
    const { code, output } = await run(go, ["test", "-count=1", "-v", "./..."], MODULE, {
      ...process.env,
      GOFLAGS: "-buildvcs=false -p=1 -mod=readonly",
      GOTOOLCHAIN: "local",
      FAKE_SCW_API_URL: url,
      FAKE_SCW_DENIED_API_URL: deniedUrl,
      FAKE_SCW_SECRET_KEY: secretKey,
      FAKE_SCW_ACCESS_KEY: "SCWABCDEFGHIJKLMNOPQ",
      FAKE_SCW_PROJECT_ID: projectId,
    });
    assert.equal(code, 0, output);
    for (const name of [
      "TestStrictCheckReportsInventedOmittedAndMistypedFields",
      "TestCatalogThroughTheSdk",
      "TestServersThroughTheSdk",
      "TestErrorsThroughTheSdk",
      "TestNetworksThroughTheSdk",
      "TestIamSshKeysThroughTheSdk",
    ])
      assert.match(output, new RegExp(`--- PASS: ${name} `), `${name} did not pass:\n${output}`);
    assert.doesNotMatch(output, /--- SKIP/, output);
    // Every route family was exercised, through the SDK.
    const routes = [...fakes[0]!.requestCounts.keys()];
    for (const route of [
      "POST /baremetal/v1/zones/{zone}/servers",
      "POST /baremetal/v1/zones/{zone}/servers/{server_id}/install",
      "POST /baremetal/v1/zones/{zone}/servers/{server_id}/reboot",
      "PUT /baremetal/v3/zones/{zone}/servers/{server_id}/private-networks",
      "GET /baremetal/v1/zones/{zone}/server-private-networks",
      "POST /vpc/v2/regions/{region}/private-networks",
      "POST /ipam/v1/regions/{region}/ips",
      "DELETE /ipam/v1/regions/{region}/ips/{id}",
      "POST /iam/v1alpha1/ssh-keys",
      "DELETE /iam/v1alpha1/ssh-keys/{ssh_key_id}",
    ])
      assert.ok(routes.includes(route), `${route} was never called: ${routes.join(", ")}`);
  }
});
