/**
 * A table as kubectl prints one: an upper-case header row, every column padded to its widest cell
 * and separated by three spaces, no trailing blanks. Reads at a glance, and `awk '{print $1}'` still works.
 */
const GAP = "   ";

export function columns(headers: readonly string[], rows: ReadonlyArray<readonly string[]>): string {
  const widths = headers.map((header, i) => Math.max(header.length, ...rows.map((row) => (row[i] ?? "").length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, i) => cell.padEnd(widths[i]!))
      .join(GAP)
      .trimEnd();
  return [line(headers), ...rows.map(line)].join("\n");
}
