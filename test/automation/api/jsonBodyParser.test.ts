/** The JSON body checks of the scaling API, without a server: duplicate keys and prototype keys in valid JSON. */
import { strict as assert } from "node:assert";
import fc from "fast-check";
import { jsonKeyProblems } from "../../../automation/api/jsonBodyParser";

/** A JSON value as a tree whose objects are lists of members, so that a key may repeat. */
type Tree = { kind: "object"; members: Array<[string, Tree]> } | { kind: "array"; items: Tree[] } | { kind: "leaf"; text: string };

const keyText = fc.constantFrom("a", "b", "pool", "labels", "__proto__", "constructor", "prototype", "k.e/y", "é", "😀", "");
const leaf = fc.constantFrom("1", "-0.5e3", "true", "false", "null", '"x"', '"\\u0000"').map((text): Tree => ({ kind: "leaf", text }));
const { tree } = fc.letrec<{ tree: Tree }>((self) => ({
  tree: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    leaf,
    fc.array(fc.tuple(keyText, self("tree")), { maxLength: 5 }).map((members): Tree => ({ kind: "object", members })),
    fc.array(self("tree"), { maxLength: 4 }).map((items): Tree => ({ kind: "array", items })),
  ),
}));

/** Writes a key with some of its characters \u-escaped and random whitespace around the tokens. */
function render(t: Tree, escape: (i: number) => boolean, space: string): string {
  let n = 0;
  const quoted = (key: string) =>
    `"${[...key].map((c) => (escape(n++) && c.length === 1 ? `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}` : c)).join("")}"`;
  const go = (node: Tree): string => {
    if (node.kind === "leaf") return node.text;
    if (node.kind === "array") return `[${space}${node.items.map(go).join(`,${space}`)}${space}]`;
    return `{${space}${node.members.map(([k, v]) => `${quoted(k)}${space}:${space}${go(v)}`).join(`${space},`)}${space}}`;
  };
  return go(t);
}

/** What the checks must find, from the tree itself. */
function expected(t: Tree, path = "body", viaKey?: string): Array<{ path: string; kind: "duplicate" | "proto" | "constructor" }> {
  if (t.kind === "leaf") return [];
  if (t.kind === "array") return t.items.flatMap((item, i) => expected(item, `${path}.${i}`));
  const seen = new Set<string>();
  return t.members.flatMap(([key, value]) => {
    const here: Array<{ path: string; kind: "duplicate" | "proto" | "constructor" }> = [];
    if (seen.has(key)) here.push({ path: `${path}.${key}`, kind: "duplicate" });
    seen.add(key);
    if (key === "__proto__") here.push({ path: `${path}.${key}`, kind: "proto" });
    if (key === "prototype" && viaKey === "constructor") here.push({ path: `${path}.${key}`, kind: "constructor" });
    return [...here, ...expected(value, `${path}.${key}`, key)];
  });
}

const kindOf = (message: string) => (/more than once/.test(message) ? "duplicate" : /"__proto__"/.test(message) ? "proto" : "constructor");

describe("JSON body key checks", () => {
  it("finds exactly the repeated, __proto__ and constructor.prototype keys of any JSON text, however its keys are escaped or spaced", () => {
    fc.assert(
      fc.property(tree, fc.func(fc.boolean()), fc.constantFrom("", " ", "\n\t "), (t, escape, space) => {
        const text = render(t, escape, space);
        JSON.parse(text); // the generator writes valid JSON only
        const found = jsonKeyProblems(text, "body", 1000).map((p) => ({ path: p.path, kind: kindOf(p.message) }));
        assert.deepEqual(found, expected(t));
      }),
      { numRuns: 1000 },
    );
  });

  it("finds nothing in JSON.stringify's output of objects without prototype keys", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const text = JSON.stringify(value);
        fc.pre(!text.includes('"__proto__"') && !text.includes('"prototype"'));
        return jsonKeyProblems(text).length === 0;
      }),
      { numRuns: 500 },
    );
  });

  it("names the key, the path and the rule", () => {
    assert.deepEqual(jsonKeyProblems('{"uniqueID":"x","pool":"a","pool":"b"}'), [
      { path: "body.pool", message: 'the key "pool" appears more than once in the same object; each key may appear once' },
    ]);
    assert.deepEqual(jsonKeyProblems('{"labels":{"a":"1","\\u0061":"2"}}'), [
      { path: "body.labels.a", message: 'the key "a" appears more than once in the same object; each key may appear once' },
    ]);
    assert.deepEqual(
      jsonKeyProblems('{"requirements":[{"key":"a"},{"key":"b","key":"c"}]}').map((p) => p.path),
      ["body.requirements.1.key"],
    );
    assert.match(jsonKeyProblems('{"labels":{"__proto__":"x"}}')[0]!.message, /"__proto__" is not accepted/);
    assert.equal(jsonKeyProblems('{"labels":{"__proto__":"x"}}')[0]!.path, "body.labels.__proto__");
    assert.equal(jsonKeyProblems('{"constructor":{"prototype":{"x":1}}}')[0]!.path, "body.constructor.prototype");
    // The words alone are fine: a label may be called constructor or prototype.
    assert.deepEqual(jsonKeyProblems('{"labels":{"constructor":"a","prototype":"b"},"prototype":{"constructor":1}}'), []);
    // The same key in sibling objects is no repeat.
    assert.deepEqual(jsonKeyProblems('[{"a":1},{"a":2},{"b":{"a":3}}]'), []);
  });

  it("follows any depth of nesting without recursion, and keeps long paths short", () => {
    const depth = 50_000;
    const deep = `${"[".repeat(depth)}{"__proto__":1}${"]".repeat(depth)}`;
    const [problem] = jsonKeyProblems(deep);
    assert.ok(problem);
    assert.ok(problem.path.length <= 203, `${problem.path.length}`);
    assert.match(problem.path, /^body\.0\.0.*\.0\.__proto__$/);
    const longKey = "k".repeat(10_000);
    assert.ok(jsonKeyProblems(`{"${longKey}":1,"${longKey}":2}`)[0]!.message.length < 200);
  });

  it("stops at the limit", () => {
    const text = `{${Array.from({ length: 50 }, () => '"a":1').join(",")}}`;
    assert.equal(jsonKeyProblems(text).length, 10);
    assert.equal(jsonKeyProblems(text, "body", 3).length, 3);
  });
});
