/**
 * The signing keys (`queue.signing_keys`, one row): the current key signs every delivery, the next
 * one is what a rotation makes current. Created on first read.
 */
import { atDatabaseBoundary } from "@svc/platform"
import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, Schema } from "effect"
import { SqlSchema } from "effect/sql"
import { newSigningKey } from "../Signature.ts"
import { MemoryTables } from "./MemoryTables.ts"
import { KeysRow } from "./Rows.ts"

export interface Keys {
  readonly current: string
  readonly next: string
}

export class SigningKeys extends Context.Service<SigningKeys, {
  /** The current and next keys, created when there are none yet. */
  readonly get: Effect.Effect<Keys>
  /** The next key becomes current; a new next. */
  readonly rotate: Effect.Effect<Keys>
}>()("@svc/queue/store/SigningKeys") {
  static readonly layer = Layer.effect(
    SigningKeys,
    Effect.gen(function*() {
      const sql = yield* PgClient.PgClient
      const toKeys = (row: typeof KeysRow.Type): Keys => ({ current: row.current_key, next: row.next_key })

      const read = SqlSchema.findAll({
        Request: Schema.Void,
        Result: KeysRow,
        execute: () => sql`SELECT current_key, next_key FROM queue.signing_keys WHERE id = 1`
      })
      const rotated = SqlSchema.findAll({
        Request: Schema.String,
        Result: KeysRow,
        execute: (next) =>
          sql`
            UPDATE queue.signing_keys SET current_key = next_key, next_key = ${next}, rotated_at = now()
            WHERE id = 1 RETURNING current_key, next_key`
      })

      const get = Effect.gen(function*() {
        const [row] = yield* read(undefined)
        if (row !== undefined) return toKeys(row)
        yield* sql`
          INSERT INTO queue.signing_keys (id, current_key, next_key) VALUES (1, ${newSigningKey()}, ${newSigningKey()})
          ON CONFLICT (id) DO NOTHING`
        const [created] = yield* read(undefined)
        if (created === undefined) return yield* Effect.die(new Error("queue.signing_keys holds no row after its insert"))
        return toKeys(created)
      })

      const rotate = Effect.gen(function*() {
        yield* get
        const [row] = yield* rotated(newSigningKey())
        if (row === undefined) return yield* Effect.die(new Error("queue.signing_keys holds no row to rotate"))
        return toKeys(row)
      })

      return SigningKeys.of({ get: atDatabaseBoundary(get), rotate: atDatabaseBoundary(rotate) })
    })
  )

  /** In memory (tests only). */
  static readonly layerMemory = Layer.effect(
    SigningKeys,
    Effect.gen(function*() {
      const tables = yield* MemoryTables
      const get = Effect.sync(() => tables.keys ??= { current: newSigningKey(), next: newSigningKey() })
      return SigningKeys.of({
        get,
        rotate: Effect.flatMap(get, (keys) => Effect.sync(() => tables.keys = { current: keys.next, next: newSigningKey() }))
      })
    })
  )
}
