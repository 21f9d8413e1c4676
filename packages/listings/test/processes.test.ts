/**
 * Real service processes (`node src/main.ts`) on one database:
 * - two processes triggered at once → one run per source (the lease decides);
 * - a SIGKILLed holder's lease expires, the next run proceeds and the dead run is `abandoned`, with the
 *   counts of the batches it wrote;
 * - SIGTERM during a run: the run is recorded `interrupted`, its lease released, exit code 0;
 * - SIGTERM while images are being cached: the claimed images not cached yet are given back;
 * - `svc listings ingest --wait` against a running process shows progress and exits 0.
 */
import { assert, describe, it } from "@effect/vitest"
import { formatBlobToken } from "@svc/blob"
import { LocalObjectStorage } from "@svc/platform"
import { makeFreshBucket, TestObjectStorage } from "@svc/platform/testing"
import { Effect, Redacted } from "effect"
import { spawn } from "node:child_process"
import { ADMIN_TOKEN, httpServer, TestDatabase } from "./support.ts"
import { CLI, type ServiceProcess, slowFeedServer, sqlOn, startService, waitFor } from "./processes.ts"

const trigger = (service: ServiceProcess, query = "") =>
  Effect.promise(async () => {
    const response = await fetch(`${service.baseUrl}/admin/ingest${query}`, {
      method: "POST",
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` }
    })
    return { status: response.status, body: await response.json() as { runs: Array<any> } }
  })

const statusOf = (runs: Array<any>, sourceId: string) => runs.find((run) => run.sourceId === sourceId)?.status

interface RunRow {
  readonly source_id: string
  readonly holder: string
  readonly ok: boolean | null
  readonly failure: string | null
  readonly finished: boolean
  readonly offers_fetched: number
  readonly offers_upserted: number
}

const runsOf = (sql: Effect.Success<ReturnType<typeof sqlOn>>, sourceId: string) =>
  sql<RunRow>`
    SELECT source_id, holder, ok, failure, finished_at IS NOT NULL AS finished, offers_fetched, offers_upserted
    FROM listings.ingest_runs WHERE source_id = ${sourceId} ORDER BY id`.pipe(Effect.orDie)

const leaseOf = (sql: Effect.Success<ReturnType<typeof sqlOn>>, sourceId: string) =>
  sql<{ readonly holder: string }>`SELECT holder FROM listings.ingest_leases WHERE source_id = ${sourceId}`.pipe(
    Effect.orDie
  )

describe("listings processes", () => {
  it.live("two processes on one database: one run per source", () =>
    Effect.gen(function*() {
      const url = Redacted.value(yield* TestDatabase.freshDatabase())
      const sql = yield* sqlOn(url)
      const feed = yield* slowFeedServer
      // 6 pages × 250 ms: both processes are triggered while the first run still goes on
      const sources = [feed.source("one", 6, 250), feed.source("two", 6, 250)]
      const env = { ADMIN_TOKEN, INGEST_LEASE_TTL: "3 seconds" }
      const [a, b] = yield* Effect.all([
        startService({ databaseUrl: url, sources, env }),
        startService({ databaseUrl: url, sources, env })
      ], { concurrency: 2 })

      const [fromA, fromB] = yield* Effect.all([trigger(a), trigger(b)], { concurrency: 2 })
      assert.strictEqual(fromA.status, 202)
      assert.strictEqual(fromB.status, 202)
      for (const source of ["one", "two"]) {
        const statuses = [statusOf(fromA.body.runs, source), statusOf(fromB.body.runs, source)].sort()
        assert.deepStrictEqual(statuses, ["skipped", "started"], `source ${source}: ${JSON.stringify([fromA, fromB])}`)
      }
      // while running, a third trigger on either process is skipped too
      const again = yield* trigger(b, "?sources=one")
      assert.strictEqual(statusOf(again.body.runs, "one"), "skipped")
      assert.strictEqual(again.body.runs[0].reason, "already_running")

      for (const source of ["one", "two"]) {
        const runs = yield* waitFor(runsOf(sql, source), (rows) => rows.every((r) => r.finished), `${source} finished`)
        assert.strictEqual(runs.length, 1, `one run of ${source}`)
        assert.strictEqual(runs[0]!.ok, true)
        assert.strictEqual(runs[0]!.offers_fetched, 12)
        assert.strictEqual(feed.firstPages(source), 1, `the feed of ${source} was read once`)
        // the run is recorded finished first, then its lease is released (a moment later on a busy machine)
        yield* waitFor(leaseOf(sql, source), (rows) => rows.length === 0, `the lease of ${source} released`)
      }
      // after the run, the other process may run it
      const next = yield* trigger(fromA.body.runs.find((r) => r.sourceId === "one").status === "started" ? b : a, "?sources=one&wait=true")
      assert.strictEqual(next.status, 200)
      assert.strictEqual(statusOf(next.body.runs, "one"), "finished")
      assert.strictEqual(next.body.runs[0].outcome.ok, true)
    }), { timeout: 60_000 })

  it.live("demo offers left by a start with ENABLE_MOCK_SOURCE=true are gone after a start without it", () =>
    Effect.gen(function*() {
      const url = Redacted.value(yield* TestDatabase.freshDatabase())
      const sources = [{ id: "mock", adapter: "mock" as const, count: 30 }]
      const count = (service: ServiceProcess) =>
        Effect.promise(async () => (await (await fetch(`${service.baseUrl}/offers?limit=0&dedup=false`)).json()).count as number)
      yield* Effect.scoped(Effect.gen(function*() {
        const demo = yield* startService({ databaseUrl: url, sources, env: { ADMIN_TOKEN, ENABLE_MOCK_SOURCE: "true" } })
        const run = yield* trigger(demo, "?wait=true")
        assert.strictEqual(run.status, 200, JSON.stringify(run.body))
        assert.strictEqual(yield* count(demo), 30)
      }))
      const real = yield* startService({ databaseUrl: url, sources, env: { ADMIN_TOKEN } })
      yield* waitFor(count(real), (n) => n === 0, "the demo offers removed")
      const byId = yield* Effect.promise(() => fetch(`${real.baseUrl}/offers/mock:demo-100000`))
      assert.strictEqual(byId.status, 404)
      assert.match(real.output(), /Removed 30 demo offers of source mock: ENABLE_MOCK_SOURCE is not true/)
    }), { timeout: 60_000 })

  it.live("a SIGKILLed holder's lease expires; the next run proceeds and the dead run is abandoned", () =>
    Effect.gen(function*() {
      const url = Redacted.value(yield* TestDatabase.freshDatabase())
      const sql = yield* sqlOn(url)
      const feed = yield* slowFeedServer
      const hanging = { id: "hang", adapter: "json" as const, url: `${feed.base}/hang` }
      const env = { ADMIN_TOKEN, INGEST_LEASE_TTL: "2 seconds" }
      const holder = yield* startService({ databaseUrl: url, sources: [hanging], env })
      // the second process reads a feed that answers at once
      const other = yield* startService({
        databaseUrl: url,
        sources: [{ ...feed.source("hang", 1, 0), id: "hang" }],
        env
      })

      const first = yield* trigger(holder, "?sources=hang")
      assert.strictEqual(statusOf(first.body.runs, "hang"), "started")
      const [lease] = yield* leaseOf(sql, "hang")
      assert.isDefined(lease)

      holder.child.kill("SIGKILL")
      assert.strictEqual(yield* Effect.promise(() => holder.exited), "SIGKILL")
      const killedAt = Date.now()

      // the lease still stands: the other process is refused until it expires
      const refused = yield* trigger(other, "?sources=hang")
      assert.strictEqual(statusOf(refused.body.runs, "hang"), "skipped")

      const next = yield* waitFor(
        trigger(other, "?sources=hang&wait=true"),
        (answer) => statusOf(answer.body.runs, "hang") === "finished",
        "the lease to expire",
        15_000
      )
      assert.isAtLeast(Date.now() - killedAt, 1000, "taken over only once the TTL ran out")
      assert.strictEqual(next.body.runs[0].outcome.ok, true)
      assert.strictEqual(next.body.runs[0].outcome.offersFetched, 2)

      const runs = yield* runsOf(sql, "hang")
      assert.strictEqual(runs.length, 2)
      assert.strictEqual(runs[0]!.holder, lease!.holder)
      assert.deepInclude(runs[0]!, { finished: true, ok: false, failure: "abandoned" })
      assert.deepInclude(runs[1]!, { finished: true, ok: true, failure: null })
      assert.deepStrictEqual(yield* leaseOf(sql, "hang"), [])
    }), { timeout: 60_000 })

  it.live("a run SIGKILLed after some batches is closed abandoned with the counts of what it wrote, not zeros", () =>
    Effect.gen(function*() {
      const url = Redacted.value(yield* TestDatabase.freshDatabase())
      const sql = yield* sqlOn(url)
      const feed = yield* slowFeedServer
      // 2 offers a page, a page every 100 ms, a batch per page
      const env = { ADMIN_TOKEN, INGEST_LEASE_TTL: "2 seconds", INGEST_BATCH_SIZE: "2" }
      const holder = yield* startService({ databaseUrl: url, sources: [feed.source("cut", 100, 100)], env })
      assert.strictEqual(statusOf((yield* trigger(holder, "?sources=cut")).body.runs, "cut"), "started")
      const offersOf = sql<{ readonly n: number }>`SELECT count(*)::int AS n FROM listings.offers WHERE source_id = 'cut'`
        .pipe(Effect.orDie, Effect.map((rows) => rows[0]!.n))
      yield* waitFor(offersOf, (n) => n >= 10, "some batches written")
      holder.child.kill("SIGKILL")
      assert.strictEqual(yield* Effect.promise(() => holder.exited), "SIGKILL")
      const written = yield* offersOf

      // another process takes the expired lease over, which closes the dead run
      const other = yield* startService({ databaseUrl: url, sources: [{ ...feed.source("cut", 1, 0), id: "cut" }], env })
      yield* waitFor(
        trigger(other, "?sources=cut&wait=true"),
        (answer) => statusOf(answer.body.runs, "cut") === "finished",
        "the lease to expire",
        15_000
      )
      const [dead] = yield* runsOf(sql, "cut")
      assert.deepInclude(dead!, { finished: true, ok: false, failure: "abandoned" })
      // each batch's counts are recorded after it commits: at most the two batches in flight (2 offers
      // each) were written and not yet counted when the process died
      assert.isAtMost(dead!.offers_upserted, written)
      assert.isAtLeast(dead!.offers_upserted, written - 4)
      assert.isAtLeast(dead!.offers_fetched, dead!.offers_upserted)
    }), { timeout: 60_000 })

  it.live("a process killed during a run and started again at once runs the source when the dead lease expires, not at the next turn", () =>
    Effect.gen(function*() {
      const url = Redacted.value(yield* TestDatabase.freshDatabase())
      const sql = yield* sqlOn(url)
      const feed = yield* slowFeedServer
      const env = { ADMIN_TOKEN, INGEST_LEASE_TTL: "2 seconds", INGEST_INTERVAL: "1 hour" }
      const holder = yield* startService({ databaseUrl: url, sources: [{ id: "crash", adapter: "json" as const, url: `${feed.base}/hang` }], env })
      assert.strictEqual(statusOf((yield* trigger(holder, "?sources=crash")).body.runs, "crash"), "started")
      holder.child.kill("SIGKILL")
      assert.strictEqual(yield* Effect.promise(() => holder.exited), "SIGKILL")
      // started again at once, with its start-up pass: the dead run's lease still stands then
      yield* startService({
        databaseUrl: url,
        sources: [{ ...feed.source("crash", 1, 0), id: "crash" }],
        env: { ...env, INGEST_ON_START: "true" }
      })
      const runs = yield* waitFor(
        runsOf(sql, "crash"),
        (rows) => rows.length === 2 && rows[1]!.finished,
        "the start-up pass to run the source once the dead lease expired",
        20_000
      )
      assert.deepInclude(runs[0]!, { finished: true, ok: false, failure: "abandoned" })
      assert.deepInclude(runs[1]!, { finished: true, ok: true, offers_fetched: 2 })
    }), { timeout: 60_000 })

  it.live("a scheduled run cut short by a database outage is run again once the database is back, not at the next turn", () =>
    Effect.gen(function*() {
      const database = yield* TestDatabase.freshDatabase()
      const url = Redacted.value(database)
      const sql = yield* sqlOn(url)
      const feed = yield* slowFeedServer
      // the start-up pass reads 30 pages, one every 100 ms; INGEST_INTERVAL is far away
      const service = yield* startService({
        databaseUrl: url,
        sources: [feed.source("outage", 30, 100)],
        env: { ADMIN_TOKEN, INGEST_LEASE_TTL: "2 seconds", INGEST_INTERVAL: "1 hour", INGEST_BATCH_SIZE: "2", INGEST_ON_START: "true" }
      })
      yield* waitFor(
        sql<{ readonly n: number }>`SELECT count(*)::int AS n FROM listings.offers WHERE source_id = 'outage'`.pipe(Effect.orDie),
        (rows) => rows[0]!.n >= 4,
        "the first pages"
      )
      // the database goes away for 3 seconds: new connections refused, open ones closed
      yield* TestDatabase.outage(database, "3 seconds")
      const runs = yield* waitFor(
        runsOf(sql, "outage").pipe(Effect.retry({ times: 20 })),
        (rows) => rows.some((row) => row.finished && row.ok === true),
        "a run that read the whole feed",
        30_000
      ).pipe(Effect.mapError((error) => new Error(`${error.message}\n${service.output()}`)))
      // the cut-short run, unfinished, was marked abandoned by the next; the last one read the whole feed
      assert.deepInclude(runs[0]!, { finished: true, ok: false, failure: "abandoned" })
      assert.deepInclude(runs.at(-1)!, { finished: true, ok: true, offers_fetched: 60 })
      const offers = yield* sql<{ readonly n: number }>`SELECT count(*)::int AS n FROM listings.offers WHERE source_id = 'outage'`
      assert.strictEqual(offers[0]!.n, 60)
    }), { timeout: 90_000 })

  it.live("SIGTERM during a run: recorded as interrupted, lease released, exit 0", () =>
    Effect.gen(function*() {
      const url = Redacted.value(yield* TestDatabase.freshDatabase())
      const sql = yield* sqlOn(url)
      const feed = yield* slowFeedServer
      const service = yield* startService({
        databaseUrl: url,
        sources: [feed.source("slow", 100, 200)],
        env: { ADMIN_TOKEN, INGEST_LEASE_TTL: "30 seconds", INGEST_BATCH_SIZE: "2", SHUTDOWN_TIMEOUT: "2 seconds" }
      })
      const started = yield* trigger(service, "?sources=slow")
      assert.strictEqual(statusOf(started.body.runs, "slow"), "started")
      // some pages are in
      yield* waitFor(
        sql<{ readonly n: number }>`SELECT count(*)::int AS n FROM listings.offers WHERE source_id = 'slow'`.pipe(
          Effect.orDie
        ),
        (rows) => rows[0]!.n >= 4,
        "the first pages"
      )
      assert.strictEqual((yield* leaseOf(sql, "slow")).length, 1)

      service.child.kill("SIGTERM")
      const code = yield* Effect.promise(() => service.exited)
      assert.strictEqual(code, 0, service.output())

      const runs = yield* runsOf(sql, "slow")
      assert.strictEqual(runs.length, 1)
      assert.deepInclude(runs[0]!, { finished: true, ok: false, failure: "interrupted" })
      assert.deepStrictEqual(yield* leaseOf(sql, "slow"), [], "the lease was released, not left to expire")
      // nothing was expired by the interrupted run
      const removed = yield* sql<{ readonly n: number }>`
        SELECT count(*)::int AS n FROM listings.offers WHERE source_id = 'slow' AND removed_at IS NOT NULL`
      assert.strictEqual(removed[0]!.n, 0)
    }), { timeout: 60_000 })

  it.live("svc listings ingest --wait against a running process: progress, then exit 0", () =>
    Effect.gen(function*() {
      const url = Redacted.value(yield* TestDatabase.freshDatabase())
      const feed = yield* slowFeedServer
      const service = yield* startService({
        databaseUrl: url,
        sources: [feed.source("cli", 8, 250), { id: "cli-off", adapter: "json", url: `${feed.base}/hang`, enabled: false }],
        env: { ADMIN_TOKEN }
      })
      const run = (token: string) =>
        Effect.promise(() =>
          new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
            const child = spawn(process.execPath, [CLI, "listings", "ingest", "--wait"], {
              env: { ...process.env, LISTINGS_URL: service.baseUrl, ADMIN_TOKEN: token },
              stdio: ["ignore", "pipe", "pipe"]
            })
            let stdout = ""
            let stderr = ""
            child.stdout.on("data", (chunk) => (stdout += chunk))
            child.stderr.on("data", (chunk) => (stderr += chunk))
            child.on("exit", (code) => resolve({ code, stdout, stderr }))
          })
        )
      const ok = yield* run(ADMIN_TOKEN)
      assert.strictEqual(ok.code, 0, ok.stdout + ok.stderr)
      const lines = ok.stdout.trim().split("\n")
      assert.include(lines, "cli: started")
      // progress on stderr, so that stdout holds the runs' starts and outcomes alone
      assert.isTrue(ok.stderr.split("\n").some((line) => /^cli: \d+ read, \d+ upserted, 0 rejected$/.test(line)), ok.stderr)
      assert.isFalse(lines.some((line) => /^cli: \d+ read/.test(line)), ok.stdout)
      assert.isTrue(lines.some((line) => /^cli: done - 16 read, 16 upserted, 0 rejected, 0 expired in /.test(line)), ok.stdout)

      const refused = yield* run("wrong-token")
      assert.notStrictEqual(refused.code, 0)
      assert.notInclude(refused.stdout, "started")
    }), { timeout: 60_000 })

  it.live("SIGTERM while images are being cached: the images not cached yet are given back, their attempt uncounted", () =>
    Effect.gen(function*() {
      const url = Redacted.value(yield* TestDatabase.freshDatabase())
      const sql = yield* sqlOn(url)
      // A feed of 6 offers with an image each; the image server never answers.
      let base = ""
      const requested = new Set<string>()
      base = yield* httpServer((req, res) => {
        if (req.url === "/feed") {
          res.writeHead(200, { "content-type": "application/json" })
          return res.end(JSON.stringify({
            offers: Array.from({ length: 6 }, (_, n) => ({
              id: `o${n}`, title: `Skoda Octavia ${n}`, make: "Skoda", model: "Octavia", price: 40_000 + n,
              currency: "PLN", fuel: "diesel", transmission: "manual", region: "mazowieckie",
              originalUrl: `https://feed.example/${n}`, images: [`${base}/img/${n}.png`]
            }))
          }))
        }
        // never answers: the downloads are in flight when the process stops
        requested.add(req.url ?? "")
      })
      const storage = yield* LocalObjectStorage.pipe(Effect.provide(TestObjectStorage))
      const bucket = yield* makeFreshBucket("offer-images").pipe(Effect.provide(TestObjectStorage))
      const token = formatBlobToken({
        endpoint: storage.endpoint,
        bucket,
        accessKeyId: storage.accessKeyId,
        secretAccessKey: Redacted.value(storage.secretAccessKey),
        region: storage.region
      })
      const service = yield* startService({
        databaseUrl: url,
        sources: [{ id: "pics", adapter: "json", url: `${base}/feed` }],
        env: { ADMIN_TOKEN, OFFER_IMAGES_STORAGE: token, IMAGE_CACHE_CONCURRENCY: "2", SHUTDOWN_TIMEOUT: "1 second", LOG_LEVEL: "info" }
      })
      assert.strictEqual(statusOf((yield* trigger(service, "?wait=true")).body.runs, "pics"), "finished")
      const images = sql<{ readonly status: string; readonly attempts: number; readonly n: number }>`
        SELECT status, attempts, count(*)::int AS n FROM listings.images GROUP BY 1, 2 ORDER BY 1, 2`.pipe(Effect.orDie)
      // two downloads in flight: the pass has claimed the batch of all six (attempt counted)
      yield* waitFor(Effect.sync(() => requested.size), (n) => n >= 2, "two image requests")
      assert.deepStrictEqual(yield* images, [{ status: "pending", attempts: 1, n: 6 }])

      service.child.kill("SIGTERM")
      assert.strictEqual(yield* Effect.promise(() => service.exited), 0, service.output())
      // given back: the next process's first pass takes them at once (they waited for the next ingest)
      assert.deepStrictEqual(yield* images, [{ status: "pending", attempts: 0, n: 6 }])
      assert.include(service.output(), "gave back 6 images not cached yet")
    }), { timeout: 60_000 })
})
