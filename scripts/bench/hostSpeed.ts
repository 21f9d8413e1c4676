/**
 * How fast this host is at the moment of a benchmark, printed beside its figures: the same code has
 * measured at twice the speed on one day as on another (queue and docs READMEs), and the two kinds of
 * slowness differ. A pure-JavaScript loop measures the CPU a process gets; a one-byte ping-pong over
 * loopback TCP with a child process measures what a request between two processes costs (the
 * system calls and wake-ups every service, Postgres connection and HTTP client here pays). A host
 * whose loop is fast and whose round trips are slow still runs the services slowly.
 */
import { spawn } from "node:child_process"
import * as Net from "node:net"
import { once } from "node:events"

const LOOP_STEPS = 2e8
const ROUND_TRIPS = 20_000

/** Seconds for {@link LOOP_STEPS} steps of an integer loop. */
const loopSeconds = (): number => {
  const started = performance.now()
  let x = 0
  for (let i = 0; i < LOOP_STEPS; i++) x = (x + i * 7) % 1_000_003
  if (x < 0) console.log(x) // keeps the loop from being optimised away
  return (performance.now() - started) / 1000
}

/** Microseconds per one-byte round trip over loopback TCP to a child process that echoes. */
const roundTripMicros = async (): Promise<number> => {
  const echo = spawn(process.execPath, [
    "-e",
    `require("node:net").createServer((c) => { c.setNoDelay(true); c.on("data", (d) => c.write(d)) })
      .listen(0, "127.0.0.1", function () { console.log(this.address().port) })`
  ], { stdio: ["ignore", "pipe", "inherit"] })
  try {
    const [line] = await once(echo.stdout!, "data") as [Buffer]
    const socket = Net.connect(Number(line.toString().trim()), "127.0.0.1")
    socket.setNoDelay(true)
    await once(socket, "connect")
    const started = performance.now()
    for (let i = 0; i < ROUND_TRIPS; i++) {
      socket.write("x")
      await once(socket, "data")
    }
    const micros = (performance.now() - started) * 1000 / ROUND_TRIPS
    socket.destroy()
    return micros
  } finally {
    echo.kill()
  }
}

/** One line for a benchmark's header: the host's speed now. */
export const hostSpeed = async (): Promise<string> => {
  const loop = loopSeconds()
  const roundTrip = await roundTripMicros()
  return `host speed now: 2·10⁸ loop steps in ${loop.toFixed(2)} s, ` +
    `a loopback TCP round trip to another process ${roundTrip.toFixed(1)} µs`
}
