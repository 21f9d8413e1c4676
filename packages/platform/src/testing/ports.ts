/**
 * Ports for a service a test spawns as a child process, which binds them seconds later.
 *
 * `freePort()` (bind to 0) hands out a port from the kernel's ephemeral range, the range every
 * outgoing connection takes its local port from: between the test picking it and the child binding
 * it, any connection on the machine (the child's own to its database, to begin with) may take it,
 * and the child's listen fails with EADDRINUSE. A port below that range is never handed out by the
 * kernel; only a program that asks for it by number can hold it.
 */
import { Effect } from "effect"
import { readFileSync } from "node:fs"
import { canListen } from "../Net.ts"

/** The first port of the kernel's ephemeral range (Linux: 32768 unless configured). */
const ephemeralStart = (): number => {
  try {
    const first = Number(readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0])
    return first > 10_000 ? first : 32768
  } catch {
    return 32768
  }
}

/** A port below the ephemeral range that is free now (for a child process to bind later). */
export const spawnablePort = (host = "127.0.0.1"): Effect.Effect<number> =>
  Effect.gen(function*() {
    const top = ephemeralStart()
    const bottom = 10_000
    for (let attempt = 0; attempt < 200; attempt++) {
      const port = bottom + Math.floor(Math.random() * (top - bottom))
      if (yield* canListen(port, host)) return port
    }
    return yield* Effect.die(new Error("No free port below the ephemeral range after 200 attempts"))
  })

/** `count` distinct ports from {@link spawnablePort}. */
export const spawnablePorts = (count: number, host = "127.0.0.1"): Effect.Effect<Array<number>> =>
  Effect.gen(function*() {
    const ports = new Set<number>()
    while (ports.size < count) ports.add(yield* spawnablePort(host))
    return [...ports]
  })
