/**
 * Golden Markdown previews under test/fixtures/preview/. NODEFLEET_UPDATE_GOLDEN=1 rewrites them
 * (after a deliberate change to the components; review the diff by eye).
 */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as path from "node:path";

// Compiled tests run from dist/test/support; the goldens stay in the source tree.
const GOLDEN_DIR = path.resolve(__dirname, "..", "..", "..", "test", "fixtures", "preview");

/** A bootstrap token anywhere in a text (none may leak into a preview). */
export const BOOTSTRAP_TOKEN_TEXT = /[a-z0-9]{6}\.[a-z0-9]{16}/;

/** Asserts `actual` equals `<name>.md`; `producer` names what rendered it, for the failure message. */
export function assertPreviewGolden(name: string, actual: string, producer: string): void {
  const file = path.join(GOLDEN_DIR, `${name}.md`);
  if (process.env.NODEFLEET_UPDATE_GOLDEN === "1") {
    fs.mkdirSync(GOLDEN_DIR, { recursive: true });
    fs.writeFileSync(file, actual);
  }
  assert.ok(fs.existsSync(file), `${file} is missing; run with NODEFLEET_UPDATE_GOLDEN=1 once and review it`);
  assert.equal(actual, fs.readFileSync(file, "utf8"), `${name}.md differs from ${producer}`);
}
