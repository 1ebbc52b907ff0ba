import { strict as assert } from "node:assert";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { parse } from "yaml";
import type { BootstrapKubeconfigInput } from "../../components/bootstrap/bootstrapKubeconfigInput";
import { decodeK0sJoinToken, encodeK0sJoinToken, k0sJoinKubeconfig } from "../../components/bootstrap/k0sJoinToken";

// Compiled tests run from dist/test; the fixture stays in the source tree.
const FIXTURE_PATH = join(__dirname, "..", "..", "..", "test", "fixtures", "k0s-worker-join-kubeconfig.yaml");

interface Kubeconfig {
  clusters: { name: string; cluster: { server: string; "certificate-authority-data": string } }[];
  users: { name: string; user: { token: string } }[];
}

function fixture(): { text: string; input: BootstrapKubeconfigInput } {
  const text = readFileSync(FIXTURE_PATH, "utf8");
  const parsed = parse(text) as Kubeconfig;
  return {
    text,
    input: {
      apiServer: parsed.clusters[0].cluster.server,
      caCertificate: Buffer.from(parsed.clusters[0].cluster["certificate-authority-data"], "base64").toString("utf8"),
      token: parsed.users[0].user.token,
    },
  };
}

/** Decodes as a user would on a shell, with the real base64 and gunzip. */
function shellDecode(token: string): string {
  return execFileSync("bash", ["-c", "base64 -d | gunzip"], { input: token, encoding: "utf8" });
}

describe("k0s join token", () => {
  it("decodes with base64 -d | gunzip to the kubeconfig k0s writes (fixture)", () => {
    const { text, input } = fixture();
    assert.match(input.caCertificate, /^-----BEGIN CERTIFICATE-----\n[\s\S]+-----END CERTIFICATE-----\n$/);
    const decoded = shellDecode(encodeK0sJoinToken(input));
    assert.deepEqual(parse(decoded), parse(text));
  });

  it("renders the kubeconfig text field for field in k0s's layout", () => {
    const { text, input } = fixture();
    const withoutComments = text
      .split("\n")
      .filter((line) => !line.startsWith("#"))
      .join("\n");
    assert.equal(k0sJoinKubeconfig(input), withoutComments);
  });

  it("is gzip at best compression, base64 with padding", () => {
    const token = encodeK0sJoinToken(fixture().input);
    assert.match(token, /^[A-Za-z0-9+/]+={0,2}$/);
    assert.equal(token.length % 4, 0);
    const raw = Buffer.from(token, "base64");
    assert.deepEqual([...raw.subarray(0, 3)], [0x1f, 0x8b, 0x08]);
    assert.equal(raw[8], 2, "gzip XFL byte 2 marks maximum compression");
  });

  it("rejects malformed bootstrap tokens without echoing them", () => {
    const { input } = fixture();
    for (const token of ["abcdef.0123456789abcde", "ABCDEF.0123456789abcdef", "abcdef0123456789abcdef", "abcde.0123456789abcdefg", ""]) {
      assert.throws(
        () => encodeK0sJoinToken({ ...input, token }),
        (err: Error) => /bootstrap token must be/.test(err.message) && (token === "" || !err.message.includes(token)),
      );
    }
  });

  it("rejects a non-https API server", () => {
    assert.throws(() => k0sJoinKubeconfig({ ...fixture().input, apiServer: "http://203.0.113.10:6443" }), /https:\/\//);
  });

  it("decodeK0sJoinToken rejects text that is not a join token", () => {
    assert.throws(() => decodeK0sJoinToken("not base64!"), /not standard base64/);
    assert.throws(() => decodeK0sJoinToken(Buffer.from("plain text").toString("base64")), /not gzip/);
  });

  it("round-trips any token, server and CA (property)", () => {
    const alnum = fc.constantFrom(..."abcdefghijklmnopqrstuvwxyz0123456789");
    const token = fc
      .tuple(fc.string({ unit: alnum, minLength: 6, maxLength: 6 }), fc.string({ unit: alnum, minLength: 16, maxLength: 16 }))
      .map(([id, secret]) => `${id}.${secret}`);
    const server = fc
      .tuple(fc.domain(), fc.option(fc.integer({ min: 1, max: 65535 }), { nil: undefined }))
      .map(([host, port]) => `https://${host}${port === undefined ? "" : `:${port}`}`);
    const ca = fc
      .base64String({ minLength: 4, maxLength: 400 })
      .map((body) => `-----BEGIN CERTIFICATE-----\n${body}\n-----END CERTIFICATE-----\n`);
    fc.assert(
      fc.property(token, server, ca, (t, s, c) => {
        const input = { apiServer: s, caCertificate: c, token: t };
        const decoded = decodeK0sJoinToken(encodeK0sJoinToken(input));
        assert.equal(decoded, k0sJoinKubeconfig(input));
        const parsed = parse(decoded) as Kubeconfig;
        assert.equal(parsed.users[0].user.token, t);
        assert.equal(parsed.users[0].name, "kubelet-bootstrap");
        assert.equal(parsed.clusters[0].cluster.server, s);
        assert.equal(Buffer.from(parsed.clusters[0].cluster["certificate-authority-data"], "base64").toString("utf8"), c);
      }),
      { numRuns: 200 },
    );
  });
});
