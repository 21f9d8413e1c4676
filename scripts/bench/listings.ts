/**
 * `npm run bench:listings`: the listings backend on a throwaway embedded Postgres, with baselines
 * measured in the same run.
 *
 * - ingest: BENCH_OFFERS (default 100,000; or `--offers N`) demo offers through the real ingest path
 *   (the `mock` adapter with that count → validation/normalisation → batched upserts → dedup flags →
 *   expiry check), first into an empty table, then again unchanged, then once more into the emptied
 *   tables (the same first load by a process that has run one before). Baseline: server-side `COPY` of the
 *   same normalised rows (CSV written beforehand, not timed) into a copy of `listings.offers` with the
 *   same indexes.
 * - GET /offers pages (limit 50, a mix of filters and sorts) at BENCH_CONNECTIONS (32) concurrent
 *   keep-alive connections over real HTTP for BENCH_SECONDS (5) each: p50/p99 and requests/s, from the
 *   service as configured (remembered answers) and from a second instance on the same database with
 *   `OFFERS_CACHE_MB=0`, where every request runs its statement.
 *   Baseline: the very SQL the service sent (captured with `Statement.CurrentTransformer`) with the same parameters, on a
 *   `pg` pool of the service's size (DATABASE_POOL_SIZE, 10) with the same concurrency.
 * - `complete=true` answering 5,000 rows: p50/p99 over HTTP (sequential), and its SQL directly.
 *
 * `--explain` adds each page query shape's sequential time and its EXPLAIN ANALYZE.
 *
 * Targets (2 cores): ingest ≥ 20,000 offers/s; page p99 ≤ 25 ms; complete p50 ≤ 150 ms.
 */
import { Migrations, EmbeddedPostgres, Database, freePort, serve } from "@svc/platform"
import { ImageCacher, ImageStore, Ingest, ListingsConfig, normalize, Service, Sources } from "@svc/listings"
import { Context, Effect, Layer, Option, Redacted, References, Result } from "effect"
import { SqlClient, Statement } from "effect/sql"
import * as fs from "node:fs/promises"
import * as Http from "node:http"
import * as os from "node:os"
import * as path from "node:path"
import pg from "pg"
import { demoRecords } from "../../packages/listings/src/adapters/Mock.ts"
import { fmt, httpGet as getVia, load, type RecordedStatement, statementRecorder } from "./support.ts"
import { hostSpeed } from "./hostSpeed.ts"

const argValue = (flag: string) => {
  const index = process.argv.indexOf(flag)
  return index >= 0 ? process.argv[index + 1] : undefined
}
const N = Number(argValue("--offers") ?? process.env.BENCH_OFFERS ?? 100_000)
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32)
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5)
const POOL = Number(process.env.DATABASE_POOL_SIZE ?? 10)
/** `--explain`: also each page query shape's time alone and its plan */
const EXPLAIN = process.argv.includes("--explain")

// the SQL the service sends, for the same-SQL baselines
const recorder = statementRecorder()

const agent = new Http.Agent({ keepAlive: true, maxSockets: CONNECTIONS })
const httpGet = (url: string) => getVia(agent, url)

const pageQueries = [
  "/offers?limit=50",
  "/offers?limit=50&make=toyota",
  "/offers?limit=50&regions=germany,france&sort=MILEAGE_ASC",
  "/offers?limit=50&query=merc",
  "/offers?limit=50&minYear=2015&maxMileageKm=100000&sort=YEAR_DESC",
  "/offers?limit=50&offset=500&fuelTypes=diesel",
  "/offers?limit=50&dedup=false&transmissions=automatic"
]

const csvField = (value: unknown) => {
  if (value === null || value === undefined) return ""
  const text = typeof value === "object" ? JSON.stringify(value) : String(value)
  return `"${text.replaceAll("\"", "\"\"")}"`
}

const program = Effect.gen(function*() {
  const dir = yield* Effect.acquireRelease(
    Effect.promise(async () => {
      const dir = await fs.mkdtemp(path.join(os.tmpdir(), "svc-bench-listings-"))
      await fs.chmod(dir, 0o755)
      return dir
    }),
    (dir) => Effect.promise(() => fs.rm(dir, { recursive: true, force: true }))
  )
  console.log(`bench:listings: ${N.toLocaleString("en-US")} offers, ${CONNECTIONS} connections, ${os.cpus().length} cores; ${yield* Effect.promise(hostSpeed)}`)
  const cluster = yield* EmbeddedPostgres.start({ dataDir: path.join(dir, "data") })
  const url = cluster.url("postgres")

  const database = Layer.succeed(Database, Database.of({ url, embedded: Option.some(cluster) }))
  const sqlLayer = Database.layerPool.pipe(Layer.provideMerge(database))
  const port = yield* freePort()
  const baseUrl = `http://127.0.0.1:${port}`
  const servicesWith = (answerCacheBytes?: number) =>
    Service.makeServices(
      Layer.mergeAll(
        ListingsConfig.layerTest({
          publicBaseUrl: baseUrl,
          batchSize: Number(process.env.INGEST_BATCH_SIZE ?? 2000),
          ...(answerCacheBytes === undefined ? {} : { answerCacheBytes })
        }),
        Sources.layerStatic([{ id: "bench", adapter: "mock", count: N }]),
        ImageStore.layerDisabled
      ),
      ImageCacher.layerDisabled
    )
  const services = servicesWith()
  // a second instance on the same database that remembers no answers (OFFERS_CACHE_MB=0)
  const uncachedPort = yield* freePort()
  const uncachedUrl = `http://127.0.0.1:${uncachedPort}`
  const app = Layer.mergeAll(
    serve(Service.routes, { name: "listings", port, host: "127.0.0.1" }).pipe(Layer.provide(services)),
    serve(Service.routes, { name: "listings-uncached", port: uncachedPort, host: "127.0.0.1" }).pipe(
      // fresh: its own services (layers are otherwise shared by reference within one build)
      Layer.provide(Layer.fresh(servicesWith(0)))
    ),
    services
  ).pipe(Layer.provideMerge(Layer.effectDiscard(Migrations.migrate("listings"))), Layer.provideMerge(sqlLayer))
  const context = yield* Layer.build(app)
  const sql = Context.get(context, SqlClient.SqlClient)
  const ingest = Context.get(context, Ingest)

  // --- ingest -----------------------------------------------------------------------------------------
  const runIngest = Effect.gen(function*() {
    const [handle] = yield* ingest.trigger({ trigger: "manual" })
    const t0 = performance.now()
    const outcome = yield* Option.getOrThrow(handle!.outcome)
    if (!outcome.ok) return yield* Effect.die(new Error("ingest failed"))
    return { ms: performance.now() - t0, outcome }
  })
  const first = yield* runIngest
  const second = yield* runIngest
  // the first load again, into emptied tables, by a process that has ingested before (its code
  // compiled, its connections' statements prepared): what every later first load of a source costs
  yield* sql`TRUNCATE listings.offers, listings.images`
  const again = yield* runIngest

  // baseline: COPY of the same rows (in its own function: the rows and their CSV are garbage after it,
  // not a heap the page measurements' garbage collections walk)
  const copyBaseline = Effect.gen(function*() {
    const rows = demoRecords(N, new Date()).map((record) => {
      const result = normalize("bench", record)
      if (Result.isFailure(result)) throw new Error(result.failure)
      return result.success.row
    })
    const columns = Object.keys(rows[0]!)
    const file = path.join(dir, "offers.csv")
    // the rows as the batch sends them: times are epoch milliseconds, `search` is tsvector text
    const field = (row: any, column: string) =>
      csvField(column.endsWith("_at") && row[column] !== null ? new Date(row[column]).toISOString() : row[column])
    yield* Effect.promise(() => fs.writeFile(file, rows.map((row) => columns.map((c) => field(row, c)).join(",")).join("\n")))
    yield* Effect.promise(() => fs.chmod(file, 0o644))
    yield* sql`CREATE TABLE listings.offers_copy (LIKE listings.offers INCLUDING ALL)`
    const c0 = performance.now()
    yield* sql.unsafe(`COPY listings.offers_copy (${columns.join(", ")}) FROM '${file}' WITH (FORMAT csv)`)
    return performance.now() - c0
  })
  const copyMs = yield* copyBaseline
  yield* sql`DROP TABLE listings.offers_copy`
  yield* sql`VACUUM ANALYZE listings.offers`

  console.log("\ningest (offers/s)")
  console.log(`  svc ingest, empty table     ${fmt(N / (first.ms / 1000), 0).padStart(10)}  (${fmt(first.ms, 0)} ms, ${first.outcome.offersUpserted} upserted; the fresh process's first run)`)
  console.log(`  svc ingest, unchanged rows  ${fmt(N / (second.ms / 1000), 0).padStart(10)}  (${fmt(second.ms, 0)} ms, ${second.outcome.offersUpserted} upserted)`)
  console.log(`  svc ingest, emptied again   ${fmt(N / (again.ms / 1000), 0).padStart(10)}  (${fmt(again.ms, 0)} ms, ${again.outcome.offersUpserted} upserted; the third run of the process)`)
  console.log(`  baseline: COPY same rows    ${fmt(N / (copyMs / 1000), 0).padStart(10)}  (${fmt(copyMs, 0)} ms)`)

  // --- pages ------------------------------------------------------------------------------------------
  // the statement of a repeated request: the page alone once the filter's count is remembered
  const capturedFor = async (pathAndQuery: string) => {
    await httpGet(uncachedUrl + pathAndQuery)
    const statements = await recorder.during(async () => {
      const response = await httpGet(uncachedUrl + pathAndQuery)
      if (response.status !== 200) throw new Error(`${pathAndQuery}: ${response.status} ${response.body.slice(0, 200)}`)
    })
    return statements.at(-1)!
  }
  const pageStatements: Array<RecordedStatement> = []
  for (const query of pageQueries) pageStatements.push(yield* Effect.promise(() => capturedFor(query)))
  const pool = new pg.Pool({ connectionString: Redacted.value(url), max: POOL })
  // an idle client cut off when the cluster stops at the end must not crash the report
  pool.on("error", () => {})
  yield* Effect.addFinalizer(() => Effect.promise(() => pool.end()))
  yield* Effect.promise(() => load(CONNECTIONS, 1, (i) => httpGet(baseUrl + pageQueries[i % pageQueries.length]!).then(() => undefined))) // warm-up
  if (EXPLAIN) {
    // per query shape, alone: its statement's mean time over 1 s, over HTTP and directly, and its plan
    console.log(`\nper query shape, sequential (mean ms: HTTP without answer cache / same SQL)`)
    for (const [i, query] of pageQueries.entries()) {
      const statement = pageStatements[i]!
      const viaHttp = yield* Effect.promise(() => load(1, 1, () => httpGet(uncachedUrl + query).then(() => undefined)))
      const viaSql = yield* Effect.promise(() => load(1, 1, () => pool.query(statement.text, statement.values).then(() => undefined)))
      console.log(`  ${query.padEnd(66)} ${fmt(1000 / viaHttp.rps, 2).padStart(7)} / ${fmt(1000 / viaSql.rps, 2)}`)
      const plan = yield* Effect.promise(() => pool.query(`EXPLAIN (ANALYZE, BUFFERS) ${statement.text}`, statement.values))
      console.log(plan.rows.map((row) => `      ${row["QUERY PLAN"]}`).join("\n"))
    }
  }
  const pagesFrom = (base: string) =>
    Effect.promise(() =>
      load(CONNECTIONS, SECONDS, async (i) => {
        const response = await httpGet(base + pageQueries[i % pageQueries.length]!)
        if (response.status !== 200) throw new Error(`status ${response.status}`)
      })
    )
  const pages = yield* pagesFrom(baseUrl)
  yield* Effect.promise(() => load(CONNECTIONS, 1, (i) => httpGet(uncachedUrl + pageQueries[i % pageQueries.length]!).then(() => undefined)))
  const uncachedPages = yield* pagesFrom(uncachedUrl)
  const direct = yield* Effect.promise(() =>
    load(CONNECTIONS, SECONDS, async (i) => {
      const statement = pageStatements[i % pageStatements.length]!
      await pool.query(statement.text, statement.values)
    })
  )
  console.log(`\nGET /offers page (limit 50, ${pageQueries.length} query shapes, ${CONNECTIONS} concurrent)`)
  console.log(`                       p50 ms    p99 ms       req/s`)
  console.log(`  svc over HTTP      ${fmt(pages.p50, 2).padStart(7)}   ${fmt(pages.p99, 2).padStart(7)}   ${fmt(pages.rps, 0).padStart(9)}   (answers remembered)`)
  console.log(`  svc, no answer cache ${fmt(uncachedPages.p50, 2).padStart(5)}   ${fmt(uncachedPages.p99, 2).padStart(7)}   ${fmt(uncachedPages.rps, 0).padStart(9)}   (OFFERS_CACHE_MB=0: every request runs its statement)`)
  console.log(`  baseline: same SQL ${fmt(direct.p50, 2).padStart(7)}   ${fmt(direct.p99, 2).padStart(7)}   ${fmt(direct.rps, 0).padStart(9)}`)

  // --- complete=true with 5,000 rows -----------------------------------------------------------------
  // a filter matching just under 5,000 offers: the mileage of the 5,000th lowest (or of the highest,
  // with fewer offers), minus one
  const [{ mileage }] = (yield* sql<{ mileage: number }>`
    SELECT max(mileage) AS mileage FROM (
      SELECT mileage FROM listings.offers WHERE removed_at IS NULL AND dedup_winner AND mileage IS NOT NULL
      ORDER BY mileage LIMIT 5000
    ) lowest`) as any
  const completePath = `/offers?complete=true&maxMileageKm=${mileage - 1}`
  const completeStatement = yield* Effect.promise(() => capturedFor(completePath))
  const sizeCheck = JSON.parse((yield* Effect.promise(() => httpGet(baseUrl + completePath))).body)
  const completeHttp = yield* Effect.promise(() => load(1, SECONDS, () => httpGet(baseUrl + completePath).then(() => undefined)))
  const completeUncached = yield* Effect.promise(() => load(1, SECONDS, () => httpGet(uncachedUrl + completePath).then(() => undefined)))
  const completeDirect = yield* Effect.promise(() =>
    load(1, SECONDS, () => pool.query(completeStatement.text, completeStatement.values).then(() => undefined))
  )
  console.log(`\nGET /offers complete=true (maxMileageKm=${mileage - 1}: ${sizeCheck.count} rows, sequential)`)
  console.log(`                       p50 ms    p99 ms`)
  console.log(`  svc over HTTP      ${fmt(completeHttp.p50, 2).padStart(7)}   ${fmt(completeHttp.p99, 2).padStart(7)}   (answers remembered)`)
  console.log(`  svc, no answer cache ${fmt(completeUncached.p50, 2).padStart(5)}   ${fmt(completeUncached.p99, 2).padStart(7)}`)
  console.log(`  baseline: same SQL ${fmt(completeDirect.p50, 2).padStart(7)}   ${fmt(completeDirect.p99, 2).padStart(7)}`)

  const verdict = (ok: boolean) => (ok ? "ok" : "MISSED")
  console.log(`\ntargets: ingest ≥ 20,000/s: ${verdict(N / (first.ms / 1000) >= 20_000)} (empty, first run) / ` +
    `${verdict(N / (again.ms / 1000) >= 20_000)} (emptied again) / ${verdict(N / (second.ms / 1000) >= 20_000)} (unchanged); ` +
    `page p99 ≤ 25 ms: ${verdict(pages.p99 <= 25)} (no answer cache: ${verdict(uncachedPages.p99 <= 25)}); ` +
    `complete p50 ≤ 150 ms: ${verdict(completeHttp.p50 <= 150)} (no answer cache: ${verdict(completeUncached.p50 <= 150)})`)
  agent.destroy()
}).pipe(
  Effect.scoped,
  Effect.provideService(References.MinimumLogLevel, "Warn"),
  Effect.provideService(Statement.CurrentTransformer, recorder.transformer)
)


Effect.runPromise(program).then(
  () => process.exit(0),
  (error) => {
    console.error(error)
    process.exit(1)
  }
)
