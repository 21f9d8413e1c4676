import { assert, describe, it } from "@effect/vitest"
import { PgClient } from "@effect/sql-pg"
import { ConfigProvider, Context, Duration, Effect, Exit, Fiber, Layer, Logger, Option, Redacted, Schedule, Scope } from "effect"
import { SqlClient } from "effect/sql"
import * as fs from "node:fs/promises"
import { spawn } from "node:child_process"
import * as path from "node:path"
import { inject } from "vitest"
import { Database } from "../src/Database.ts"
import * as EmbeddedPostgres from "../src/EmbeddedPostgres.ts"
import * as Migrations from "../src/Migrations.ts"
import { acceptsConnections, freePort } from "../src/Net.ts"
import * as PostgresReady from "../src/PostgresReady.ts"
import { tempDir } from "../src/testing/tempDir.ts"
import { withFakeFlock } from "./fixtures/fakeFlock.ts"
import * as net from "node:net"

const isAlive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM"
  }
}

const tempDataDir = tempDir("svc-embedded-").pipe(Effect.map((dir) => path.join(dir, "data")))

const query = <A extends object>(cluster: EmbeddedPostgres.RunningPostgres, text: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return yield* sql.unsafe<A>(text)
  }).pipe(Effect.provide(PgClient.layer({ url: cluster.url("postgres"), maxConnections: 1 })))

/** Two starts at the same moment (each through its own flock process, as two `svc` processes): one owns, one shares. */
const twoAtOnce = (first: string, second: string) =>
  Effect.gen(function*() {
    const clusters = yield* Effect.all([EmbeddedPostgres.start({ dataDir: first }), EmbeddedPostgres.start({ dataDir: second })], {
      concurrency: 2
    })
    assert.deepStrictEqual(clusters.map((cluster) => cluster.owned).sort(), [false, true])
    assert.strictEqual(clusters[0].port, clusters[1].port)
    return clusters
  })

// it.live: the cluster's start-up polling and shutdown wait run on the real clock.
describe("EmbeddedPostgres", () => {
  it.live("starts, stops with its scope, and finds its data again on restart", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDataDir
      const logged: Array<string> = []
      const capture = Logger.layer([Logger.make((options) => logged.push(String(options.message)))])
      const first = yield* Effect.scoped(Effect.gen(function*() {
        const cluster = yield* EmbeddedPostgres.start({ dataDir })
        assert.isTrue(cluster.owned)
        yield* query(cluster, "CREATE TABLE kept (note text)")
        yield* query(cluster, "INSERT INTO kept VALUES ('survives restarts')")
        // new WAL files are not zero-filled first, and WAL is written in the background every 10 ms
        // (see spawnServer); commits are still flushed
        const settings = yield* query<{ wal_init_zero: string; wal_writer_delay: string; fsync: string; synchronous_commit: string }>(
          cluster,
          `SELECT current_setting('wal_init_zero') AS wal_init_zero, current_setting('wal_writer_delay') AS wal_writer_delay,
            current_setting('fsync') AS fsync, current_setting('synchronous_commit') AS synchronous_commit`
        )
        assert.deepStrictEqual(settings, [{ wal_init_zero: "off", wal_writer_delay: "10ms", fsync: "on", synchronous_commit: "on" }])
        return cluster
      })).pipe(Effect.provide(capture))
      assert.isFalse(yield* acceptsConnections(first.port), "the cluster stops when its scope closes")
      assert.match(logged.at(-1) ?? "", /^Embedded Postgres \(pid \d+\) stopped$/, "and the log says so, last")

      const notes = yield* Effect.scoped(Effect.gen(function*() {
        const cluster = yield* EmbeddedPostgres.start({ dataDir })
        return yield* query<{ note: string }>(cluster, "SELECT note FROM kept")
      }))
      assert.deepStrictEqual(notes.map((row) => row.note), ["survives restarts"])
    }), { timeout: 120_000 })

  it.live("a cluster killed under its owner is started again, with its data, and still stops with the scope", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDataDir
      const { port, restartedPid } = yield* Effect.scoped(Effect.gen(function*() {
        const cluster = yield* EmbeddedPostgres.start({ dataDir })
        yield* query(cluster, "CREATE TABLE kept (note text)")
        yield* query(cluster, "INSERT INTO kept VALUES ('committed before the kill')")
        const pidOf = Effect.promise(() => fs.readFile(path.join(dataDir, "postmaster.pid"), "utf8").then((text) => Number(text.split("\n")[0]), () => 0))
        const killed = yield* pidOf
        process.kill(killed, "SIGKILL")
        // a new postmaster on the same port, the row still there (no one restarted the process)
        const notes = yield* query<{ note: string }>(cluster, "SELECT note FROM kept").pipe(
          Effect.retry({ schedule: Schedule.spaced("250 millis"), times: 160 })
        )
        assert.deepStrictEqual(notes.map((row) => row.note), ["committed before the kill"])
        const restartedPid = yield* pidOf
        assert.notStrictEqual(restartedPid, killed)
        assert.isTrue(isAlive(restartedPid))
        return { port: cluster.port, restartedPid }
      }))
      assert.isFalse(yield* acceptsConnections(port), "the restarted cluster stops when the scope closes")
      assert.isFalse(isAlive(restartedPid))
    }), { timeout: 120_000 })

  it.live("a scope closed while a killed cluster is being started again stops the new postmaster too (none left running)", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDataDir
      const pidOf = Effect.promise(() => fs.readFile(path.join(dataDir, "postmaster.pid"), "utf8").then((text) => Number(text.split("\n")[0]), () => 0))
      const { port, restartedPid } = yield* Effect.scoped(Effect.gen(function*() {
        const cluster = yield* EmbeddedPostgres.start({ dataDir })
        const killed = yield* pidOf
        process.kill(killed, "SIGKILL")
        // the owner closes the moment the new postmaster exists, while it still starts up (crash recovery)
        const restartedPid = yield* pidOf.pipe(
          Effect.repeat({ schedule: Schedule.spaced("5 millis"), until: (pid) => pid !== 0 && pid !== killed && isAlive(pid) }),
          Effect.timeout("60 seconds")
        )
        return { port: cluster.port, restartedPid }
      }))
      assert.isFalse(isAlive(restartedPid), "the postmaster started again is stopped with the scope")
      assert.isFalse(yield* acceptsConnections(port))
    }), { timeout: 120_000 })

  it.live("a second user of a running cluster shares it and leaves it running", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDataDir
      const owner = yield* EmbeddedPostgres.start({ dataDir })
      const guest = yield* Effect.scoped(EmbeddedPostgres.start({ dataDir }))
      assert.isFalse(guest.owned)
      assert.strictEqual(guest.port, owner.port)
      assert.isTrue(yield* acceptsConnections(owner.port), "the guest's exit does not stop the owner's cluster")
    }), { timeout: 120_000 })

  it.live("two first starts at the same moment on an empty folder: one creates and starts the cluster, the other shares it", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDataDir
      const [first, second] = yield* twoAtOnce(dataDir, dataDir)
      yield* query(first, "CREATE TABLE one_cluster (note text)")
      assert.deepStrictEqual(yield* query(second, "SELECT count(*)::int AS n FROM one_cluster"), [{ n: 0 }])
    }).pipe(Effect.scoped), { timeout: 120_000 })

  it.live("two starts of a stopped cluster at the same moment: one starts it, the other shares it", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDataDir
      yield* Effect.scoped(EmbeddedPostgres.start({ dataDir }))
      yield* twoAtOnce(dataDir, dataDir)
    }).pipe(Effect.scoped), { timeout: 120_000 })

  it.live("a first start interrupted mid-way (its marker beside a half-made folder) is made again at the next start", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDataDir
      // what a Ctrl-C or kill -9 during initdb leaves: some of the cluster's files, the lock file of
      // initdb's bootstrap backend, no credentials, the marker
      yield* Effect.promise(async () => {
        await fs.mkdir(path.join(dataDir, "base"), { recursive: true })
        await fs.writeFile(path.join(dataDir, "PG_VERSION"), "18\n")
        await fs.writeFile(path.join(dataDir, "postmaster.pid"), `2147483646\n${dataDir}\n`)
        await fs.writeFile(`${dataDir}.initialising`, "2147483646\n")
      })
      const cluster = yield* EmbeddedPostgres.start({ dataDir })
      assert.deepStrictEqual(yield* query(cluster, "SELECT 1 AS one"), [{ one: 1 }])
      const marker = yield* Effect.promise(() => fs.access(`${dataDir}.initialising`).then(() => true, () => false))
      assert.isFalse(marker, "the marker goes once the cluster is made")
    }).pipe(Effect.scoped), { timeout: 120_000 })

  it.live("that marker beside a finished cluster (its credentials written) is dropped, never the data; beside a running server or someone's files it deletes nothing", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDataDir
      const marker = `${dataDir}.initialising`
      yield* Effect.scoped(Effect.gen(function*() {
        const cluster = yield* EmbeddedPostgres.start({ dataDir })
        yield* query(cluster, "CREATE TABLE precious (note text)")
        yield* query(cluster, "INSERT INTO precious VALUES ('kept')")
      }))
      // a first start that died between writing its credentials and removing the marker
      yield* Effect.promise(() => fs.writeFile(marker, "2147483646\n"))
      const notes = yield* Effect.scoped(Effect.gen(function*() {
        const cluster = yield* EmbeddedPostgres.start({ dataDir })
        return yield* query<{ note: string }>(cluster, "SELECT note FROM precious")
      }))
      assert.deepStrictEqual(notes.map((row) => row.note), ["kept"])
      assert.isFalse(yield* Effect.promise(() => fs.access(marker).then(() => true, () => false)), "the stale marker is gone")

      // without credentials but with a server running on it, or with files initdb does not make: refused
      const running = yield* EmbeddedPostgres.start({ dataDir })
      yield* Effect.promise(async () => {
        await fs.rename(path.join(dataDir, "svc-credentials.json"), `${dataDir}.credentials`)
        await fs.writeFile(marker, "2147483646\n")
      })
      const refused = yield* Effect.flip(Effect.scoped(EmbeddedPostgres.start({ dataDir })))
      assert.include(refused.message, "a running server")
      assert.include(refused.message, "nothing is deleted")
      assert.deepStrictEqual(yield* query(running, "SELECT count(*)::int AS n FROM precious"), [{ n: 1 }])
      const other = path.join(path.dirname(dataDir), "other")
      yield* Effect.promise(async () => {
        await fs.mkdir(other)
        await fs.writeFile(path.join(other, "notes.txt"), "someone's files")
        await fs.writeFile(`${other}.initialising`, "2147483646\n")
      })
      const untouched = yield* Effect.flip(Effect.scoped(EmbeddedPostgres.start({ dataDir: other })))
      assert.include(untouched.message, "files initdb does not make")
      assert.deepStrictEqual(yield* Effect.promise(() => fs.readdir(other)), ["notes.txt"])
    }).pipe(Effect.scoped), { timeout: 120_000 })

  it.live("two first starts through two names of one folder (a symlink) take the same lock: one cluster", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDataDir
      const alias = path.join(path.dirname(dataDir), "alias")
      yield* Effect.promise(async () => {
        await fs.mkdir(dataDir)
        await fs.symlink(dataDir, alias)
      })
      yield* twoAtOnce(dataDir, alias)
    }).pipe(Effect.scoped), { timeout: 120_000 })

  it.live("a folder holding files but no cluster, without that marker, is refused and left as it is", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDataDir
      yield* Effect.promise(async () => {
        await fs.mkdir(dataDir, { recursive: true })
        await fs.writeFile(path.join(dataDir, "notes.txt"), "someone's files")
      })
      const error = yield* Effect.flip(Effect.scoped(EmbeddedPostgres.start({ dataDir })))
      assert.include(error.message, "not empty but holds no cluster")
      assert.deepStrictEqual(yield* Effect.promise(() => fs.readdir(dataDir)), ["notes.txt"])
    }), { timeout: 120_000 })

  it.live("without a working flock (busybox's) a start goes on without the lock, as before it", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDataDir
      yield* withFakeFlock
      const cluster = yield* EmbeddedPostgres.start({ dataDir })
      assert.deepStrictEqual(yield* query(cluster, "SELECT 1 AS one"), [{ one: 1 }])
    }).pipe(Effect.scoped), { timeout: 120_000 })

  it.live("a stopping owner lets another process's open session finish its work before the cluster goes", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDataDir
      const ownerScope = yield* Scope.make()
      const owner = yield* EmbeddedPostgres.start({ dataDir }).pipe(Scope.provide(ownerScope))
      yield* query(owner, "CREATE TABLE guest_work (step int)")
      const guest = yield* Scope.make()
      const sql = yield* Layer.buildWithScope(PgClient.layer({ url: owner.url("postgres"), maxConnections: 1 }), guest).pipe(
        Effect.map((context) => Context.get(context, SqlClient.SqlClient))
      )
      yield* sql`INSERT INTO guest_work VALUES (1)`
      // the owner stops (Ctrl-C) while the guest is still connected
      const stopping = yield* Scope.close(ownerScope, Exit.void).pipe(Effect.timed, Effect.forkChild)
      yield* Effect.sleep("1 second")
      yield* sql`INSERT INTO guest_work VALUES (2)`
      assert.deepStrictEqual(yield* sql`SELECT step FROM guest_work ORDER BY step`, [{ step: 1 }, { step: 2 }])
      yield* Scope.close(guest, Exit.void)
      const [took] = yield* Fiber.join(stopping)
      assert.isBelow(Duration.toMillis(took), 9_000, "the owner stops once the guest is gone, before its grace ends")
      assert.isFalse(yield* acceptsConnections(owner.port))
    }), { timeout: 120_000 })

  it.live("a cluster orphaned by a crashed process is adopted and stopped by the next owner", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDataDir
      const orphan = yield* EmbeddedPostgres.start({ dataDir })
      // Pretend the starter died: the owner file names a pid that no longer exists.
      yield* Effect.promise(() => fs.writeFile(path.join(dataDir, "svc-owner.pid"), "2147483646"))
      const adopted = yield* Effect.scoped(Effect.gen(function*() {
        const cluster = yield* EmbeddedPostgres.start({ dataDir })
        assert.strictEqual((yield* query<{ one: number }>(cluster, "SELECT 1 AS one"))[0]?.one, 1)
        return cluster
      }))
      assert.isTrue(adopted.owned)
      assert.strictEqual(adopted.port, orphan.port)
      assert.isFalse(yield* acceptsConnections(orphan.port))
    }), { timeout: 120_000 })

  it.live("a killed owner (kill -9) leaves no cluster running, and the next start finds its data", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDataDir
      const { holder, port } = yield* holdPostgres(dataDir)
      holder.kill("SIGKILL")
      const stopped = yield* acceptsConnections(port).pipe(
        Effect.repeat({ schedule: Schedule.spaced("200 millis"), until: (open) => !open }),
        Effect.timeout("20 seconds"),
        Effect.as(true),
        Effect.catch(() => Effect.succeed(false))
      )
      assert.isTrue(stopped, "the watchdog stops the orphaned cluster")
      const notes = yield* Effect.scoped(Effect.gen(function*() {
        const cluster = yield* EmbeddedPostgres.start({ dataDir })
        return yield* query<{ note: string }>(cluster, "SELECT note FROM crash_log")
      }))
      assert.deepStrictEqual(notes.map((row) => row.note), ["committed before the crash"])
    }), { timeout: 120_000 })

  it.live("a process killed (kill -9) while its cluster is still starting up leaves no postmaster: it is watched from its spawn", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDataDir
      const holder = spawn(process.execPath, [new URL("./fixtures/hold-postgres.ts", import.meta.url).pathname, dataDir], { stdio: "ignore" })
      yield* Effect.addFinalizer(() => Effect.sync(() => holder.exitCode === null && holder.kill("SIGKILL")))
      // the postmaster writes its lock file first thing; killed then, the start has not answered yet
      // (on a busy machine the kill may land later: the test then checks the older path, never fails wrongly)
      const postmasterFile = path.join(dataDir, "postmaster.pid")
      const postmaster = yield* Effect.tryPromise(() => fs.readFile(postmasterFile, "utf8")).pipe(
        Effect.map((text) => Number(text.split("\n")[0])),
        Effect.filterOrFail((pid) => pid > 0),
        Effect.retry(Schedule.spaced("5 millis")),
        Effect.timeout("60 seconds")
      )
      holder.kill("SIGKILL")
      const gone = yield* Effect.sync(() => isAlive(postmaster)).pipe(
        Effect.repeat({ schedule: Schedule.spaced("200 millis"), until: (alive) => !alive }),
        Effect.timeout("20 seconds"),
        Effect.as(true),
        Effect.catch(() => Effect.succeed(false))
      )
      assert.isTrue(gone, "the postmaster outlived its killed owner")
    }).pipe(Effect.scoped), { timeout: 120_000 })

  it.live("a dead owner's postmaster still stopping, its port already closed, is waited for and the cluster started again on its port", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDataDir
      const port = yield* Effect.scoped(EmbeddedPostgres.start({ dataDir }).pipe(Effect.map((cluster) => cluster.port)))
      // what a watchdog's stop looks like from outside for a moment: this folder's postmaster alive,
      // its port refusing connections (it is writing its shutdown checkpoint), its owner dead
      const stopping = spawn("bash", ["-c", 'exec -a postgres sh -c "sleep 2; true" -D "$1"', "bash", dataDir], { stdio: "ignore" })
      yield* Effect.addFinalizer(() => Effect.sync(() => stopping.exitCode === null && stopping.kill("SIGKILL")))
      yield* Effect.promise(() =>
        Promise.all([
          fs.writeFile(path.join(dataDir, "postmaster.pid"), `${stopping.pid}\n${dataDir}\n1795913000\n${port}\n\n127.0.0.1\n  3205432   2621492\nstopping\n`),
          fs.writeFile(path.join(dataDir, "svc-owner.pid"), "2147483646\n")
        ])
      )
      const restarted = yield* EmbeddedPostgres.start({ dataDir })
      assert.isFalse(isAlive(stopping.pid!), "it waited for the stopping postmaster")
      assert.isTrue(restarted.owned)
      assert.strictEqual(restarted.port, port)
      assert.strictEqual((yield* query<{ one: number }>(restarted, "SELECT 1 AS one"))[0]?.one, 1)
    }).pipe(Effect.scoped), { timeout: 120_000 })

  it.live("a postmaster.pid left by a reboot, whose pid another program now has, does not block the start; that program is left alone", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDataDir
      const port = yield* Effect.scoped(Effect.gen(function*() {
        const cluster = yield* EmbeddedPostgres.start({ dataDir })
        yield* query(cluster, "CREATE TABLE kept (note text)")
        yield* query(cluster, "INSERT INTO kept VALUES ('before the reboot')")
        return cluster.port
      }))
      // what a power loss leaves: the lock file of a cluster that is gone, naming a pid now in use
      const stranger = spawn("sleep", ["60"], { stdio: "ignore" })
      yield* Effect.addFinalizer(() => Effect.sync(() => stranger.kill("SIGKILL")))
      yield* Effect.promise(() =>
        fs.writeFile(path.join(dataDir, "postmaster.pid"), `${stranger.pid}\n${dataDir}\n1795913000\n${port}\n\n127.0.0.1\n  3205432   2621492\nready   \n`)
      )
      const notes = yield* Effect.scoped(Effect.gen(function*() {
        const cluster = yield* EmbeddedPostgres.start({ dataDir })
        return yield* query<{ note: string }>(cluster, "SELECT note FROM kept")
      }))
      assert.deepStrictEqual(notes.map((row) => row.note), ["before the reboot"])
      assert.isTrue(isAlive(stranger.pid!), "the program holding the old pid was signalled")
    }).pipe(Effect.scoped), { timeout: 120_000 })

  it.live("a cluster Postgres refuses to start says why in the error (the log's FATAL or PANIC line), not only in the log", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDataDir
      yield* Effect.scoped(EmbeddedPostgres.start({ dataDir }))
      // a WAL folder emptied by hand: the server cannot find its last checkpoint
      const wal = path.join(dataDir, "pg_wal")
      for (const file of yield* Effect.promise(() => fs.readdir(wal))) {
        if (/^[0-9A-F]{24}$/.test(file)) yield* Effect.promise(() => fs.rm(path.join(wal, file)))
      }
      const error = yield* Effect.flip(Effect.scoped(EmbeddedPostgres.start({ dataDir })))
      assert.match(error.message, /^Postgres exited during start-up: could not locate a valid checkpoint record.*; see .*\.log$/)
    }), { timeout: 120_000 })

  it.live("the password is generated per cluster and is not the library default", () =>
    Effect.gen(function*() {
      const cluster = yield* EmbeddedPostgres.start({ dataDir: yield* tempDataDir })
      assert.notStrictEqual(Redacted.value(cluster.password), "password")
      assert.isAtLeast(Redacted.value(cluster.password).length, 20)
      assert.notInclude(String(cluster.url("postgres")), Redacted.value(cluster.password))
    }), { timeout: 120_000 })
})

/** Runs the fixture that starts the cluster in `dataDir` and holds it; resolves with its port. */
const holdPostgres = (dataDir: string, env: Record<string, string> = {}) =>
  Effect.acquireRelease(
    Effect.sync(() =>
      spawn(process.execPath, [new URL("./fixtures/hold-postgres.ts", import.meta.url).pathname, dataDir], {
        stdio: ["ignore", "pipe", "inherit"],
        env: { ...process.env, ...env }
      })
    ),
    (holder) => Effect.sync(() => holder.exitCode === null && holder.kill("SIGKILL"))
  ).pipe(Effect.flatMap((holder) =>
    Effect.map(
      Effect.promise(() =>
        new Promise<number>((resolve, reject) => {
          let out = ""
          holder.stdout.on("data", (chunk) => {
            out += chunk
            const match = /port=(\d+)/.exec(out)
            if (match) resolve(Number(match[1]))
          })
          holder.once("exit", (code) => reject(new Error(`holder exited early (${code})`)))
        })
      ),
      (port) => ({ holder, port })
    )
  ))

/**
 * A fake Postgres in front of a real one: it refuses the first `refusals` sessions with 57P03
 * ("the database system is starting up"), as a postmaster does before its startup process is done,
 * then passes connections through.
 */
const startingUpProxy = (target: number, refusals: number) =>
  Effect.acquireRelease(
    Effect.callback<{ server: net.Server; port: number; connections: () => number }>((resume) => {
      let connections = 0
      const server = net.createServer((socket) => {
        connections++
        if (connections <= refusals) {
          socket.once("data", () => {
            const fields = Buffer.from("SFATAL\0VFATAL\0C57P03\0Mthe database system is starting up\0\0")
            const head = Buffer.alloc(5)
            head.write("E", 0)
            head.writeInt32BE(fields.length + 4, 1)
            socket.end(Buffer.concat([head, fields]))
          })
          return
        }
        const upstream = net.connect(target, "127.0.0.1")
        socket.pipe(upstream).pipe(socket)
        socket.on("error", () => upstream.destroy())
        upstream.on("error", () => socket.destroy())
      })
      server.listen(0, "127.0.0.1", () =>
        resume(Effect.succeed({ server, port: (server.address() as net.AddressInfo).port, connections: () => connections })))
    }),
    ({ server }) => Effect.callback<void>((resume) => {
      server.close(() => resume(Effect.void))
    })
  )

describe("EmbeddedPostgres readiness and port", () => {
  it.live("ready means a query answers: start-up refusals (57P03) are retried, other failures are not", () =>
    Effect.gen(function*() {
      const cluster = yield* EmbeddedPostgres.start({ dataDir: yield* tempDataDir, ephemeral: true })
      const proxy = yield* startingUpProxy(cluster.port, 5)
      const url = (port: number) =>
        Redacted.make(Redacted.value(cluster.url("postgres")).replace(`:${cluster.port}/`, `:${port}/`))
      // A TCP connect succeeds at once; a query only on the fourth session.
      assert.isTrue(yield* acceptsConnections(proxy.port))
      const refused = yield* Effect.flip(PostgresReady.ping(url(proxy.port)))
      assert.isTrue(PostgresReady.isStartingUp(refused))
      assert.strictEqual(PostgresReady.postgresReason(refused), "the database system is starting up")
      const before = proxy.connections()
      yield* PostgresReady.awaitReady(url(proxy.port))
      assert.strictEqual(proxy.connections() - before, 4, "three refusals retried, then one answer")
      // A wrong password is final at once, not retried for a minute.
      const wrong = Redacted.make(Redacted.value(url(cluster.port)).replace(/:[^:@]*@/, ":wrong@"))
      const startedAt = Date.now()
      const error = yield* Effect.flip(PostgresReady.awaitReady(wrong))
      assert.isFalse(PostgresReady.isStartingUp(error))
      assert.isBelow(Date.now() - startedAt, 5_000)
    }), { timeout: 120_000 })

  it.live("10 fresh clusters in a row are each migrated the moment start returns", () =>
    Effect.gen(function*() {
      // Each one freshly initialised: the first start after initdb is where a TCP-connect readiness
      // check lost the race with "the database system is starting up" (copies of one initdb'd folder
      // did not show it).
      for (let round = 0; round < 10; round++) {
        yield* Effect.scoped(Effect.gen(function*() {
          const cluster = yield* EmbeddedPostgres.start({ dataDir: yield* tempDataDir, ephemeral: true })
          const applied = yield* Migrations.migrateAll().pipe(
            Effect.provide(PgClient.layer({ url: cluster.url("postgres"), maxConnections: 1 }))
          )
          assert.isAbove(applied.flat().length, 0, `round ${round}`)
        }))
      }
    }), { timeout: 240_000 })

  it.live("after a crash, ready waits for WAL recovery (57P03 meanwhile): the first query after start answers", () =>
    Effect.gen(function*() {
      // Deterministic where fresh clusters are a race: replaying ~150 MB of WAL takes far longer than
      // the postmaster needs to open its port, and until then every session gets 57P03.
      // Not ephemeral: its commits must survive the kill (synchronous_commit).
      const dataDir = yield* tempDataDir
      const cluster = yield* EmbeddedPostgres.start({ dataDir })
      yield* query(cluster, "CREATE TABLE big AS SELECT g, repeat('x', 200) AS filler FROM generate_series(1, 600000) g")
      const pid = Number((yield* Effect.promise(() => fs.readFile(path.join(dataDir, "postmaster.pid"), "utf8"))).split("\n")[0])
      process.kill(pid, "SIGKILL")
      yield* Effect.sync(() => pid).pipe(
        Effect.repeat({ schedule: Schedule.spaced("50 millis"), until: (pid) => !isAlive(pid) }),
        Effect.timeout("10 seconds")
      )
      const rows = yield* Effect.scoped(Effect.gen(function*() {
        const restarted = yield* EmbeddedPostgres.start({ dataDir })
        assert.strictEqual(restarted.port, cluster.port)
        return yield* query<{ n: number }>(restarted, "SELECT count(*)::int AS n FROM big")
      }))
      assert.deepStrictEqual(rows, [{ n: 600000 }])
    }), { timeout: 120_000 })

  it.live("the port is remembered in the data folder: kill -9 and a restart keep it, and a client of the URL goes on", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDataDir
      const first = yield* holdPostgres(dataDir)
      const credentials = JSON.parse(yield* Effect.promise(() => fs.readFile(path.join(dataDir, "svc-credentials.json"), "utf8")))
      assert.strictEqual(credentials.port, first.port, "the port is recorded next to the password")
      // A second process joins with the URL built from the data folder (what the README tells).
      const url = Redacted.make(`postgres://${credentials.user}:${encodeURIComponent(credentials.password)}@127.0.0.1:${credentials.port}/postgres`)
      const client = yield* Layer.build(PgClient.layer({ url, maxConnections: 2 }))
      const note = Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        return (yield* sql<{ note: string }>`SELECT note FROM crash_log LIMIT 1`)[0]?.note
      }).pipe(Effect.provide(client))
      assert.strictEqual(yield* note, "committed before the crash")

      first.holder.kill("SIGKILL")
      // Restarted at once (before the watchdog's next look, too) and once more after it stopped the orphan.
      const second = yield* holdPostgres(dataDir)
      assert.strictEqual(second.port, first.port, "a restart right after the crash keeps the port")
      assert.strictEqual(
        yield* note.pipe(Effect.retry({ schedule: Schedule.spaced("200 millis"), times: 50 })),
        "committed before the crash",
        "the second process' pool works again on the same URL"
      )
      // The dead owner's watchdog must not stop the cluster the restart adopted.
      yield* Effect.sleep("2500 millis")
      assert.isTrue(yield* acceptsConnections(second.port), "still running after the old watchdog's time")
      second.holder.kill("SIGKILL")
      yield* acceptsConnections(second.port).pipe(
        Effect.repeat({ schedule: Schedule.spaced("200 millis"), until: (open) => !open }),
        Effect.timeout("20 seconds")
      )
      const third = yield* holdPostgres(dataDir)
      assert.strictEqual(third.port, first.port, "a start after the watchdog stopped the orphan keeps the port")
      assert.strictEqual(yield* note.pipe(Effect.retry({ schedule: Schedule.spaced("200 millis"), times: 50 })), "committed before the crash")
    }), { timeout: 120_000 })

  it.live("a restart within the watchdog's second adopts the orphan, and the dead owner's watchdog leaves it running", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDataDir
      const first = yield* holdPostgres(dataDir)
      first.holder.kill("SIGKILL")
      yield* Effect.promise(() => new Promise((resolve) => first.holder.once("exit", resolve)))
      // In this process (no node start-up to wait for): before the watchdog's next look, mostly.
      const adopted = yield* EmbeddedPostgres.start({ dataDir })
      assert.strictEqual(adopted.port, first.port)
      yield* Effect.sleep("2500 millis")
      const [row] = yield* query<{ note: string }>(adopted, "SELECT note FROM crash_log")
      assert.strictEqual(row?.note, "committed before the crash", "the cluster still answers after the old watchdog's time")
    }), { timeout: 120_000 })

  it.live("an owner killed -9 but not yet collected by its parent (a zombie) is dead: the next start adopts its cluster, which outlives the zombie", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDataDir
      // the holder's parent is `sleep`, which never collects a child: killed, the holder stays a zombie
      const parent = spawn(
        "sh",
        ["-c", '"$0" "$1" "$2" & echo "holder=$!"; exec sleep 120', process.execPath, new URL("./fixtures/hold-postgres.ts", import.meta.url).pathname, dataDir],
        { stdio: ["ignore", "pipe", "inherit"] }
      )
      yield* Effect.addFinalizer(() => Effect.sync(() => parent.exitCode === null && parent.kill("SIGKILL")))
      const { holder, port } = yield* Effect.promise(() =>
        new Promise<{ holder: number; port: number }>((resolve, reject) => {
          let out = ""
          parent.stdout!.on("data", (chunk) => {
            out += chunk
            const holder = /holder=(\d+)/.exec(out)?.[1]
            const port = /port=(\d+)/.exec(out)?.[1]
            if (holder !== undefined && port !== undefined) resolve({ holder: Number(holder), port: Number(port) })
          })
          parent.once("exit", (code) => reject(new Error(`the holder's parent exited early (${code})`)))
        })
      )
      process.kill(holder, "SIGKILL")
      const state = () => fs.readFile(`/proc/${holder}/stat`, "utf8").then((stat) => stat.charAt(stat.lastIndexOf(")") + 2), () => "gone")
      yield* Effect.promise(state).pipe(Effect.repeat({ schedule: Schedule.spaced("20 millis"), until: (s) => s === "Z" }), Effect.timeout("10 seconds"))

      const adopted = yield* EmbeddedPostgres.start({ dataDir })
      assert.isTrue(adopted.owned, "a zombie owner's cluster is adopted, not shared")
      assert.strictEqual(adopted.port, port)
      // the zombie collected (its parent gone), past the dead owner's watchdog's next look
      parent.kill("SIGKILL")
      yield* Effect.promise(state).pipe(Effect.repeat({ schedule: Schedule.spaced("50 millis"), until: (s) => s === "gone" }), Effect.timeout("10 seconds"))
      yield* Effect.sleep("2500 millis")
      const [row] = yield* query<{ note: string }>(adopted, "SELECT note FROM crash_log")
      assert.strictEqual(row?.note, "committed before the crash", "the cluster still answers")
    }).pipe(Effect.scoped), { timeout: 120_000 })

  it.live("EMBEDDED_POSTGRES_PORT wins over the remembered port; a remembered port taken by another program is given up", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDataDir
      const asked = yield* freePort()
      const first = yield* Effect.scoped(EmbeddedPostgres.start({ dataDir, port: asked, ephemeral: true }))
      assert.strictEqual(first.port, asked)
      const again = yield* Effect.scoped(EmbeddedPostgres.start({ dataDir, ephemeral: true }))
      assert.strictEqual(again.port, asked, "the asked port is remembered")
      // Something else takes it.
      const squatter = yield* Effect.acquireRelease(
        Effect.callback<net.Server>((resume) => {
          const server = net.createServer()
          server.listen(asked, "127.0.0.1", () => resume(Effect.succeed(server)))
        }),
        (server) => Effect.callback<void>((resume) => {
          server.close(() => resume(Effect.void))
        })
      )
      const moved = yield* Effect.scoped(EmbeddedPostgres.start({ dataDir, ephemeral: true }))
      assert.notStrictEqual(moved.port, asked)
      const error = yield* Effect.flip(Effect.scoped(EmbeddedPostgres.start({ dataDir, port: asked, ephemeral: true })))
      assert.include(error.message, `127.0.0.1:${asked} (address in use)`)
      assert.include(error.message, "EMBEDDED_POSTGRES_PORT")
      assert.isDefined(squatter)
    }), { timeout: 120_000 })
})

describe("Database", () => {
  it.live("a DATABASE_URL server still starting up (57P03) is waited for before the pool is handed out", () =>
    Effect.gen(function*() {
      const target = new URL(inject("svcPostgres").url)
      const proxy = yield* startingUpProxy(Number(target.port), 5)
      target.port = String(proxy.port)
      const [row] = yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        // the first statement on the pool: no retry of its own
        return yield* sql<{ one: number }>`SELECT 1 AS one`
      }).pipe(
        Effect.provide(Database.layer.pipe(
          Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnv({ env: { DATABASE_URL: target.toString() } })))
        ))
      )
      assert.strictEqual(row?.one, 1)
      assert.isAtLeast(proxy.connections(), 6, "five refusals, then the answers")
    }), { timeout: 60_000 })

  it.live("with DATABASE_URL it connects there and starts no embedded cluster", () =>
    Effect.gen(function*() {
      const database = yield* Database
      const sql = yield* SqlClient.SqlClient
      const [row] = yield* sql<{ db: string }>`SELECT current_database() AS db`
      assert.strictEqual(row?.db, new URL(inject("svcPostgres").url).pathname.slice(1))
      assert.isTrue(Option.isNone(database.embedded))
    }).pipe(
      Effect.provide(Database.layer.pipe(
        Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnv({ env: { DATABASE_URL: inject("svcPostgres").url } })))
      ))
    ))
})
