/**
 * Preloaded into a `nodefleet serve` under test (NODE_OPTIONS=--require): after the process
 * receives SIGUSR2, its next asynchronous fdatasync fails with EIO, as a failing disk would report
 * it. Start-up syncs (synchronous) are untouched, so the service starts normally first.
 */
import type * as fs from "node:fs";

// The module object itself (an `import * as` namespace is read-only): what walSync.ts calls through.
const fsModule = module.require("node:fs") as { fdatasync: typeof fs.fdatasync };

process.on("SIGUSR2", () => {
  const original = fsModule.fdatasync;
  fsModule.fdatasync = ((_fd: number, callback: (error: NodeJS.ErrnoException | null) => void) => {
    fsModule.fdatasync = original;
    setImmediate(() => callback(Object.assign(new Error("EIO: i/o error, fsync"), { code: "EIO" })));
  }) as typeof fs.fdatasync;
});
