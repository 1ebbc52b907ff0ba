import assert from "node:assert/strict";
import * as pulumi from "@pulumi/pulumi";
import { withoutSourcePositions } from "../../components/shared/withoutSourcePositions";

/** The SDK's own stack look-up (resource.ts), as a resource's constructor calls it. */
const sdkStackTrace = (): unknown[] => (pulumi.Resource as unknown as { stackTrace(skip: number): unknown[] }).stackTrace(0);

describe("withoutSourcePositions", function () {
  it("leaves the SDK no frames to record inside, and the SDK's frames untouched outside", function () {
    assert.ok(sdkStackTrace().length > 0, "outside, the SDK records where a resource was declared");
    assert.deepEqual(
      withoutSourcePositions(() => sdkStackTrace()),
      [],
    );
  });

  it("keeps the message and frames of every other error raised inside", function () {
    const stack = withoutSourcePositions(() => new TypeError("pool web: size must be a whole number").stack ?? "");
    assert.match(stack, /^TypeError: pool web: size must be a whole number\n {4}at /);
    assert.match(stack, /withoutSourcePositions\.test/);
  });

  it("restores the stack formatting after declare returns or throws, and nests", function () {
    const before = Error.prepareStackTrace;
    assert.throws(() =>
      withoutSourcePositions(() => {
        throw new Error("declare failed");
      }),
    );
    assert.equal(Error.prepareStackTrace, before);
    assert.deepEqual(
      withoutSourcePositions(() => withoutSourcePositions(() => sdkStackTrace())),
      [],
    );
    assert.equal(Error.prepareStackTrace, before);
    assert.ok(sdkStackTrace().length > 0);
  });
});
