/**
 * The property names a Go plugin double reads or writes, found in its source: the keys it passes to
 * nativeprovider's accessors, indexes property maps with, writes in PropertyMap literals, names in
 * check failures and lists as replace keys. Read from the source rather than a list kept beside it,
 * so the conformance test sees what the code does. Upper-case names (environment variables) are not
 * properties and are left out.
 */
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";

const KEY_PATTERNS = [
  /nativeprovider\.(?:String|Number|Bool|Object|Has|Strings|Numbers|StringMap|Objects|Maps|Computed)\([^,()]+,\s*"(\w+)"/g,
  /\b\w+\[(?:resource\.PropertyKey\()?"(\w+)"\)?\]/g,
  /"(\w+)":\s*resource\.(?:New|Make)\w*\(/g,
  /resource\.PropertyKey\("(\w+)"\)/g,
  /Failure\("(\w+)/g,
];
const KEY_LISTS = [/\[\]resource\.PropertyKey\{([^}]*)\}/g, /ReplaceKeys\(\) \[\]string \{\s*return \[\]string\{([^}]*)\}/g];

/** Keys per Go file (not tests) of a double's package directory. */
export function doubleSourceKeys(dir: string): Map<string, Set<string>> {
  const byFile = new Map<string, Set<string>>();
  for (const file of readdirSync(dir).filter((f) => f.endsWith(".go") && !f.endsWith("_test.go"))) {
    const source = readFileSync(join(dir, file), "utf8");
    const keys = new Set<string>();
    for (const pattern of KEY_PATTERNS) for (const match of source.matchAll(pattern)) keys.add(match[1]!);
    for (const pattern of KEY_LISTS)
      for (const list of source.matchAll(pattern)) for (const key of list[1]!.matchAll(/"(\w+)"/g)) keys.add(key[1]!);
    byFile.set(file, new Set([...keys].filter((k) => /^[a-z]/.test(k))));
  }
  return byFile;
}

/** The Go file declaring `type <name> struct`, or a method or function `<name>`, in dir. */
export function fileDeclaring(dir: string, name: string): string {
  for (const file of readdirSync(dir).filter((f) => f.endsWith(".go") && !f.endsWith("_test.go"))) {
    const source = readFileSync(join(dir, file), "utf8");
    if (new RegExp(`^type ${name} struct|^func (?:\\([^)]*\\) )?${name}\\(`, "m").test(source)) return file;
  }
  throw new Error(`no Go file in ${dir} declares ${name}`);
}
