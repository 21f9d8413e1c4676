/**
 * A generic JSON feed: a document holding an array of offers (at `itemsPath`, or the document itself,
 * or its `offers` / `items` / `data`), optionally paginated through a next-page URL at `nextPagePath`.
 *
 * Paging stays on the feed's origin: a next-page link to another origin ends the run as a failed read
 * (nothing expired) unless the source lists that origin in `pageOrigins`; even then the source's
 * credential is not sent there (it belongs to the origin of `url`). A feed's document is partner
 * input, and following it elsewhere with the partner's key was how the key leaked.
 */
import { Effect, Option, Stream } from "effect"
import { HttpClient } from "effect/http"
import type { SourceConfig } from "../Sources.ts"
import { FeedError, mapRecord, readPath, type SourceAdapter } from "./SourceAdapter.ts"
import { feedBody, feedGet, safeUrl } from "./http.ts"

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

const originOf = (url: string): string => {
  try {
    return new URL(url).origin
  } catch {
    return "invalid"
  }
}

export const make = (config: SourceConfig): Effect.Effect<SourceAdapter, never, HttpClient.HttpClient> =>
  Effect.gen(function*() {
    const client = yield* HttpClient.HttpClient
    const mapping = { fields: config.fields, defaults: config.defaults }
    const firstUrl = config.url ?? ""
    const origins = new Set([originOf(firstUrl), ...(config.pageOrigins ?? []).map(originOf)])
    const read = Stream.paginate(
      { url: firstUrl, page: 1, seen: new Set<string>() },
      (state) =>
        Effect.gen(function*() {
          const response = yield* feedGet(client, state.url, config)
          const chunks = yield* Stream.runCollect(feedBody(response, state.url))
          const document = yield* Effect.try({
            try: () => JSON.parse(new TextDecoder().decode(Buffer.concat(chunks))) as unknown,
            catch: () => new FeedError({ kind: "malformed", message: `page ${state.page} is not JSON` })
          })
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
            let url: string
            try {
              url = new URL(nextRaw, state.url).href
            } catch {
              return yield* new FeedError({ kind: "malformed", message: `page ${state.page} links to an invalid next page` })
            }
            if (!origins.has(originOf(url))) {
              return yield* new FeedError({
                kind: "malformed",
                message: `page ${state.page} links to ${safeUrl(url)}, outside the feed's origin (add its origin to the source's pageOrigins to follow it)`
              })
            }
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
