// A substitute piece (nodefleet's own build of an upstream plugin, `substituteFor` in pieces.json)
// stands in for exactly the version its npm SDK pins in package-lock.json: the engine asks for that
// version, and FIDELITY.md holds the double to that upstream release. build.mjs refuses to build when
// one drifts, naming both versions.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";

/** The default `var version = "..."` a Go main package states, or undefined. */
export function declaredGoVersion(toolchainDir, piece) {
  if (!piece.module || !piece.package?.startsWith("./")) return undefined;
  const main = join(toolchainDir, piece.module, piece.package, "main.go");
  if (!existsSync(main)) return undefined;
  const match = /^var version = "([^"]+)"/m.exec(readFileSync(main, "utf8"));
  return match ? { version: match[1], file: join(piece.module, piece.package, "main.go").replace(/\/\.\//g, "/") } : undefined;
}

/**
 * One sentence per substitute piece whose version is not its SDK's. `sdk` names the npm package of a
 * piece with a fixed `version`; a `versionFrom` piece is built at its SDK's version, so for it the
 * default its Go source states (what a plain `go build`, as the Go tests do, reports) must match.
 */
export function substituteVersionProblems(pieces, npmVersion, declared) {
  const problems = [];
  for (const piece of pieces.filter((p) => p.substituteFor)) {
    const sdk = piece.versionFrom ?? piece.sdk;
    if (!sdk) {
      problems.push(`${piece.name} is a substitute but names no npm SDK (versionFrom or sdk) to hold its version to`);
      continue;
    }
    const wanted = npmVersion(sdk);
    const stated = piece.versionFrom ? declared(piece) : { version: piece.version, file: "toolchain/pieces.json" };
    if (stated && stated.version.replace(/^v/, "") !== wanted)
      problems.push(
        `${piece.name} declares version ${stated.version} (${stated.file}) but ${sdk} is ${wanted} in package-lock.json: ` +
          "a substitute must declare its SDK's version",
      );
  }
  return problems;
}
