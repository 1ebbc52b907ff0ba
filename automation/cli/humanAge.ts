/**
 * How long ago something happened, as kubectl's AGE column says it: precise while recent ("45s",
 * "3m20s"), coarser as it gets older ("5h", "3d4h", "40d"), so the column stays narrow.
 */
export function humanAge(since: Date, now: Date): string {
  const seconds = Math.max(0, Math.floor((now.getTime() - since.getTime()) / 1000));
  const minutes = Math.floor(seconds / 60);
  const hours = Math.floor(minutes / 60);
  const days = Math.floor(hours / 24);
  const and = (whole: string, part: number, unit: string) => (part === 0 ? whole : `${whole}${part}${unit}`);
  if (seconds < 120) return `${seconds}s`;
  if (minutes < 10) return and(`${minutes}m`, seconds % 60, "s");
  if (hours < 3) return `${minutes}m`;
  if (hours < 8) return and(`${hours}h`, minutes % 60, "m");
  if (hours < 48) return `${hours}h`;
  if (days < 8) return and(`${days}d`, hours % 24, "h");
  return `${days}d`;
}
