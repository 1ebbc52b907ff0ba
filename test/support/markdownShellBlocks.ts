/**
 * The shell blocks of a documentation page, in order, so a test can run them as a reader would.
 * An HTML comment right before a block (invisible on the rendered page) marks one that keeps running
 * in its own terminal: `<!-- docs-test: background, ready when the output says "TEXT" -->` or
 * `<!-- docs-test: background, ready when URL answers -->`.
 */

export type Readiness = { readonly outputIncludes: string } | { readonly urlAnswers: string };

export interface ShellBlock {
  /** 1-based line of the opening fence, for messages. */
  readonly line: number;
  readonly script: string;
  /** Set for a block that runs in the background until the test ends. */
  readonly background?: Readiness;
}

const FENCE = /^```(\w*)\s*$/;
const DIRECTIVE = /^<!--\s*docs-test:\s*(.*?)\s*-->$/;
const SHELLS = new Set(["sh", "bash", "shell"]);

function readiness(directive: string, line: number): Readiness {
  const output = /^background, ready when the output says "([^"]+)"$/.exec(directive);
  if (output) return { outputIncludes: output[1]! };
  const url = /^background, ready when (https?:\/\/\S+) answers$/.exec(directive);
  if (url) return { urlAnswers: url[1]! };
  throw new Error(`line ${line}: unknown docs-test directive ${JSON.stringify(directive)}`);
}

/** The `sh`/`bash` blocks of `markdown`; other languages are prose to the test. */
export function shellBlocks(markdown: string): ShellBlock[] {
  const lines = markdown.split("\n");
  const blocks: ShellBlock[] = [];
  let pending: { directive: string; line: number } | undefined;
  for (let i = 0; i < lines.length; i++) {
    const text = lines[i]!.trim();
    const directive = DIRECTIVE.exec(text);
    if (directive) {
      pending = { directive: directive[1]!, line: i + 1 };
      continue;
    }
    const fence = FENCE.exec(text);
    if (!fence) {
      if (pending && text !== "") throw new Error(`line ${pending.line}: a docs-test directive must stand right before a shell block`);
      continue;
    }
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && lines[i]!.trim() !== "```"; i++) body.push(lines[i]!);
    if (i >= lines.length) throw new Error(`line ${start + 1}: the block is never closed`);
    if (!SHELLS.has(fence[1]!)) {
      if (pending) throw new Error(`line ${pending.line}: a docs-test directive must stand before a shell block`);
      continue;
    }
    blocks.push({
      line: start + 1,
      script: body.join("\n"),
      ...(pending ? { background: readiness(pending.directive, pending.line) } : {}),
    });
    pending = undefined;
  }
  return blocks;
}
