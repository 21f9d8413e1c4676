/**
 * `GET /v2/events` and the `ListEvents` RPC: the page request checked (beyond what the schema
 * checks: the cursor, the message id, the date range), then one store call.
 */
import type { EventsPage, RequestIssue } from "@svc/schema"
import { DEFAULT_EVENTS_PAGE, InvalidRequest } from "@svc/schema"
import { Effect } from "effect"
import { Events, type EventsQuery } from "./store/Events.ts"
import { idIssue } from "./store/Model.ts"

/** A cursor is the id of the last event of the previous page, as the page gave it. */
const CURSOR = /^[1-9]\d{0,17}$/

/** The store's query as a client sends it: the page size optional, the cursor as the page gave it. */
export type ListEventsRequest = Omit<EventsQuery, "count" | "cursor"> & {
  readonly count?: number | undefined
  readonly cursor?: string | undefined
}

export const listEvents = (request: ListEventsRequest): Effect.Effect<EventsPage, InvalidRequest, Events> =>
  Effect.gen(function*() {
    const issues: Array<RequestIssue> = []
    if (request.cursor !== undefined && !CURSOR.test(request.cursor)) {
      issues.push({ in: "query", parameter: "cursor", problem: "is not a cursor from an earlier page" })
    }
    const badId = request.messageId === undefined
      ? undefined
      : idIssue(request.messageId, { in: "query", parameter: "messageId" }, "message id")
    if (badId !== undefined) issues.push(badId)
    if (request.fromDate !== undefined && request.toDate !== undefined && request.fromDate > request.toDate) {
      issues.push({ in: "query", parameter: "fromDate", problem: `is after toDate (${request.fromDate} > ${request.toDate})` })
    }
    if (issues.length > 0) return yield* new InvalidRequest({ issues })
    return yield* Events.use((events) =>
      events.list({
        ...request,
        count: request.count ?? DEFAULT_EVENTS_PAGE,
        cursor: request.cursor === undefined ? undefined : BigInt(request.cursor)
      })
    )
  })
