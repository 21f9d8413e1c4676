/**
 * `node scripts/bench/queueEventsCost.ts`: what the events log costs the database, statement by
 * statement. The queue's own store calls — 100 publishes of one message (the HTTP publish path),
 * one publish of 100 (a batch), two claims of 100, one record of 200 deliveries — timed with the events triggers on and off,
 * alternated every round (the order flips each round), on a throwaway embedded Postgres, one client
 * connection at a time. On a machine whose load changes from second to second this compares the two
 * settings far better than bench:queue's drain rates, whose runs are minutes apart.
 * `BENCH_EVENTS_COST_ROUNDS` (default 40) rounds; prints the median per message of each step.
 */
import { Database, Migrations } from "@svc/platform"
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer } from "effect"
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
  const timed = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
    Effect.gen(function*() {
      const started = performance.now()
      const value = yield* effect
      return { value, ms: performance.now() - started }
    })

  const series = () => ({ on: [] as Array<number>, off: [] as Array<number> })
  const steps = { publish: series(), batch: series(), claim: series(), delivered: series() }
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
    }
  }
  const [events] = yield* sql`SELECT count(*)::int4 AS n FROM queue.events`
  console.log(`queue events cost: ${ROUNDS} rounds of ${BATCH} messages each way, ${os.cpus().length} cores, load average ${os.loadavg()[0]!.toFixed(1)}; ${(events as { n: number }).n} events recorded`)
  console.log("step (per message)              events off   events on   difference")
  let totalOff = 0
  let totalOn = 0
  for (
    const [name, label] of [
      ["publish", "publish (1 INSERT each)"],
      ["batch", "batch publish (1 INSERT per 100)"],
      ["claim", "claim (1 UPDATE per 100)"],
      ["delivered", "delivered (1 UPDATE per 200)"]
    ] as const
  ) {
    const off = median(steps[name].off) * 1000
    const on = median(steps[name].on) * 1000
    if (name !== "publish") {
      // the life of a message published in a batch
      totalOff += off
      totalOn += on
    }
    console.log(`${label.padEnd(32)}${off.toFixed(0).padStart(7)} µs ${on.toFixed(0).padStart(9)} µs ${(on - off).toFixed(0).padStart(9)} µs`)
  }
  console.log(`${"batch-published message's life".padEnd(32)}${totalOff.toFixed(0).padStart(7)} µs ${totalOn.toFixed(0).padStart(9)} µs ${(totalOn - totalOff).toFixed(0).padStart(9)} µs (${((totalOn / totalOff - 1) * 100).toFixed(0)}%)`)
})

const main = async () => {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), "svc-bench-events-"))
  await fs.chmod(dir, 0o755)
  process.env.EMBEDDED_POSTGRES_DIR = path.join(dir, "data")
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
