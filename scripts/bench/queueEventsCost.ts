/**
 * `node scripts/bench/queueEventsCost.ts`: what the events log costs the database, statement by
 * statement. The queue's own store calls — 100 publishes of one message (the HTTP publish path),
 * one publish of 100 (a batch), two claims of 100, one record of 200 deliveries — timed with the events triggers on and off,
 * alternated every round (the order flips each round), on a throwaway embedded Postgres, one client
 * connection at a time. On a machine whose load changes from second to second this compares the two
 * settings far better than bench:queue's drain rates, whose runs are minutes apart.
 * `BENCH_EVENTS_COST_ROUNDS` (default 40) rounds; prints per message of each step the median wall
 * time and the database's CPU time (its one server process's, from /proc: steady under load).
 */
import { Database, Migrations } from "@svc/platform"
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer } from "effect"
import { execSync } from "node:child_process"
import { readFileSync } from "node:fs"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import { Messages, QueueConfig } from "@svc/queue"

const ROUNDS = Number(process.env.BENCH_EVENTS_COST_ROUNDS ?? 40)
const BATCH = 100

const message = (i: number) => ({
  kind: "message" as const,
  url: "http://127.0.0.1:9/sink",
  delivery: { method: "POST", timeoutMs: 30_000, retries: 3, delayMs: 0, headers: { "content-type": "application/json" } },
  body: new TextEncoder().encode(JSON.stringify({ i, t: Date.now() })),
  callerIp: "127.0.0.1"
})

const median = (values: ReadonlyArray<number>) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)]!
}

const program = Effect.gen(function*() {
  const sql = yield* PgClient.PgClient
  const messages = yield* Messages
  const setEvents = (on: boolean) =>
    Effect.forEach(["messages_events_insert", "messages_events_update"], (trigger) =>
      sql.unsafe(`ALTER TABLE queue.messages ${on ? "ENABLE" : "DISABLE"} TRIGGER ${trigger}`), { discard: true })
  // One connection (DATABASE_POOL_SIZE=1): the CPU time of its server process is the database's
  // work for these statements, far steadier on a loaded machine than wall time.
  const [backend] = yield* sql`SELECT pg_backend_pid() AS pid`
  const pid = (backend as { pid: number }).pid
  const ticksPerSecond = Number(execSync("getconf CLK_TCK").toString().trim())
  const cpuMs = () => {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ")
    return (Number(fields[11]) + Number(fields[12])) * 1000 / ticksPerSecond
  }
  const timed = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
    Effect.gen(function*() {
      const started = performance.now()
      const cpuStarted = cpuMs()
      const value = yield* effect
      return { value, ms: performance.now() - started, cpu: cpuMs() - cpuStarted }
    })

  const series = () => ({ on: [] as Array<number>, off: [] as Array<number> })
  const steps = { publish: series(), batch: series(), claim: series(), delivered: series() }
  /** Database CPU ms per step and mode, summed over the rounds; messages per step and mode. */
  const cpu = { publish: { on: 0, off: 0 }, batch: { on: 0, off: 0 }, claim: { on: 0, off: 0 }, delivered: { on: 0, off: 0 } }
  const perStep = { publish: BATCH, batch: BATCH, claim: 2 * BATCH, delivered: 2 * BATCH }
  let n = 0
  for (let round = 0; round < ROUNDS; round++) {
    for (const on of round % 2 === 0 ? [false, true] : [true, false]) {
      const mode = on ? "on" : "off"
      yield* setEvents(on)
      const published = yield* timed(Effect.forEach(Array.from({ length: BATCH }, () => message(n++)), (m) => messages.publish([m], undefined), { discard: true }))
      const batch = yield* timed(messages.publish(Array.from({ length: BATCH }, () => message(n++)), undefined))
      const claimed = yield* timed(Effect.map(Effect.all([messages.claim(BATCH), messages.claim(BATCH)]), (claims) => claims.flat()))
      if (claimed.value.length !== 2 * BATCH) return yield* Effect.die(new Error(`claimed ${claimed.value.length} of ${2 * BATCH}`))
      const delivered = yield* timed(messages.markDelivered(claimed.value.map((m) => ({ id: m.id, claimId: m.claimId, status: 200 }))))
      steps.publish[mode].push(published.ms / BATCH)
      steps.batch[mode].push(batch.ms / BATCH)
      steps.claim[mode].push(claimed.ms / (2 * BATCH))
      steps.delivered[mode].push(delivered.ms / (2 * BATCH))
      cpu.publish[mode] += published.cpu
      cpu.batch[mode] += batch.cpu
      cpu.claim[mode] += claimed.cpu
      cpu.delivered[mode] += delivered.cpu
    }
  }
  const [events] = yield* sql`SELECT count(*)::int4 AS n FROM queue.events`
  console.log(`queue events cost: ${ROUNDS} rounds of ${BATCH} messages each way, ${os.cpus().length} cores, load average ${os.loadavg()[0]!.toFixed(1)}; ${(events as { n: number }).n} events recorded`)
  console.log("per message                       wall: off      on   | database CPU: off      on")
  const totals = { wallOff: 0, wallOn: 0, cpuOff: 0, cpuOn: 0 }
  for (
    const [name, label] of [
      ["publish", "publish (1 INSERT each)"],
      ["batch", "batch publish (1 INSERT per 100)"],
      ["claim", "claim (1 UPDATE per 100)"],
      ["delivered", "delivered (1 UPDATE per 200)"]
    ] as const
  ) {
    const wallOff = median(steps[name].off) * 1000
    const wallOn = median(steps[name].on) * 1000
    const cpuOff = cpu[name].off * 1000 / (ROUNDS * perStep[name])
    const cpuOn = cpu[name].on * 1000 / (ROUNDS * perStep[name])
    if (name !== "publish") {
      // the life of a message published in a batch
      totals.wallOff += wallOff
      totals.wallOn += wallOn
      totals.cpuOff += cpuOff
      totals.cpuOn += cpuOn
    }
    const us = (value: number) => `${value.toFixed(0).padStart(6)} µs`
    console.log(`${label.padEnd(34)}${us(wallOff)} ${us(wallOn)} |    ${us(cpuOff)} ${us(cpuOn)} (${((cpuOn / cpuOff - 1) * 100).toFixed(0)}%)`)
  }
  const us = (value: number) => `${value.toFixed(0).padStart(6)} µs`
  console.log(
    `${"a batch-published message's life".padEnd(34)}${us(totals.wallOff)} ${us(totals.wallOn)} |    ${us(totals.cpuOff)} ${
      us(totals.cpuOn)
    } (${((totals.cpuOn / totals.cpuOff - 1) * 100).toFixed(0)}%)`
  )
})

const main = async () => {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), "svc-bench-events-"))
  await fs.chmod(dir, 0o755)
  process.env.EMBEDDED_POSTGRES_DIR = path.join(dir, "data")
  process.env.DATABASE_POOL_SIZE = "1"
  try {
    const database = Layer.mergeAll(Migrations.layer("queue"), Messages.layer.pipe(Layer.provide(QueueConfig.layer))).pipe(
      Layer.provideMerge(Database.layer)
    )
    await Effect.runPromise(program.pipe(Effect.provide(database)))
  } finally {
    await fs.rm(dir, { recursive: true, force: true })
  }
}

main().then(() => process.exit(0), (error) => {
  console.error(error instanceof Error ? error.message : error)
  process.exit(1)
})
