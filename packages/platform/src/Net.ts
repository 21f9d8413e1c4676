/** Loopback port helpers: pick a free port, ask whether something listens on one. */
import { Effect } from "effect"
import { createServer, Socket } from "node:net"

/** A port that was free a moment ago (bind to 0, read it, close). */
export const freePort = (host = "127.0.0.1"): Effect.Effect<number, Error> =>
  Effect.callback<number, Error>((resume) => {
    const server = createServer()
    server.once("error", (cause) => resume(Effect.fail(new Error("Could not find a free port", { cause }))))
    server.listen(0, host, () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      server.close(() => resume(Effect.succeed(port)))
    })
  })

/** Whether a TCP connection to `host:port` is accepted (within a second). */
export const acceptsConnections = (port: number, host = "127.0.0.1"): Effect.Effect<boolean> =>
  Effect.callback<boolean>((resume) => {
    const socket = new Socket()
    const done = (ok: boolean) => {
      socket.destroy()
      resume(Effect.succeed(ok))
    }
    socket.setTimeout(1000, () => done(false))
    socket.once("error", () => done(false))
    socket.connect(port, host, () => done(true))
  })

/** Whether `port` can be listened on at `host` right now (bind, then close at once). */
export const canListen = (port: number, host = "127.0.0.1"): Effect.Effect<boolean> =>
  Effect.callback<boolean>((resume) => {
    const probe = createServer()
    probe.once("error", () => resume(Effect.succeed(false)))
    probe.listen({ port, host, exclusive: true }, () => probe.close(() => resume(Effect.succeed(true))))
  })
