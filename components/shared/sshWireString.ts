/** SSH's wire-format `string` (RFC 4251 section 5): the bytes after their length as a big-endian uint32. */
export function sshWireString(value: Buffer | string): Buffer {
  const bytes = typeof value === "string" ? Buffer.from(value) : value;
  const length = Buffer.alloc(4);
  length.writeUInt32BE(bytes.length);
  return Buffer.concat([length, bytes]);
}
