/**
 * Whether `serve` can listen where it was told to, asked before it touches its data directory: a
 * port already taken (another serve, `nodefleet local up`'s fake API, any program) should cost the
 * user one clear line, not a lock, a store and an applied simulation left behind by a start that
 * was bound to fail. A second program can still take the port between this check and the real
 * listen; that error gets the same wording (portProblem).
 */
import * as net from "node:net";

/** The error for a failed listen, worded with the option to change; other errors are answered unchanged. */
export function portProblem(error: unknown, host: string, port: number): unknown {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (code === "EADDRINUSE")
    return new Error(
      `--port ${port}: ${host}:${port} is already in use (another nodefleet serve or another program); pick a free port with --port <n>`,
    );
  if (code === "EACCES")
    return new Error(
      `--port ${port}: this user may not listen on ${host}:${port} (ports below 1024 need privileges); pick another with --port <n>`,
    );
  if (code === "EADDRNOTAVAIL")
    return new Error(`--host ${host}: no interface of this machine has that address; pick another with --host <address>`);
  return error;
}

/** Binds `host:port` once and lets go of it; rejects with portProblem's wording when that fails. Port 0 (any free port) always can. */
export async function assertCanListen(host: string, port: number): Promise<void> {
  if (port === 0) return;
  const probe = net.createServer();
  await new Promise<void>((resolve, reject) => {
    probe.once("error", (error) => reject(portProblem(error, host, port)));
    probe.listen({ host, port, exclusive: true }, () => probe.close(() => resolve()));
  });
}
