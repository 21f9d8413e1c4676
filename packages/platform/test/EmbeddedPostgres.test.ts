import { assert, describe, it } from "@effect/vitest"
import { PgClient } from "@effect/sql-pg"
import { ConfigProvider, Effect, Layer, Option, Redacted, Schedule } from "effect"
import { SqlClient } from "effect/sql"
import * as fs from "node:fs/promises"
import { spawn } from "node:child_process"
import * as path from "node:path"
import { inject } from "vitest"
import { Database } from "../src/Database.ts"
import * as EmbeddedPostgres from "../src/EmbeddedPostgres.ts"
import { acceptsConnections } from "../src/Net.ts"
import { tempDir } from "../src/testing/tempDir.ts"

const tempDataDir = tempDir("svc-embedded-").pipe(Effect.map((dir) => path.join(dir, "data")))

const query = <A extends object>(cluster: EmbeddedPostgres.RunningPostgres, text: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return yield* sql.unsafe<A>(text)
  }).pipe(Effect.provide(PgClient.layer({ url: cluster.url("postgres"), maxConnections: 1 })))

// it.live: the cluster's start-up polling and shutdown wait run on the real clock.
describe("EmbeddedPostgres", () => {
  it.live("starts, stops with its scope, and finds its data again on restart", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDataDir
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
      }))
      assert.isFalse(yield* acceptsConnections(first.port), "the cluster stops when its scope closes")

      const notes = yield* Effect.scoped(Effect.gen(function*() {
        const cluster = yield* EmbeddedPostgres.start({ dataDir })
        return yield* query<{ note: string }>(cluster, "SELECT note FROM kept")
      }))
      assert.deepStrictEqual(notes.map((row) => row.note), ["survives restarts"])
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
      const holder = spawn(process.execPath, [new URL("./fixtures/hold-postgres.ts", import.meta.url).pathname, dataDir], {
        stdio: ["ignore", "pipe", "inherit"]
      })
      const port = yield* Effect.promise(() =>
        new Promise<number>((resolve, reject) => {
          let out = ""
          holder.stdout.on("data", (chunk) => {
            out += chunk
            const match = /port=(\d+)/.exec(out)
            if (match) resolve(Number(match[1]))
          })
          holder.once("exit", (code) => reject(new Error(`holder exited early (${code})`)))
        })
      )
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

  it.live("the password is generated per cluster and is not the library default", () =>
    Effect.gen(function*() {
      const cluster = yield* EmbeddedPostgres.start({ dataDir: yield* tempDataDir })
      assert.notStrictEqual(Redacted.value(cluster.password), "password")
      assert.isAtLeast(Redacted.value(cluster.password).length, 20)
      assert.notInclude(String(cluster.url("postgres")), Redacted.value(cluster.password))
    }), { timeout: 120_000 })
})

describe("Database", () => {
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
