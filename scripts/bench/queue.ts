/**
 * `npm run bench:queue`: the delivery queue against pg-boss, in the same run, on the same Postgres.
 *
 * For each system, two phases with BENCH_MESSAGES (default 100,000) small messages to a local HTTP
 * destination (in this process):
 * - live: publish as fast as BENCH_PUBLISHERS (64) concurrent publishers can (to an API-only
 *   process) while a worker process delivers; publish rate, end-to-end delivery rate (messages / first publish -> last delivery)
 *   and p50/p99 publish -> delivery latency.
 * - drain: the same number published with no worker running, then one worker started; delivery
 *   rate = messages / (first -> last delivery) (also printed from the worker's start, start-up included).
 *   svc drains with QUEUE_EVENTS=false and with the events log (the default), alternated,
 *   BENCH_EVENTS_ROUNDS (2) times each, on the same database; the svc drain figure is the mean with events.
 *
 * svc: `node packages/queue/src/main.ts` (HTTP publish on its API, worker with the defaults:
 * concurrency 200, batch 200). pg-boss: `boss.send` per message (no HTTP hop: in its favour), and
 * BENCH_PGBOSS_WORKERS (10) `boss.work` loops of batch 100, polling every 0.5 s (pg-boss's minimum),
 * that POST each job of a batch to the destination concurrently. BENCH_ONLY=svc|pg-boss runs one side.
 * Postgres: DATABASE_URL when set, else a throwaway embedded cluster (default durability settings),
 * restarted once with `pg_stat_statements` loaded (for the batch run's statement timings).
 *
 * Then the batch run (scripts/bench/queueBatch.ts; BENCH_BATCH=false skips it, BENCH_ONLY=batch runs
 * only it), the schedules and the flow-control sections (BENCH_ONLY=schedules or flow runs only that one).
 */
import { EmbeddedPostgres } from "@svc/platform"
import { Effect, Exit, Redacted, Scope } from "effect"
import * as fs from "node:fs/promises"
import * as Http from "node:http"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import PgBoss from "pg-boss"
import { benchFlow } from "./queueFlow.ts"
import { benchSchedules } from "./queueSchedules.ts"
import { percentile } from "./support.ts"
import { PgClient } from "@effect/sql-pg"
import { Reactivity } from "effect/reactivity"
import { benchBatch } from "./queueBatch.ts"
import { hostSpeed } from "./hostSpeed.ts"
import { destination, postJson } from "./queueDestination.ts"
import { healthy, sleep, startQueue, stop, TOKEN, waitUntil } from "./queueProcess.ts"

const N = Number(process.env.BENCH_MESSAGES ?? 100_000)
const PUBLISHERS = Number(process.env.BENCH_PUBLISHERS ?? 64)
/** pg-boss work loops (each fetches a batch of 100 every 0.5 s at most: its polling bounds its rate). */
const PGBOSS_WORKERS = Number(process.env.BENCH_PGBOSS_WORKERS ?? 10)
/** Drain runs of svc with the events log off and on (alternated): this many of each. */
const EVENTS_ROUNDS = Math.max(1, Number(process.env.BENCH_EVENTS_ROUNDS ?? 2))
/** `svc`, `pg-boss`, `batch` (the batch run only, both systems) or everything (default). */
const ONLY = process.env.BENCH_ONLY
/** BENCH_ONLY names one section: the others are skipped. */
const runs = (section: "svc" | "pg-boss" | "batch" | "schedules" | "flow") =>
  ONLY === undefined || ONLY === section ||
  // svc and pg-boss name a side: the svc-only sections run with svc.
  (ONLY === "svc" && section !== "pg-boss") || (ONLY === "pg-boss" && section === "batch")
const root = fileURLToPath(new URL("../../", import.meta.url))

/** `count` publishes by `PUBLISHERS` concurrent loops; returns ms taken. */
const publishAll = async (publishOne: (i: number) => Promise<void>) => {
  let next = 0
  const started = Date.now()
  await Promise.all(Array.from({ length: PUBLISHERS }, async () => {
    while (next < N) await publishOne(next++)
  }))
  return { started, ms: Date.now() - started }
}

interface Figures {
  readonly publishRate: number
  readonly e2eRate: number
  readonly p50: number
  readonly p99: number
  readonly drainRate: number
  readonly duplicates: number
}

const report = (name: string, f: Figures) =>
  console.log(
    `${name.padEnd(8)} publish ${f.publishRate.toFixed(0).padStart(6)} msg/s | live delivery ${
      f.e2eRate.toFixed(0).padStart(6)
    } msg/s, latency p50 ${f.p50} ms p99 ${f.p99} ms | drain ${f.drainRate.toFixed(0).padStart(6)} msg/s | duplicates ${f.duplicates}`
  )

// -----------------------------------------------------------------------------
// svc queue
// -----------------------------------------------------------------------------

const benchSvc = async (databaseUrl: string, dest: Awaited<ReturnType<typeof destination>>): Promise<Figures> => {
  const agent = new Http.Agent({ keepAlive: true, maxSockets: PUBLISHERS })
  const publisher = (port: number) => (i: number) =>
    new Promise<void>((resolve, reject) => {
      const req = Http.request(`http://127.0.0.1:${port}/v2/publish/${dest.url}`, {
        method: "POST",
        agent,
        headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" }
      }, (res) => {
        res.resume()
        res.on("end", () => res.statusCode === 201 ? resolve() : reject(new Error(`publish answered ${res.statusCode}`)))
      })
      req.on("error", reject)
      req.end(JSON.stringify({ i, t: Date.now() }))
    })

  // live: an API process (QUEUE_WORKER=false) and a worker process on the same database, so that
  // publishing and delivering each get a core (in one process they share one event loop)
  const port = 18_900 + Math.floor(Math.random() * 500)
  const queue = startQueue(databaseUrl, port, false)
  const liveWorker = startQueue(databaseUrl, port + 2, true)
  await waitUntil(healthy(port), 60_000, "the queue")
  await waitUntil(healthy(port + 2), 60_000, "the worker")
  dest.reset()
  const live = await publishAll(publisher(port))
  await waitUntil(() => dest.count() >= N, 600_000, "svc live deliveries")
  const latencies = [...dest.latencies()].sort((a, b) => a - b)
  const liveFigures = {
    publishRate: N / (live.ms / 1000),
    e2eRate: N / ((dest.last() - live.started) / 1000),
    p50: percentile(latencies, 0.5),
    p99: percentile(latencies, 0.99)
  }
  let duplicates = dest.duplicates()
  await stop(queue)
  await stop(liveWorker)

  // drain: publish with no worker, then start one; without the events log (QUEUE_EVENTS=false on both
  // processes) and with it (the default) on the same database, to show what it costs. Within a round
  // the run with events comes second, on the larger tables: the cost is rather over- than underestimated.
  const drain = async (events: boolean) => {
    const env = { QUEUE_EVENTS: String(events) }
    const api = startQueue(databaseUrl, port, false, env)
    await waitUntil(healthy(port), 60_000, "the queue (API only)")
    dest.reset()
    const published = await publishAll(publisher(port))
    await stop(api)
    const workerPort = port + 1
    const drainStart = Date.now()
    const worker = startQueue(databaseUrl, workerPort, true, env)
    await waitUntil(() => dest.count() >= N, 600_000, "svc drain deliveries")
    const drainRate = N / ((dest.last() - dest.first()) / 1000)
    const drainWithStart = N / ((dest.last() - drainStart) / 1000)
    console.log(
      `svc drain, events ${events ? "on " : "off"}: publish ${(N / (published.ms / 1000)).toFixed(0)} msg/s, drain ${drainRate.toFixed(0)} msg/s (${
        drainWithStart.toFixed(0)
      } including worker start-up)`
    )
    duplicates += dest.duplicates()
    await stop(worker)
    return { publishRate: N / (published.ms / 1000), drainRate }
  }
  // Alternated (off, on, off, on, ...) so that a change in the machine's load hits both alike.
  const rounds: Record<"on" | "off", Array<{ publishRate: number; drainRate: number }>> = { on: [], off: [] }
  for (let round = 0; round < EVENTS_ROUNDS; round++) {
    rounds.off.push(await drain(false))
    rounds.on.push(await drain(true))
  }
  const mean = (list: ReadonlyArray<number>) => list.reduce((a, b) => a + b, 0) / list.length
  const eventsOn = { drainRate: mean(rounds.on.map((r) => r.drainRate)), publishRate: mean(rounds.on.map((r) => r.publishRate)) }
  const eventsOff = { drainRate: mean(rounds.off.map((r) => r.drainRate)), publishRate: mean(rounds.off.map((r) => r.publishRate)) }
  console.log(
    `svc events log (mean of ${EVENTS_ROUNDS} alternated rounds): drain ${eventsOn.drainRate.toFixed(0)} msg/s on, ${
      eventsOff.drainRate.toFixed(0)
    } msg/s off (${(eventsOn.drainRate / eventsOff.drainRate).toFixed(2)}x); publish ${eventsOn.publishRate.toFixed(0)} msg/s on, ${
      eventsOff.publishRate.toFixed(0)
    } msg/s off (${(eventsOn.publishRate / eventsOff.publishRate).toFixed(2)}x)`
  )
  const drainRate = eventsOn.drainRate
  agent.destroy()
  return { ...liveFigures, drainRate, duplicates }
}

// -----------------------------------------------------------------------------
// pg-boss
// -----------------------------------------------------------------------------

const benchPgBoss = async (databaseUrl: string, dest: Awaited<ReturnType<typeof destination>>): Promise<Figures> => {
  const agent = new Http.Agent({ keepAlive: true, maxSockets: 100 * PGBOSS_WORKERS })
  const deliver = postJson(agent, dest.url)
  const queueName = "bench"
  const startWorkers = async (boss: PgBoss) => {
    for (let w = 0; w < PGBOSS_WORKERS; w++) {
      await boss.work<{ i: number; t: number }>(queueName, { batchSize: 100, pollingIntervalSeconds: 0.5 }, async (jobs: Array<PgBoss.Job<{ i: number; t: number }>>) => {
        await Promise.all(jobs.map((job) => deliver(job.data)))
      })
    }
  }
  const publisher = (boss: PgBoss) => async (i: number) => {
    await boss.send(queueName, { i, t: Date.now() })
  }

  const boss = new PgBoss({ connectionString: databaseUrl, max: 20 })
  boss.on("error", () => {})
  await boss.start()
  await boss.createQueue(queueName)

  // live
  await startWorkers(boss)
  dest.reset()
  const live = await publishAll(publisher(boss))
  await waitUntil(() => dest.count() >= N, 900_000, "pg-boss live deliveries")
  const latencies = [...dest.latencies()].sort((a, b) => a - b)
  const liveFigures = {
    publishRate: N / (live.ms / 1000),
    e2eRate: N / ((dest.last() - live.started) / 1000),
    p50: percentile(latencies, 0.5),
    p99: percentile(latencies, 0.99)
  }
  let duplicates = dest.duplicates()
  await boss.stop({ graceful: true, wait: true })

  // drain
  const publisherBoss = new PgBoss({ connectionString: databaseUrl, max: 20, supervise: false, schedule: false })
  publisherBoss.on("error", () => {})
  await publisherBoss.start()
  dest.reset()
  await publishAll(publisher(publisherBoss))
  await publisherBoss.stop({ graceful: true, wait: true })
  const worker = new PgBoss({ connectionString: databaseUrl, max: 20 })
  worker.on("error", () => {})
  const drainStart = Date.now()
  await worker.start()
  await startWorkers(worker)
  await waitUntil(() => dest.count() >= N, 900_000, "pg-boss drain deliveries")
  const drainRate = N / ((dest.last() - dest.first()) / 1000)
  const drainWithStart = N / ((dest.last() - drainStart) / 1000)
  console.log(`pg-boss drain including worker start-up: ${drainWithStart.toFixed(0)} msg/s`)
  duplicates += dest.duplicates()
  await worker.stop({ graceful: true, wait: true })
  agent.destroy()
  return { ...liveFigures, drainRate, duplicates }
}

// -----------------------------------------------------------------------------

/** Runs one statement on the database at `url`; its rows. */
const runSql = (url: string, statement: string): Promise<ReadonlyArray<Record<string, unknown>>> =>
  Effect.runPromise(Effect.scoped(Effect.gen(function*() {
    const sql = yield* PgClient.make({ url: Redacted.make(url), maxConnections: 1 })
    return yield* sql.unsafe<Record<string, unknown>>(statement)
  })).pipe(Effect.provide(Reactivity.layer)))

const main = async () => {
  const scope = Scope.makeUnsafe()
  let dir: string | undefined
  try {
    let adminUrl = process.env.DATABASE_URL
    let postmaster: number | undefined
    if (adminUrl === undefined) {
      dir = await fs.mkdtemp(path.join(os.tmpdir(), "svc-bench-pg-"))
      await fs.chmod(dir, 0o755)
      const dataDir = path.join(dir, "data")
      // Started once to load pg_stat_statements at the next start (it needs shared_preload_libraries);
      // `track = all` also counts the statements the events triggers run inside a publish or claim.
      const first = Scope.makeUnsafe()
      const initial = await Effect.runPromise(EmbeddedPostgres.start({ dataDir }).pipe(Scope.provide(first)))
      const initialUrl = Redacted.value(initial.url("postgres"))
      await runSql(initialUrl, "ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'")
      await runSql(initialUrl, "ALTER SYSTEM SET pg_stat_statements.track = 'all'")
      await Effect.runPromise(Scope.close(first, Exit.void))
      const cluster = await Effect.runPromise(EmbeddedPostgres.start({ dataDir }).pipe(Scope.provide(scope)))
      adminUrl = Redacted.value(cluster.url("postgres"))
      postmaster = Number((await fs.readFile(path.join(dataDir, "postmaster.pid"), "utf8")).split("\n")[0])
    }
    const admin = new URL(adminUrl)
    const databaseUrl = (name: string) => {
      const url = new URL(admin)
      url.pathname = `/${name}`
      return url.toString()
    }
    const admin_ = adminUrl
    const adminSql = (statement: string) => runSql(admin_, statement)
    const suffix = Date.now().toString(36)
    const databases = [`bench_svc_${suffix}`, `bench_pgboss_${suffix}`, `bench_batch_svc_${suffix}`, `bench_batch_pgboss_${suffix}`]
    for (const name of databases) await adminSql(`CREATE DATABASE ${name}`)

    console.log(`bench:queue: ${N} messages, ${PUBLISHERS} concurrent publishers, ${os.cpus().length} cores; ${await hostSpeed()}`)
    const dest = await destination()
    const svc = !runs("svc") ? undefined : await benchSvc(databaseUrl(`bench_svc_${suffix}`), dest)
    if (svc) report("svc", svc)
    const boss = !runs("pg-boss") ? undefined : await benchPgBoss(databaseUrl(`bench_pgboss_${suffix}`), dest)
    if (boss) report("pg-boss", boss)
    if (svc && boss) console.log(
      `ratio svc / pg-boss: publish ${(svc.publishRate / boss.publishRate).toFixed(2)}x, live delivery ${
        (svc.e2eRate / boss.e2eRate).toFixed(2)
      }x, drain ${(svc.drainRate / boss.drainRate).toFixed(2)}x, p50 latency ${(boss.p50 / Math.max(1, svc.p50)).toFixed(2)}x lower`
    )
    if (process.env.BENCH_BATCH !== "false" && runs("batch")) {
      await benchBatch({
        svcDatabase: databaseUrl(`bench_batch_svc_${suffix}`),
        pgBossDatabase: databaseUrl(`bench_batch_pgboss_${suffix}`),
        dest,
        only: ONLY === "batch" ? undefined : ONLY,
        postmaster,
        query: runSql,
        statementsAvailable: postmaster !== undefined
      })
    }
    dest.close()
    if (runs("schedules")) {
      await benchSchedules(async () => {
        const name = `bench_schedules_${Date.now().toString(36)}`
        await adminSql(`CREATE DATABASE ${name}`)
        return databaseUrl(name)
      })
    }
    if (runs("flow") && process.env.BENCH_FLOW !== "false") {
      await benchFlow(postmaster, async () => {
        const name = `bench_flow_${Date.now().toString(36)}_${Math.floor(Math.random() * 1e6)}`
        await adminSql(`CREATE DATABASE ${name}`)
        return databaseUrl(name)
      })
    }
    for (const name of databases) {
      await adminSql(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
    }
  } finally {
    await Effect.runPromise(Scope.close(scope, Exit.void))
    if (dir !== undefined) await fs.rm(dir, { recursive: true, force: true })
  }
}

main().then(() => process.exit(0), (error) => {
  console.error(error instanceof Error ? error.message : error)
  process.exit(1)
})
