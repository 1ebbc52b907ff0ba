/**
 * A dynamic provider as the Pulumi engine runs it: serialized by Pulumi's closure serialization,
 * written to a file and required back, so tests catch a provider that captures something it
 * cannot carry (a non-serializable helper, a module that is not a built-in).
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import type * as pulumi from "@pulumi/pulumi";

/** Serializes `provider`, loads the serialized copy, runs `use` on it, and removes the file. */
export async function withSerializedProvider(
  provider: pulumi.dynamic.ResourceProvider,
  use: (serialized: pulumi.dynamic.ResourceProvider) => Promise<void>,
): Promise<void> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { serializeFunction } = require("@pulumi/pulumi/runtime/closure/serializeClosure") as {
    serializeFunction: (f: () => unknown, o: { allowSecrets: boolean }) => Promise<{ text: string }>;
  };
  const serialized = await serializeFunction(() => provider, { allowSecrets: true });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "nodefleet-provider-"));
  try {
    const file = path.join(dir, "provider.js");
    fs.writeFileSync(file, serialized.text);
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    await use((require(file) as { handler: () => pulumi.dynamic.ResourceProvider }).handler());
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
