import assert from "node:assert/strict";
import fc from "fast-check";
import { localPath } from "../../../automation/local/localPath";

describe("PATH of the local cloud's environment", function () {
  const toolchain = "/home/u/.cache/nodefleet/toolchain/bin";
  const sdk = "/repo/node_modules/@pulumi/pulumi";

  it("puts the toolchain first and drops what npm and npx added for the command", function () {
    const caller = [
      "/repo/node_modules/.bin",
      "/node_modules/.bin",
      "/home/u/.npm/_npx/1a2b/node_modules/.bin",
      "/usr/lib/node_modules/npm/node_modules/@npmcli/run-script/lib/node-gyp-bin",
      "/usr/local/bin",
      "/usr/bin",
      toolchain,
    ].join(":");
    assert.equal(localPath(caller, toolchain, sdk), [toolchain, sdk, "/usr/local/bin", "/usr/bin"].join(":"));
  });

  it("keeps every other entry once, in order, after the toolchain (property)", function () {
    const dir = fc.stringMatching(/^\/[a-z]{1,8}(\/[a-z]{1,8}){0,2}$/);
    fc.assert(
      fc.property(fc.array(dir, { maxLength: 8 }), (dirs) => {
        const out = localPath(dirs.join(":"), toolchain, sdk).split(":");
        assert.deepEqual(out.slice(0, 2), [toolchain, sdk]);
        assert.deepEqual(out.slice(2), [...new Set(dirs)]);
      }),
    );
  });
});
