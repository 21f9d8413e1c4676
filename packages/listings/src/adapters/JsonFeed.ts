/**
 * A generic JSON feed: a document holding an array of offers (at `itemsPath`, or the document itself,
 * or its `offers` / `items` / `data`), optionally paginated through a next-page URL at `nextPagePath`.
 */
import { Effect, Option, Stream } from "effect"
import { HttpClient } from "effect/http"
import type { SourceConfig } from "../Sources.ts"
import { FeedError, mapRecord, readPath, type SourceAdapter } from "./SourceAdapter.ts"
import { feedGet } from "./http.ts"

const MAX_PAGES = 10_000

const itemsOf = (document: unknown, itemsPath: string | undefined): Array<unknown> | undefined => {
  if (itemsPath !== undefined) {
    const items = readPath(document, itemsPath)
    return Array.isArray(items) ? items : undefined
  }
  if (Array.isArray(document)) return document
  for (const key of ["offers", "items", "data", "results"]) {
    const items = readPath(document, key)
    if (Array.isArray(items)) return items
  }
  return undefined
}

export const make = (config: SourceConfig): Effect.Effect<SourceAdapter, never, HttpClient.HttpClient> =>
  Effect.gen(function*() {
    const client = yield* HttpClient.HttpClient
    const mapping = { fields: config.fields, defaults: config.defaults }
    const firstUrl = config.url ?? ""
    const read = Stream.paginate(
      { url: firstUrl, page: 1, seen: new Set<string>() },
      (state) =>
        Effect.gen(function*() {
          const response = yield* feedGet(client, state.url, config)
          const document = yield* response.json.pipe(
            Effect.mapError(() => new FeedError({ kind: "malformed", message: `page ${state.page} is not JSON` }))
          )
          const items = itemsOf(document, config.itemsPath)
          if (items === undefined) {
            return yield* new FeedError({
              kind: "malformed",
              message: `page ${state.page} has no array of offers${config.itemsPath ? ` at ${config.itemsPath}` : ""}`
            })
          }
          const nextRaw = config.nextPagePath === undefined ? undefined : readPath(document, config.nextPagePath)
          let next = Option.none<typeof state>()
          if (typeof nextRaw === "string" && nextRaw !== "") {
            const url = new URL(nextRaw, state.url).href
            if (state.seen.has(url) || state.page >= MAX_PAGES) {
              return yield* new FeedError({ kind: "malformed", message: `page ${state.page} links back to an earlier page` })
            }
            state.seen.add(state.url)
            next = Option.some({ url, page: state.page + 1, seen: state.seen })
          }
          return [items.map((item) => mapRecord(item, mapping)), next] as const
        })
    )
    return { read }
  })
