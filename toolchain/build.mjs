#!/usr/bin/env node
// Builds the toolchain (the pulumi CLI, a Node.js language host, provider plugins, the Kubernetes
// control plane, helm) from Go modules alone, one piece at a time (Go builds saturate both cores
// here), into a cache keyed by each piece's pinned inputs. A cached piece costs a hash and a stat.
//
//   node toolchain/build.mjs [--only NAME[,NAME]] [--json] [--probe]
//
// A run with every piece cached asks no network: blocked pieces are probed at the module proxy only
// with --probe (or NODEFLEET_TOOLCHAIN_PROBE=1).
//
// Output: <cache>/bin/<piece> (symlinks to the keyed builds). <cache> is NODEFLEET_TOOLCHAIN_DIR,
// default ~/.cache/nodefleet/toolchain. One progress line per piece on stderr; exit 1 when a piece
// that is not marked blocked fails to build, naming the piece and the go command's own error.
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { homedir, tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { declaredGoVersion, substituteVersionProblems } from "./substituteVersions.mjs";

const toolchainDir = dirname(fileURLToPath(import.meta.url));
const repoDir = resolve(toolchainDir, "..");
const cacheDir = process.env.NODEFLEET_TOOLCHAIN_DIR || join(homedir(), ".cache", "nodefleet", "toolchain");
const binDir = join(cacheDir, "bin");

const args = process.argv.slice(2);
const only = args.includes("--only") ? new Set(args[args.indexOf("--only") + 1].split(",")) : undefined;
const asJson = args.includes("--json");
const probeBlocked = args.includes("--probe") || process.env.NODEFLEET_TOOLCHAIN_PROBE === "1";

const { pieces } = JSON.parse(readFileSync(join(toolchainDir, "pieces.json"), "utf8"));
const lock = JSON.parse(readFileSync(join(repoDir, "package-lock.json"), "utf8"));

function npmVersion(pkg) {
  const entry = lock.packages?.[`node_modules/${pkg}`];
  if (!entry) throw new Error(`package-lock.json has no ${pkg}`);
  return entry.version;
}

function pieceVersion(piece) {
  return piece.versionFrom ? npmVersion(piece.versionFrom) : piece.version;
}

const goEnv = { ...process.env, GOTOOLCHAIN: process.env.GOTOOLCHAIN || "local", CGO_ENABLED: "0", GOFLAGS: "-mod=readonly" };

function go(goArgs, cwd) {
  return spawnSync("go", goArgs, { cwd, env: goEnv, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
}

function goVersion() {
  const result = go(["env", "GOVERSION"], repoDir);
  if (result.error || result.status !== 0)
    throw new Error("the go command is not available: install Go (1.26 or newer) and put it on PATH");
  return result.stdout.trim();
}

/** Every file of a wrapper module (go.mod, go.sum, our own sources) enters the cache key. */
function moduleFiles(dir) {
  const files = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) files.push(...moduleFiles(path));
    else if (/\.(go|mod|sum)$/.test(entry.name)) files.push(path);
  }
  return files.sort();
}

function cacheKey(piece, version, goVer) {
  const hash = createHash("sha256");
  // `sdk` only says which npm package the version is checked against; it changes no build.
  const { sdk: _sdk, ...built } = piece;
  hash.update(JSON.stringify({ piece: built, version, goVer }));
  for (const file of moduleFiles(join(toolchainDir, piece.module))) {
    hash.update(file.slice(toolchainDir.length));
    hash.update(readFileSync(file));
  }
  return hash.digest("hex").slice(0, 16);
}

function link(binary, target) {
  mkdirSync(binDir, { recursive: true });
  const tmp = join(binDir, `.${binary}.${process.pid}`);
  rmSync(tmp, { force: true });
  symlinkSync(target, tmp);
  renameSync(tmp, join(binDir, binary));
}

/** The first module proxy `go env GOPROXY` names. */
function configuredProxy() {
  return go(["env", "GOPROXY"], repoDir).stdout.trim().split(/[,|]/)[0];
}

/** The module proxy's answer for a module version we cannot build from. */
function probe(moduleVersion) {
  const dir = join(tmpdir(), `nodefleet-toolchain-probe-${process.pid}`);
  mkdirSync(dir, { recursive: true });
  try {
    const result = spawnSync("go", ["mod", "download", "-json", moduleVersion], {
      cwd: dir,
      // The proxy alone: its own answer is the reason (a fallback to `direct` would only report that the VCS is unreachable).
      env: { ...goEnv, GOFLAGS: "-mod=mod", GOPROXY: configuredProxy() },
      encoding: "utf8",
    });
    try {
      const answer = JSON.parse(result.stdout);
      return answer.Error ? answer.Error.replace(/\s+/g, " ").trim() : undefined;
    } catch {
      return (result.stderr || result.stdout).trim().split("\n")[0];
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Copies files a wrapper's main.go embeds from the required module's source in the module cache. */
function copyFromModule(piece) {
  const moduleDir = join(toolchainDir, piece.module);
  const listed = go(["list", "-m", "-json", piece.copyFromModule.module], moduleDir);
  if (listed.status !== 0) throw new Error(`${piece.name}: cannot locate ${piece.copyFromModule.module}: ${listed.stderr.trim()}`);
  let sourceDir = JSON.parse(listed.stdout).Dir;
  if (!sourceDir) {
    const downloaded = go(["mod", "download", "-json", piece.copyFromModule.module], moduleDir);
    sourceDir = JSON.parse(downloaded.stdout).Dir;
  }
  for (const [from, to] of Object.entries(piece.copyFromModule.files)) {
    const target = join(moduleDir, to);
    rmSync(target, { force: true });
    copyFileSync(join(sourceDir, from), target);
    chmodSync(target, 0o644);
  }
}

function buildPiece(piece, goVer) {
  const version = pieceVersion(piece);
  const started = Date.now();
  const seconds = () => ((Date.now() - started) / 1000).toFixed(1);
  if (piece.blocked && !probeBlocked) {
    return {
      name: piece.name,
      version,
      status: "blocked",
      seconds: 0,
      reason: "not built here (`npm run toolchain -- --probe` asks the module proxy again)",
    };
  }
  if (piece.blocked) {
    const reasons = piece.blocked.map((m) => m.replace("{version}", version)).map((m) => ({ module: m, error: probe(m) }));
    const served = reasons.find((r) => !r.error);
    const reason = served ? `${served.module} is now served: add a wrapper module for it` : reasons.map((r) => r.error).join("; ");
    return { name: piece.name, version, status: "blocked", seconds: Number(seconds()), reason };
  }
  const key = cacheKey(piece, version, goVer);
  const outDir = join(cacheDir, "pieces", `${piece.name}-${key}`);
  const output = join(outDir, piece.binary ?? piece.name);
  if (existsSync(output) && statSync(output).size > 0) {
    link(piece.binary ?? piece.name, output);
    return { name: piece.name, version, status: "cached", seconds: Number(seconds()), path: output };
  }
  mkdirSync(outDir, { recursive: true });
  if (piece.copyFromModule) copyFromModule(piece);
  const ldflags = `-s -w ${(piece.ldflags ?? "").replaceAll("{version}", version)}`;
  const tmpOutput = `${output}.partial`;
  const result = go(["build", "-trimpath", "-ldflags", ldflags, "-o", tmpOutput, piece.package], join(toolchainDir, piece.module));
  if (result.status !== 0) {
    rmSync(tmpOutput, { force: true });
    const reason = (result.stderr || String(result.error)).trim().split("\n").slice(-12).join("\n");
    return { name: piece.name, version, status: "failed", seconds: Number(seconds()), reason };
  }
  renameSync(tmpOutput, output);
  link(piece.binary ?? piece.name, output);
  return { name: piece.name, version, status: "built", seconds: Number(seconds()), path: output };
}

// The CLI loads its language host and the Node.js dynamic provider from beside its own executable
// when plugins on PATH are ignored (as nodefleet's runs on upstream plugins do; pulumi's
// sdk/go/common/workspace/plugins.go, IsPluginBundled): lay them out as Pulumi's own distribution does.
const NODEJS_DYNAMIC_PROVIDER = `#!/bin/sh
# The Node.js dynamic provider of the program's own @pulumi/pulumi (resolved from the working
# directory or NODE_PATH), placed beside the CLI as Pulumi's distribution places it.
script=$(node -e 'process.stdout.write(require.resolve("@pulumi/pulumi/cmd/dynamic-provider"))') || exit 1
exec node "$script" "$@"
`;

function bundleBesideCli() {
  const cli = join(binDir, "pulumi");
  const host = join(binDir, "pulumi-language-nodejs");
  if (!existsSync(cli) || !existsSync(host)) return;
  const cliDir = dirname(realpathSync(cli));
  const hostLink = join(cliDir, "pulumi-language-nodejs");
  const tmp = `${hostLink}.${process.pid}`;
  symlinkSync(realpathSync(host), tmp);
  renameSync(tmp, hostLink);
  const provider = join(cliDir, "pulumi-resource-pulumi-nodejs");
  writeFileSync(`${provider}.${process.pid}`, NODEJS_DYNAMIC_PROVIDER, { mode: 0o755 });
  renameSync(`${provider}.${process.pid}`, provider);
}

function main() {
  const drifted = substituteVersionProblems(pieces, npmVersion, (piece) => declaredGoVersion(toolchainDir, piece));
  if (drifted.length > 0) {
    for (const problem of drifted) process.stderr.write(`toolchain: ${problem}\n`);
    process.exit(1);
  }
  const goVer = goVersion();
  const results = [];
  for (const piece of pieces) {
    if (only && !only.has(piece.name)) continue;
    const result = buildPiece(piece, goVer);
    results.push(result);
    const detail = result.reason ? `: ${result.reason}` : piece.substituteFor ? ` (nodefleet's own, for ${piece.substituteFor})` : "";
    process.stderr.write(`toolchain: ${result.name} ${result.version} ${result.status} in ${result.seconds}s${detail}\n`);
  }
  bundleBesideCli();
  process.stderr.write(`toolchain: binaries in ${binDir}\n`);
  if (asJson) process.stdout.write(`${JSON.stringify({ binDir, pieces: results }, null, 2)}\n`);
  const failed = results.filter((r) => r.status === "failed");
  if (failed.length > 0) {
    process.stderr.write(`toolchain: ${failed.map((r) => r.name).join(", ")} failed to build\n`);
    process.exit(1);
  }
}

main();
