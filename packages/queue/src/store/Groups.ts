/**
 * URL groups (`queue.topics`, `queue.topic_endpoints`): a name, default headers and up to a cap of
 * endpoints (a URL, optionally named; in the order they were added). The checks of what a request
 * may store (URLs, names, headers) are `Operations.ts`'s; this store keeps the cap, atomically.
 */
import { atDatabaseBoundary } from "@svc/platform"
import { PgClient } from "@effect/sql-pg"
import type { DefaultHeaders, Endpoint, Topic } from "@svc/schema"
import { TopicNotFound } from "@svc/schema"
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlSchema } from "effect/sql"
import { type KeyPage, keyPageOf, keyPageSql } from "./KeyPage.ts"
import { atNow, type MemoryTopic, MemoryTables } from "./MemoryTables.ts"
import { GroupFull } from "./Model.ts"
import { TopicRow } from "./Rows.ts"

export type EndpointRef = { readonly name?: string | undefined; readonly url?: string | undefined }

const toTopic = (topic: MemoryTopic): Topic => ({
  name: topic.name,
  headers: topic.headers,
  createdAt: topic.createdAt,
  updatedAt: topic.updatedAt,
  endpoints: topic.endpoints.map((endpoint) =>
    endpoint.name === null ? { url: endpoint.url } : { name: endpoint.name, url: endpoint.url }
  )
})

export class Groups extends Context.Service<Groups, {
  /** A page of groups by name (KeyPage.ts). */
  readonly list: (page: KeyPage) => Effect.Effect<ReadonlyArray<Topic>>
  readonly get: (name: string) => Effect.Effect<Option.Option<Topic>>
  /**
   * Adds endpoints (creating the group): a known URL takes the given name, a named endpoint given a
   * new URL moves there. Fails with {@link GroupFull}, nothing stored, past `maxEndpoints`.
   */
  readonly upsertEndpoints: (
    name: string,
    endpoints: ReadonlyArray<Endpoint>,
    maxEndpoints: number
  ) => Effect.Effect<Topic, GroupFull>
  /**
   * Removes the endpoints matching a URL or a name; the group as it is left. A group left without
   * endpoints is deleted (its answer then shows `endpoints: []`; a later get is `TopicNotFound`).
   */
  readonly removeEndpoints: (name: string, endpoints: ReadonlyArray<EndpointRef>) => Effect.Effect<Topic, TopicNotFound>
  readonly setHeaders: (name: string, headers: DefaultHeaders) => Effect.Effect<Topic, TopicNotFound>
  readonly delete: (name: string) => Effect.Effect<void, TopicNotFound>
}>()("@svc/queue/store/Groups") {
  static readonly layer = Layer.effect(
    Groups,
    Effect.gen(function*() {
      const sql = yield* PgClient.PgClient

      // One group by name, or a page by name (KeyPage.ts), cut before the endpoints are gathered.
      const select = SqlSchema.findAll({
        Request: Schema.Struct({ name: Schema.NullOr(Schema.String), after: Schema.UndefinedOr(Schema.String), limit: Schema.Number }),
        Result: TopicRow,
        execute: ({ name, ...page }) =>
          sql`
            SELECT t.name, t.headers, t.created_at, t.updated_at,
              coalesce((SELECT jsonb_agg(jsonb_build_object('name', e.name, 'url', e.url) ORDER BY e.position)
                        FROM queue.topic_endpoints e WHERE e.topic_name = t.name), '[]'::jsonb) AS endpoints
            FROM (
              SELECT * FROM queue.topics t
              WHERE (${name}::text IS NULL OR t.name = ${name}::text) AND ${keyPageSql(sql, "t.name", page)}
            ) t
            ORDER BY t.name COLLATE "C"`
      })
      const topics = (query: { readonly name: string | null } & KeyPage) =>
        Effect.map(select(query), (rows) =>
          rows.map((row) =>
            toTopic({
              name: row.name,
              headers: row.headers,
              createdAt: row.created_at.getTime(),
              updatedAt: row.updated_at.getTime(),
              endpoints: row.endpoints
            })
          ))

      const get = (name: string) => Effect.map(topics({ name, after: undefined, limit: 1 }), (found) => Option.fromUndefinedOr(found[0]))
      const mustGet = (name: string) =>
        Effect.flatMap(get(name), Option.match({
          onNone: () => Effect.fail(new TopicNotFound({ name })),
          onSome: Effect.succeed
        }))

      const count = SqlSchema.findAll({
        Request: Schema.String,
        Result: Schema.Struct({ n: Schema.Number }),
        execute: (name) => sql`SELECT count(*)::int4 AS n FROM queue.topic_endpoints WHERE topic_name = ${name}`
      })

      const upsertEndpoints = (name: string, endpoints: ReadonlyArray<Endpoint>, maxEndpoints: number) =>
        sql.withTransaction(Effect.gen(function*() {
          // The topic row is locked from here on: concurrent upserts of one group count in turn.
          yield* sql`
            INSERT INTO queue.topics (name) VALUES (${name})
            ON CONFLICT (name) DO UPDATE SET updated_at = now()`
          for (const endpoint of endpoints) {
            const endpointName = endpoint.name ?? null
            if (endpointName !== null) {
              // A named endpoint given a new URL moves there.
              yield* sql`DELETE FROM queue.topic_endpoints
                WHERE topic_name = ${name} AND name = ${endpointName} AND url <> ${endpoint.url}`
            }
            yield* sql`
              INSERT INTO queue.topic_endpoints (topic_name, url, name) VALUES (${name}, ${endpoint.url}, ${endpointName})
              ON CONFLICT (topic_name, url) DO UPDATE SET name = EXCLUDED.name`
          }
          const [held] = yield* count(name)
          const n = held?.n ?? 0
          // Failing rolls the transaction back: nothing of this request stays.
          if (n > maxEndpoints) return yield* new GroupFull({ name, endpoints: n, max: maxEndpoints })
          return yield* Effect.orDie(mustGet(name))
        }))

      const removeEndpoints = (name: string, endpoints: ReadonlyArray<EndpointRef>) =>
        sql.withTransaction(Effect.gen(function*() {
          // The group's row locked first: an upsert adding endpoints meanwhile waits, so the group is
          // never deleted under endpoints it is adding (nor does this miss them).
          const locked = yield* sql`SELECT name FROM queue.topics WHERE name = ${name} FOR UPDATE`
          if (locked.length === 0) return yield* new TopicNotFound({ name })
          for (const endpoint of endpoints) {
            yield* sql`
              DELETE FROM queue.topic_endpoints
              WHERE topic_name = ${name}
                AND ((${endpoint.url ?? null}::text IS NOT NULL AND url = ${endpoint.url ?? null}::text)
                  OR (${endpoint.name ?? null}::text IS NOT NULL AND name = ${endpoint.name ?? null}::text))`
          }
          yield* sql`UPDATE queue.topics SET updated_at = now() WHERE name = ${name}`
          const topic = yield* mustGet(name)
          // A group has one or more endpoints (spec; QStash deletes a group emptied this way too).
          if (topic.endpoints.length === 0) yield* sql`DELETE FROM queue.topics WHERE name = ${name}`
          return topic
        }))

      const setHeaders = (name: string, headers: DefaultHeaders) =>
        Effect.gen(function*() {
          const updated = yield* sql`
            UPDATE queue.topics SET headers = ${sql.json(headers)}::jsonb, updated_at = now()
            WHERE name = ${name} RETURNING name`
          if (updated.length === 0) return yield* new TopicNotFound({ name })
          return yield* mustGet(name)
        })

      const remove = (name: string) =>
        Effect.gen(function*() {
          const deleted = yield* sql`DELETE FROM queue.topics WHERE name = ${name} RETURNING name`
          if (deleted.length === 0) return yield* new TopicNotFound({ name })
        })

      return Groups.of({
        list: (page) => atDatabaseBoundary(topics({ name: null, ...page })),
        get: (name) => atDatabaseBoundary(get(name)),
        upsertEndpoints: (name, endpoints, maxEndpoints) => atDatabaseBoundary(upsertEndpoints(name, endpoints, maxEndpoints)),
        removeEndpoints: (name, endpoints) => atDatabaseBoundary(removeEndpoints(name, endpoints)),
        setHeaders: (name, headers) => atDatabaseBoundary(setHeaders(name, headers)),
        delete: (name) => atDatabaseBoundary(remove(name))
      })
    })
  )

  /** In memory (tests only). */
  static readonly layerMemory = Layer.effect(
    Groups,
    Effect.gen(function*() {
      const tables = yield* MemoryTables
      const found = (name: string) => {
        const topic = tables.topics.get(name)
        return topic === undefined ? Effect.fail(new TopicNotFound({ name })) : Effect.succeed(toTopic(topic))
      }
      return Groups.of({
        list: (page) => Effect.sync(() => keyPageOf(tables.topics.values(), (topic) => topic.name, page).map(toTopic)),
        get: (name) => Effect.sync(() => Option.map(Option.fromUndefinedOr(tables.topics.get(name)), toTopic)),
        upsertEndpoints: (name, endpoints, maxEndpoints) =>
          Effect.flatten(atNow(tables, (now) => {
            const before = tables.topics.get(name)
            let list = [...(before?.endpoints ?? [])]
            for (const endpoint of endpoints) {
              const endpointName = endpoint.name ?? null
              if (endpointName !== null) list = list.filter((e) => !(e.name === endpointName && e.url !== endpoint.url))
              const at = list.findIndex((e) => e.url === endpoint.url)
              if (at >= 0) list[at] = { name: endpointName, url: endpoint.url }
              else list.push({ name: endpointName, url: endpoint.url })
            }
            // Nothing is stored past the cap (the transaction's rollback).
            if (list.length > maxEndpoints) return Effect.fail(new GroupFull({ name, endpoints: list.length, max: maxEndpoints }))
            const topic: MemoryTopic = before === undefined
              ? { name, headers: {}, createdAt: now, updatedAt: now, endpoints: list }
              : { ...before, updatedAt: now, endpoints: list }
            tables.topics.set(name, topic)
            return Effect.succeed(toTopic(topic))
          })),
        removeEndpoints: (name, endpoints) =>
          Effect.flatten(atNow(tables, (now) => {
            const topic = tables.topics.get(name)
            if (topic === undefined) return found(name)
            const gone = (e: MemoryTopic["endpoints"][number]) =>
              endpoints.some((ref) => (ref.url !== undefined && e.url === ref.url) || (ref.name !== undefined && e.name === ref.name))
            const left: MemoryTopic = { ...topic, updatedAt: now, endpoints: topic.endpoints.filter((e) => !gone(e)) }
            if (left.endpoints.length === 0) tables.topics.delete(name)
            else tables.topics.set(name, left)
            return Effect.succeed(toTopic(left))
          })),
        setHeaders: (name, headers) =>
          Effect.flatten(atNow(tables, (now) => {
            const topic = tables.topics.get(name)
            if (topic !== undefined) tables.topics.set(name, { ...topic, headers, updatedAt: now })
            return found(name)
          })),
        delete: (name) =>
          Effect.suspend(() => tables.topics.delete(name) ? Effect.void : Effect.fail(new TopicNotFound({ name })))
      })
    })
  )
}
