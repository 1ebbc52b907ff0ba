/** A fresh temporary directory for every test of the enclosing `describe`, removed after the test. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** Call inside a `describe`; the returned function gives the current test's directory. */
export function tempDirPerTest(prefix: string): () => string {
  let dir: string | undefined;
  beforeEach(function () {
    dir = mkdtempSync(join(tmpdir(), prefix));
  });
  afterEach(function () {
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    dir = undefined;
  });
  return () => {
    if (dir === undefined) throw new Error(`tempDirPerTest(${prefix}): no test is running`);
    return dir;
  };
}
