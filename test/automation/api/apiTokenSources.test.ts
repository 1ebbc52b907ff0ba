/**
 * API tokens from NODEFLEET_API_TOKENS and the stack's secret `nodefleet:apiTokens`: which tokens
 * end up accepted for which cluster, plain values refused (naming the key and the fix, never the
 * value), the decrypting step injected (a fake here; the real one needs the pulumi CLI), and
 * `serve` end to end: refusing a plain token, and falling back when the simulated engine cannot
 * decrypt.
 */
import { strict as assert } from "node:assert";
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import fc from "fast-check";
import { stringify } from "yaml";
import {
  API_TOKENS_KEY,
  combineApiTokens,
  declaredConfigTokens,
  loadApiTokens,
  readRawStackConfig,
  type DecryptedConfigValue,
  type ReadSecretConfig,
  type TokenSources,
} from "../../../automation/api/apiTokenSources";
import { TokenVerifier } from "../../../automation/api/apiTokens";
import { missingTools, skipUnlessAvailable } from "../../support/toolchainRequirement";
import { NodefleetApiError, NodefleetClient } from "../../../automation/client/nodefleetClient";
import { tempDataDir } from "../../support/apiHarness";
import { passphraseProject } from "../../support/passphraseProject";
import { BIN, REPOSITORY_ROOT } from "../../support/serveProcess";

const ENV_TOKEN = "env-token-0123456789abcdef";
const OTHER_TOKEN = "other-token-0123456789abcdef";
const CONFIG_TOKEN = "config-token-0123456789abcdef";
const ROTATED_CONFIG_TOKEN = "config-token-rotated-0123456789";
const PLAIN_TOKEN = "plain-token-committed-0123456789";

const secure = (n: number) => ({ secure: `v1:ZmFrZS1jaXBoZXJ0ZXh0LQ==${n}` });

/** A fake of the Automation API's decrypted answer for a list value. */
function decryptedList(tokens: unknown[]): DecryptedConfigValue {
  return { value: JSON.stringify(tokens), secret: true, objectValue: tokens };
}

function clusterOf(sources: TokenSources, token: string): string | undefined {
  return new TokenVerifier(sources.entries).clusterOf(token);
}

const base = { stackName: "example", clusterId: "example" };

describe("API token sources", () => {
  describe("combineApiTokens", () => {
    it("without the config key, takes NODEFLEET_API_TOKENS for every cluster it names", () => {
      const sources = combineApiTokens({
        ...base,
        rawConfig: {},
        envTokens: `example:${ENV_TOKEN},other:${OTHER_TOKEN}`,
        canDecrypt: true,
      });
      assert.deepEqual(sources.errors, []);
      assert.equal(clusterOf(sources, ENV_TOKEN), "example");
      assert.equal(clusterOf(sources, OTHER_TOKEN), "other");
      assert.deepEqual(sources.counts, { env: 2, stackConfig: 0 });
      assert.equal(sources.needsGeneratedToken, false);
    });

    it("asks for the generated token when no source yields one", () => {
      const sources = combineApiTokens({ ...base, rawConfig: {}, envTokens: undefined, canDecrypt: false });
      assert.deepEqual(sources.errors, []);
      assert.equal(sources.entries.length, 0);
      assert.equal(sources.needsGeneratedToken, true);
    });

    it("combines env tokens with the decrypted config tokens, which belong to the served cluster", () => {
      const sources = combineApiTokens({
        ...base,
        rawConfig: { [API_TOKENS_KEY]: [secure(0), secure(1)] },
        envTokens: `other:${OTHER_TOKEN},example:${ENV_TOKEN}`,
        canDecrypt: true,
        decrypted: decryptedList([CONFIG_TOKEN, ROTATED_CONFIG_TOKEN]),
      });
      assert.deepEqual(sources.errors, []);
      assert.deepEqual(sources.counts, { env: 2, stackConfig: 2 });
      assert.equal(clusterOf(sources, CONFIG_TOKEN), "example");
      assert.equal(clusterOf(sources, ROTATED_CONFIG_TOKEN), "example");
      assert.equal(clusterOf(sources, ENV_TOKEN), "example");
      assert.equal(clusterOf(sources, OTHER_TOKEN), "other");
      assert.equal(clusterOf(sources, "config-token-0123456789abcdeX"), undefined);
      assert.equal(sources.needsGeneratedToken, false);
    });

    it("reads the list from the value's JSON text when objectValue is missing, and accepts one secret string", () => {
      const list = combineApiTokens({
        ...base,
        rawConfig: { [API_TOKENS_KEY]: [secure(0)] },
        envTokens: undefined,
        canDecrypt: true,
        decrypted: { value: JSON.stringify([CONFIG_TOKEN]), secret: true },
      });
      assert.deepEqual(list.errors, []);
      assert.equal(clusterOf(list, CONFIG_TOKEN), "example");
      const single = combineApiTokens({
        ...base,
        rawConfig: { [API_TOKENS_KEY]: secure(0) },
        envTokens: undefined,
        canDecrypt: true,
        decrypted: { value: CONFIG_TOKEN, secret: true },
      });
      assert.deepEqual(single.errors, []);
      assert.deepEqual(single.counts, { env: 0, stackConfig: 1 });
      assert.equal(clusterOf(single, CONFIG_TOKEN), "example");
    });

    it("refuses plain values by path with the command that sets a secret, never echoing them", () => {
      const sources = combineApiTokens({
        ...base,
        rawConfig: { [API_TOKENS_KEY]: [secure(0), PLAIN_TOKEN] },
        envTokens: `example:${ENV_TOKEN}`,
        canDecrypt: true,
        decrypted: decryptedList([CONFIG_TOKEN, PLAIN_TOKEN]),
      });
      assert.equal(sources.errors.length, 1);
      const [error] = sources.errors as [string];
      assert.match(error, /nodefleet:apiTokens\[1\]/);
      assert.doesNotMatch(error, /nodefleet:apiTokens\[0\] /);
      assert.ok(error.includes("pulumi config set --secret --path 'nodefleet:apiTokens[0]'"), error);
      assert.ok(!error.includes(PLAIN_TOKEN));
      assert.equal(sources.counts.stackConfig, 0, "nothing from a stack file that holds plain tokens");
      assert.equal(sources.needsGeneratedToken, false);
    });

    it("refuses a plain string or map under the key as a whole", () => {
      for (const raw of [PLAIN_TOKEN, { token: PLAIN_TOKEN }, null]) {
        const sources = combineApiTokens({ ...base, rawConfig: { [API_TOKENS_KEY]: raw }, envTokens: undefined, canDecrypt: false });
        assert.equal(sources.errors.length, 1, JSON.stringify(raw));
        assert.match(sources.errors[0]!, /^nodefleet:apiTokens in stacks\/Pulumi\.example\.yaml is not a secret/);
        assert.ok(!sources.errors[0]!.includes(PLAIN_TOKEN));
      }
    });

    it("reports every plain element of any list, and only those (property)", () => {
      fc.assert(
        fc.property(
          fc.array(fc.oneof(fc.constant("secure"), fc.string({ minLength: 16, maxLength: 40 })), { maxLength: 8 }),
          (elements) => {
            const raw = elements.map((e, i) => (e === "secure" ? secure(i) : e));
            const declaration = declaredConfigTokens({ [API_TOKENS_KEY]: raw });
            const plainIndices = elements.flatMap((e, i) => (e === "secure" ? [] : [i]));
            assert.deepEqual(
              declaration.plainPaths,
              plainIndices.map((i) => `${API_TOKENS_KEY}[${i}]`),
            );
            assert.equal(declaration.secretCount, elements.length - plainIndices.length);
            const sources = combineApiTokens({ ...base, rawConfig: { [API_TOKENS_KEY]: raw }, envTokens: undefined, canDecrypt: false });
            assert.equal(sources.errors.length, plainIndices.length > 0 ? 1 : 0);
            for (const i of plainIndices) assert.ok(!sources.errors[0]!.includes(elements[i]!), "a plain value was echoed");
          },
        ),
        { numRuns: 200 },
      );
    });

    it("without a way to decrypt, says the configured tokens are unusable and keeps the env tokens", () => {
      const sources = combineApiTokens({
        ...base,
        rawConfig: { [API_TOKENS_KEY]: [secure(0), secure(1)] },
        envTokens: `example:${ENV_TOKEN}`,
        canDecrypt: false,
      });
      assert.deepEqual(sources.errors, []);
      assert.equal(sources.notices.length, 1);
      assert.match(sources.notices[0]!, /stacks\/Pulumi\.example\.yaml sets nodefleet:apiTokens \(2 secret tokens\)/);
      assert.match(sources.notices[0]!, /NODEFLEET_API_TOKENS/);
      assert.deepEqual(sources.counts, { env: 1, stackConfig: 0 });
      assert.equal(clusterOf(sources, ENV_TOKEN), "example");
      const alone = combineApiTokens({ ...base, rawConfig: { [API_TOKENS_KEY]: [secure(0)] }, envTokens: undefined, canDecrypt: false });
      assert.equal(alone.needsGeneratedToken, true, "falls back to the generated token");
    });

    it("refuses decrypted tokens that are too short or not strings, by path only", () => {
      const sources = combineApiTokens({
        ...base,
        rawConfig: { [API_TOKENS_KEY]: [secure(0), secure(1), secure(2)] },
        envTokens: undefined,
        canDecrypt: true,
        decrypted: decryptedList([CONFIG_TOKEN, "short-secret", 42]),
      });
      assert.deepEqual(sources.errors, [
        "nodefleet:apiTokens[1] must be a token of at least 16 characters",
        "nodefleet:apiTokens[2] must be a string token",
      ]);
    });

    it("reports a malformed NODEFLEET_API_TOKENS as an error rather than throwing", () => {
      const sources = combineApiTokens({ ...base, rawConfig: {}, envTokens: "example:short", canDecrypt: false });
      assert.equal(sources.errors.length, 1);
      assert.match(sources.errors[0]!, /NODEFLEET_API_TOKENS entry 1/);
      assert.ok(!sources.errors[0]!.includes("short"));
    });
  });

  describe("loadApiTokens (decrypting injected)", () => {
    function fakeReader(answer: DecryptedConfigValue | Error): { read: ReadSecretConfig; keys: string[] } {
      const keys: string[] = [];
      return {
        keys,
        read: async (key) => {
          keys.push(key);
          if (answer instanceof Error) throw answer;
          return answer;
        },
      };
    }

    it("asks for nodefleet:apiTokens only when the stack declares secret tokens", async () => {
      const reader = fakeReader(decryptedList([CONFIG_TOKEN]));
      const none = await loadApiTokens({ ...base, rawConfig: {}, envTokens: `example:${ENV_TOKEN}` }, reader.read);
      assert.deepEqual(reader.keys, []);
      assert.deepEqual(none.counts, { env: 1, stackConfig: 0 });
      const plain = await loadApiTokens({ ...base, rawConfig: { [API_TOKENS_KEY]: [PLAIN_TOKEN] }, envTokens: undefined }, reader.read);
      assert.deepEqual(reader.keys, [], "a stack file with plain tokens is refused without decrypting it");
      assert.equal(plain.errors.length, 1);
      const secret = await loadApiTokens(
        { ...base, rawConfig: { [API_TOKENS_KEY]: [secure(0)] }, envTokens: `example:${ENV_TOKEN}` },
        reader.read,
      );
      assert.deepEqual(reader.keys, [API_TOKENS_KEY]);
      assert.deepEqual(secret.counts, { env: 1, stackConfig: 1 });
      assert.equal(clusterOf(secret, CONFIG_TOKEN), "example");
    });

    it("turns a failed read into an error carrying the CLI's stderr, never its stdout", async () => {
      const failure = Object.assign(new Error(`code: 255\n stdout: ${CONFIG_TOKEN}\n stderr: error: incorrect passphrase`), {
        commandResult: { stdout: CONFIG_TOKEN, stderr: "error: incorrect passphrase\n", code: 255 },
      });
      const sources = await loadApiTokens(
        { ...base, rawConfig: { [API_TOKENS_KEY]: [secure(0)] }, envTokens: undefined },
        fakeReader(failure).read,
      );
      assert.equal(sources.errors.length, 1);
      assert.match(
        sources.errors[0]!,
        /nodefleet:apiTokens of stack example could not be read through the Automation API: error: incorrect passphrase$/,
      );
      assert.ok(!sources.errors[0]!.includes(CONFIG_TOKEN));
      assert.equal(sources.needsGeneratedToken, false);
    });

    it("without a reader (simulated engine) notices and falls back", async () => {
      const sources = await loadApiTokens({ ...base, rawConfig: { [API_TOKENS_KEY]: [secure(0)] }, envTokens: undefined }, undefined);
      assert.deepEqual(sources.errors, []);
      assert.equal(sources.notices.length, 1);
      assert.equal(sources.needsGeneratedToken, true);
    });
  });

  it("reads a stack file's config as written, secure values still encrypted", () => {
    const dir = tempDataDir("nodefleet-tokens-");
    const file = path.join(dir, "Pulumi.t.yaml");
    fs.writeFileSync(file, `encryptionsalt: v1:abc\nconfig:\n  nodefleet:apiTokens:\n    - secure: v1:AAAA\n    - ${PLAIN_TOKEN}\n`);
    const raw = readRawStackConfig(file);
    assert.deepEqual(raw[API_TOKENS_KEY], [{ secure: "v1:AAAA" }, PLAIN_TOKEN]);
    assert.deepEqual(declaredConfigTokens(raw).plainPaths, ["nodefleet:apiTokens[1]"]);
  });

  describe("through the automation engine", function () {
    it("decrypts a passphrase-encrypted nodefleet:apiTokens of a project stack", async function () {
      skipUnlessAvailable(this, missingTools("pulumi", "pulumi-language-nodejs"));
      const { project, engine, def, setConfig } = await passphraseProject(tempDataDir("nodefleet-tokens-project-"), "tokens");
      await setConfig(`${API_TOKENS_KEY}[0]`, CONFIG_TOKEN, true);
      await setConfig(`${API_TOKENS_KEY}[1]`, ROTATED_CONFIG_TOKEN, true);
      const rawConfig = readRawStackConfig(path.join(project, "stacks", "Pulumi.tokens.yaml"));
      assert.equal(declaredConfigTokens(rawConfig).secretCount, 2);
      assert.ok(!fs.readFileSync(path.join(project, "stacks", "Pulumi.tokens.yaml"), "utf8").includes(CONFIG_TOKEN));
      const sources = await loadApiTokens(
        { stackName: "tokens", clusterId: "example", rawConfig, envTokens: undefined },
        async (key) => (await engine.readStackConfig(def))[key],
      );
      assert.deepEqual(sources.errors, []);
      assert.equal(clusterOf(sources, CONFIG_TOKEN), "example");
      assert.equal(clusterOf(sources, ROTATED_CONFIG_TOKEN), "example");
    });
  });

  describe("serve", function () {
    this.timeout(120_000);

    /** A project directory with a copy of the example stack plus `extra` config; serve runs in it. */
    function projectWith(extra: Record<string, unknown>): string {
      const project = tempDataDir("nodefleet-tokens-serve-");
      fs.mkdirSync(path.join(project, "stacks"));
      fs.copyFileSync(path.join(REPOSITORY_ROOT, "Pulumi.yaml"), path.join(project, "Pulumi.yaml"));
      const example = readRawStackConfig(path.join(REPOSITORY_ROOT, "stacks", "Pulumi.example.yaml"));
      fs.writeFileSync(path.join(project, "stacks", "Pulumi.tokens.yaml"), stringify({ config: { ...example, ...extra } }));
      return project;
    }

    function runServe(project: string, env: Record<string, string>) {
      const child = spawn(
        process.execPath,
        [BIN, "serve", "--stack", "tokens", "--engine", "simulated", "--data-dir", path.join(project, "data"), "--port", "0"],
        {
          cwd: project,
          env: {
            ...process.env,
            HCLOUD_TOKEN: "",
            SCW_SECRET_KEY: "",
            NODEFLEET_API_TOKENS: "",
            NODEFLEET_LOG_LEVEL: "warn",
            NODEFLEET_SIM_BOOT_DELAY_MS: "100",
            ...env,
          },
          stdio: ["ignore", "ignore", "pipe"],
        },
      );
      let stderr = "";
      child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
      const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
      return { child, exited, stderr: () => stderr };
    }

    it("refuses to start when the stack file holds a plain token, naming the key and the command", async () => {
      const project = projectWith({ [API_TOKENS_KEY]: [PLAIN_TOKEN] });
      const serve = runServe(project, {});
      const code = await serve.exited;
      assert.equal(code, 1, serve.stderr());
      assert.match(serve.stderr(), /nodefleet:apiTokens\[0\] in stacks\/Pulumi\.tokens\.yaml is not a secret/);
      assert.ok(serve.stderr().includes("pulumi config set --secret --path 'nodefleet:apiTokens[0]'"));
      assert.ok(!serve.stderr().includes(PLAIN_TOKEN), "the plain token was printed");
      assert.ok(!fs.existsSync(path.join(project, "data", "nodefleet.db")), "refused before opening the store");
    });

    it("with the simulated engine, says secret tokens cannot be decrypted and serves with NODEFLEET_API_TOKENS", async () => {
      const project = projectWith({ [API_TOKENS_KEY]: [secure(0), secure(1)] });
      const serve = runServe(project, { NODEFLEET_API_TOKENS: `example:${ENV_TOKEN}` });
      try {
        const baseUrl = await new Promise<string>((resolve, reject) => {
          const timer = setInterval(() => {
            const match = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(serve.stderr());
            if (match) {
              clearInterval(timer);
              resolve(match[1]!);
            }
          }, 50);
          void serve.exited.then((code) => {
            clearInterval(timer);
            reject(new Error(`serve exited with ${code}:\n${serve.stderr()}`));
          });
        });
        assert.match(
          serve.stderr(),
          /sets nodefleet:apiTokens \(2 secret tokens\), but secret config cannot be decrypted without the pulumi CLI/,
        );
        const cluster = await new NodefleetClient({ baseUrl, clusterId: "example", token: ENV_TOKEN }).getCluster();
        assert.equal(cluster.id, "example");
        await assert.rejects(
          new NodefleetClient({ baseUrl, clusterId: "example", token: CONFIG_TOKEN }).getCluster(),
          (error: unknown) => error instanceof NodefleetApiError && error.status === 401,
        );
      } finally {
        serve.child.kill("SIGTERM");
        await serve.exited;
      }
    });
  });
});
