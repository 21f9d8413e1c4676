/**
 * A list paged by key (`GET /v2/schedules`, `/v2/flow-control`, `/v2/topics`, `/v2/queues`): at most `limit` entries
 * (1-{@link MAX_LIST_PAGE}, the default) after a `cursor` (the last key of an earlier page, which need
 * not exist any more), and the cursor of the next page when one follows. The stores read keys in byte
 * order (`COLLATE "C"` in Postgres), so the pages of one list never overlap or skip.
 */
import type { RequestIssue } from "@svc/schema"
import { InvalidRequest, MAX_LIST_PAGE } from "@svc/schema"
import { Effect } from "effect"

export interface PageQuery {
  readonly cursor?: string | undefined
  readonly limit?: number | undefined
}

export interface Page<A> {
  readonly items: ReadonlyArray<A>
  /** The last key of this page when another follows. */
  readonly cursor: string | undefined
}

/** A page as a list's answer: its entries under `field`, and `cursor` only when another page follows. */
export const answer = <const Field extends string, A>(field: Field, page: Page<A>) =>
  (page.cursor === undefined ? { [field]: page.items } : { [field]: page.items, cursor: page.cursor }) as
    & { readonly [K in Field]: ReadonlyArray<A> }
    & { readonly cursor?: string }

export const byKey = <A, R>(options: {
  readonly query: PageQuery
  /** The shape of a key: a cursor of another shape cannot come from an earlier page. */
  readonly keyPattern: RegExp
  /** At most `limit` entries by key, those after `after` when given. */
  readonly read: (page: { readonly after: string | undefined; readonly limit: number }) => Effect.Effect<ReadonlyArray<A>, never, R>
  readonly keyOf: (entry: A) => string
}): Effect.Effect<Page<A>, InvalidRequest, R> =>
  Effect.gen(function*() {
    const { cursor } = options.query
    const limit = options.query.limit ?? MAX_LIST_PAGE
    const issues: Array<RequestIssue> = []
    if (cursor !== undefined && !options.keyPattern.test(cursor)) {
      issues.push({ in: "query", parameter: "cursor", problem: "is not a cursor from an earlier page" })
    }
    if (!(Number.isInteger(limit) && limit >= 1 && limit <= MAX_LIST_PAGE)) {
      issues.push({ in: "query", parameter: "limit", problem: `must be an integer from 1 to ${MAX_LIST_PAGE}, got ${limit}` })
    }
    if (issues.length > 0) return yield* new InvalidRequest({ issues })
    // one more than the page, to know whether another follows
    const read = yield* options.read({ after: cursor, limit: limit + 1 })
    const items = read.slice(0, limit)
    return { items, cursor: read.length > limit ? options.keyOf(items[items.length - 1]!) : undefined }
  })
