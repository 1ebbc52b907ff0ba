/**
 * Reads a Pulumi npm SDK's declarations (`*.d.ts`) with the TypeScript compiler API: the property
 * names of a resource's class, `*Args` and `*State` (or a look-up's `*Args` and `*Result`), with the
 * nested input and output types they reference, and which Args are required. What the doubles'
 * conformance test holds them to.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import ts from "typescript";

export interface SdkType {
  /** Every property name of the declarations and of the nested types they reference. */
  readonly properties: ReadonlySet<string>;
  /** The `*Args` properties not marked optional. */
  readonly requiredArgs: readonly string[];
}

type Members = ts.NodeArray<ts.TypeElement> | ts.NodeArray<ts.ClassElement>;

function parse(file: string): ts.SourceFile {
  return ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true);
}

/**
 * Interfaces and classes of a file by name, namespaces included (types/input.d.ts nests them): each
 * under its bare name and under its namespace path (`elasticmetal.ServerPrivateNetwork`), since
 * namespaces of one SDK may declare types of the same name with different properties.
 */
function declarations(source: ts.SourceFile): Map<string, Members> {
  const found = new Map<string, Members>();
  const visit = (node: ts.Node, path: readonly string[]): void => {
    if ((ts.isInterfaceDeclaration(node) || ts.isClassDeclaration(node)) && node.name) {
      found.set(node.name.text, node.members);
      if (path.length > 0) found.set([...path, node.name.text].join("."), node.members);
    }
    const inner = ts.isModuleDeclaration(node) && ts.isIdentifier(node.name) ? [...path, node.name.text] : path;
    ts.forEachChild(node, (child) => visit(child, inner));
  };
  visit(source, []);
  return found;
}

export class SdkPackage {
  private readonly nested: Map<string, Members>;

  constructor(private readonly dir: string) {
    this.nested = new Map([
      ...declarations(parse(join(dir, "types", "input.d.ts"))),
      ...declarations(parse(join(dir, "types", "output.d.ts"))),
    ]);
  }

  /** The named declarations of `file` (relative to the package), e.g. ("network.d.ts", "Network", "NetworkArgs", "NetworkState"). */
  type(file: string, ...names: string[]): SdkType {
    const own = declarations(parse(join(this.dir, file)));
    const properties = new Set<string>();
    const seen = new Set<string>();
    const collect = (members: Members): void => {
      for (const member of members) {
        if (!member.name || !(ts.isIdentifier(member.name) || ts.isStringLiteral(member.name))) continue;
        if (!(ts.isPropertySignature(member) || ts.isPropertyDeclaration(member))) continue;
        properties.add(member.name.text);
        // Nested types appear as inputs.X, outputs.remote.Y and the like: follow the qualified name, else the last.
        for (const [, name] of (member.type?.getText() ?? "").matchAll(/\b(?:inputs|outputs)\.((?:\w+\.)*\w+)/g)) {
          const members = this.nested.get(name!) ?? this.nested.get(name!.split(".").pop()!);
          if (members && !seen.has(name!)) {
            seen.add(name!);
            collect(members);
          }
        }
      }
    };
    for (const name of names) {
      const members = own.get(name);
      if (!members) throw new Error(`${file} declares no ${name}`);
      collect(members);
    }
    const args = names.find((n) => n.endsWith("Args"));
    const requiredArgs = args
      ? [...own.get(args)!]
          .filter((m): m is ts.PropertySignature => ts.isPropertySignature(m) && !m.questionToken)
          .map((m) => (m.name as ts.Identifier).text)
          .sort()
      : [];
    return { properties, requiredArgs };
  }
}
