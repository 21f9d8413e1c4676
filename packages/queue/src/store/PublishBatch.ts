/**
 * `Messages.publishBatch` on Postgres: the publishes of one `POST /v2/batch`, each with its own
 * deduplication id, in one transaction — every message of the batch in one INSERT
 * (`Enqueue.insert`), the deduplication ids claimed and answered in one statement each.
 *
 * A deduplication id seen within the window (or earlier in the same batch) enqueues nothing and
 * answers the first publish's messages with `deduplicated: true`, as a single publish does.
 */
import { PgClient } from "@effect/sql-pg"
import type { PublishedMessage } from "@svc/schema"
import { Effect, Schema } from "effect"
import { SqlSchema } from "effect/sql"
import type { Enqueue } from "./Enqueue.ts"
import type { BatchPublish } from "./Model.ts"
import { toPublished } from "./Model.ts"

const Remembered = Schema.Struct({
  id: Schema.String,
  result: Schema.Array(Schema.Struct({
    messageId: Schema.String,
    url: Schema.optionalKey(Schema.String),
    endpointName: Schema.optionalKey(Schema.String)
  }))
})

const deduplicated = (result: ReadonlyArray<PublishedMessage>): Array<PublishedMessage> =>
  result.map(({ deduplicated: _, ...entry }) => ({ ...entry, deduplicated: true }))

export const makePublishBatch = (options: {
  readonly sql: PgClient.PgClient
  readonly enqueue: Enqueue["Service"]
  readonly dedupWindowMs: number
}) => {
  const { dedupWindowMs, enqueue, sql } = options

  /** Inserts `publishes` (one INSERT) and splits the ids back per publish. */
  const insertAll = (publishes: ReadonlyArray<BatchPublish>) =>
    Effect.map(enqueue.insert(publishes.flatMap((publish) => publish.messages)), ({ due, ids }) => {
      let offset = 0
      const results = publishes.map((publish) => {
        const result = toPublished(publish.messages, ids.slice(offset, offset + publish.messages.length))
        offset += publish.messages.length
        return result
      })
      return { results, due }
    })

  const remembered = SqlSchema.findAll({
    Request: Schema.Array(Schema.String),
    Result: Remembered,
    execute: (ids) => sql`SELECT id, result FROM queue.dedup WHERE id = ANY(${ids}::text[])`
  })

  const withDedup = (publishes: ReadonlyArray<BatchPublish>) =>
    sql.withTransaction(Effect.gen(function*() {
      // Claimed in one sorted order, so two batches sharing ids never wait on each other in a cycle.
      const dedupIds = [...new Set(publishes.flatMap((publish) => publish.dedupId === undefined ? [] : [publish.dedupId]))].sort()
      const fresh = new Set((yield* sql<{ id: string }>`
        INSERT INTO queue.dedup (id, result, expires_at)
        SELECT d.id, '[]'::jsonb, now() + ${dedupWindowMs}::float8 * interval '1 millisecond'
        FROM unnest(${dedupIds}::text[]) AS d(id)
        ON CONFLICT (id) DO UPDATE SET result = '[]'::jsonb, expires_at = EXCLUDED.expires_at
          WHERE queue.dedup.expires_at < now()
        RETURNING id`).map((row) => row.id))
      const seenIds = dedupIds.filter((id) => !fresh.has(id))
      const seen = new Map(
        seenIds.length === 0 ? [] : (yield* remembered(seenIds)).map((row) => [row.id, row.result] as const)
      )

      // The first publish of each fresh id (and every publish without one) enqueues.
      const firstOf = new Map<string, number>()
      const enqueued: Array<BatchPublish> = []
      const slot: Array<number | undefined> = publishes.map((publish, index) => {
        if (publish.dedupId === undefined) return enqueued.push(publish) - 1
        if (!fresh.has(publish.dedupId) || firstOf.has(publish.dedupId)) return undefined
        firstOf.set(publish.dedupId, index)
        return enqueued.push(publish) - 1
      })
      const { due, results } = yield* insertAll(enqueued)
      const answers = publishes.map((publish, index): ReadonlyArray<PublishedMessage> => {
        const at = slot[index]
        if (at !== undefined) return results[at]!
        const id = publish.dedupId!
        const first = firstOf.get(id)
        return deduplicated(first !== undefined ? results[slot[first]!]! : seen.get(id) ?? [])
      })
      const rememberedNow = [...firstOf].map(([id, index]) => ({ id, result: answers[index]! }))
      if (rememberedNow.length > 0) {
        yield* sql`
          UPDATE queue.dedup d SET result = r.result
          FROM unnest(${rememberedNow.map((entry) => entry.id)}::text[],
            ${rememberedNow.map((entry) => JSON.stringify(entry.result))}::jsonb[]) AS r(id, result)
          WHERE d.id = r.id`
        // Forget long-expired ids.
        yield* sql`DELETE FROM queue.dedup WHERE expires_at < now() - interval '1 hour'`
      }
      return { answers, due }
    }))

  /** Every publish of a batch, in one transaction; the answers in order. Wakes the workers after commit. */
  return (publishes: ReadonlyArray<BatchPublish>) =>
    (publishes.some((publish) => publish.dedupId !== undefined)
      ? withDedup(publishes)
      // One INSERT: atomic by itself, no transaction needed.
      : Effect.map(insertAll(publishes), ({ due, results }) => ({ answers: results, due }))).pipe(
        Effect.tap(({ due }) => due ? enqueue.wake : Effect.void),
        Effect.map(({ answers }) => answers)
      )
}
