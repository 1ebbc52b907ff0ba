/** "Did you mean ...?": the edit distance behind it, and which names it offers. */
import { strict as assert } from "node:assert";
import fc from "fast-check";
import { editDistance, nearestName } from "../../components/shared/nearestName";

const name = fc.string({ unit: fc.constantFrom(..."abcdefghijklmnopqrstuvwxyz:-".split("")), minLength: 0, maxLength: 14 });
const names = fc.uniqueArray(
  name.filter((n) => n.length >= 3),
  { minLength: 1, maxLength: 8 },
);

/** One insertion, deletion or substitution at `at`. */
function oneEdit(text: string, kind: number, at: number, letter: string): string {
  const i = text.length === 0 ? 0 : at % (text.length + (kind === 0 ? 1 : 0));
  if (kind === 0) return text.slice(0, i) + letter + text.slice(i);
  if (text.length === 0) return letter;
  if (kind === 1) return text.slice(0, i) + text.slice(i + 1);
  return text.slice(0, i) + letter + text.slice(i + 1);
}

describe("nearest name", () => {
  it("suggests the key a typo was meant to be, and nothing for an unrelated word", () => {
    const keys = ["cluster", "network", "firewall", "pools", "allowEmptyFleet"];
    assert.equal(nearestName("pool", keys), "pools");
    assert.equal(nearestName("netwrok", keys), "network");
    assert.equal(nearestName("Pools", keys), "pools", "case is a typo too");
    assert.equal(nearestName("allowEmptyFleets", keys), "allowEmptyFleet");
    assert.equal(nearestName("foo", keys), undefined);
    assert.equal(nearestName("kubeconfig", keys), undefined);
    assert.equal(nearestName("pool", []), undefined);
  });

  it("edit distance is a metric: zero exactly for equal names, symmetric, and within the triangle inequality", () => {
    fc.assert(
      fc.property(name, name, name, (a, b, c) => {
        assert.equal(editDistance(a, b) === 0, a === b);
        assert.equal(editDistance(a, b), editDistance(b, a));
        assert.ok(editDistance(a, c) <= editDistance(a, b) + editDistance(b, c));
        assert.ok(editDistance(a, b) <= Math.max(a.length, b.length));
        assert.ok(editDistance(a, b) >= Math.abs(a.length - b.length));
      }),
    );
  });

  it("offers a name itself, and always one of the candidates at the least distance", () => {
    fc.assert(
      fc.property(names, name, (candidates, typed) => {
        for (const candidate of candidates)
          assert.equal(editDistance(nearestName(candidate, candidates)!.toLowerCase(), candidate.toLowerCase()), 0);
        const suggestion = nearestName(typed, candidates);
        if (suggestion === undefined) return;
        assert.ok(candidates.includes(suggestion));
        const best = Math.min(...candidates.map((c) => editDistance(typed.toLowerCase(), c.toLowerCase())));
        assert.equal(editDistance(typed.toLowerCase(), suggestion.toLowerCase()), best);
      }),
    );
  });

  it("finds a candidate of three or more characters again after any single-character typo", () => {
    fc.assert(
      fc.property(
        names,
        fc.nat(),
        fc.integer({ min: 0, max: 2 }),
        fc.nat(),
        fc.constantFrom(..."abcxyz-".split("")),
        (candidates, pick, kind, at, letter) => {
          const meant = candidates[pick % candidates.length]!;
          const typed = oneEdit(meant, kind, at, letter);
          const suggestion = nearestName(typed, candidates);
          assert.ok(suggestion !== undefined, `${typed} (from ${meant}) gets a suggestion among ${candidates.join(", ")}`);
          assert.ok(editDistance(typed.toLowerCase(), suggestion.toLowerCase()) <= 1);
        },
      ),
    );
  });
});
