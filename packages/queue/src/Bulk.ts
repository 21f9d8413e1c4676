/**
 * The bulk operations (cancel messages, retry and delete DLQ entries, by ids or a filter), for the
 * HTTP API and the RPC alike: the request is checked here, then one store call changes at most
 * {@link MAX_BULK} (`@svc/schema` QueueBulk.ts) and says whether more match.
 */
import type { CancelledMessages, DeletedDlq, DlqFilter, MessageFilter, RequestIssue, RetriedDlq } from "@svc/schema"
import { InvalidRequest, MAX_BULK } from "@svc/schema"
import { Effect } from "effect"
import { Dlq } from "./store/Dlq.ts"
import { Messages } from "./store/Messages.ts"
import { idIssue, type Selection } from "./store/Model.ts"

/**
 * Why a selection cannot be used, or none: it must give ids or a filter naming at least one field
 * (an empty filter would select everything by accident; `fromDate: 0` selects everything on
 * purpose), and a date range must not end before it starts.
 */
const selectionIssues = <F extends { readonly fromDate?: number; readonly toDate?: number }>(
  idsField: IdsField,
  ids: ReadonlyArray<string> | undefined,
  filter: F | undefined
): Array<RequestIssue> => {
  const issues: Array<RequestIssue> = []
  if (ids === undefined && filter === undefined) {
    issues.push({ in: "body", parameter: idsField, problem: `give ${idsField} or filter (or both)` })
  }
  // An id that is not one selects nothing: said, not answered with a count of 0.
  for (const [index, id] of (ids ?? []).entries()) {
    const bad = idIssue(id, { in: "body", parameter: `${idsField}[${index}]` }, idsField === "messageIds" ? "message id" : "DLQ id")
    if (bad !== undefined) issues.push(bad)
  }
  if (filter !== undefined && Object.values(filter).every((value) => value === undefined)) {
    issues.push({ in: "body", parameter: "filter", problem: "must name at least one field (fromDate: 0 matches everything)" })
  }
  if (filter?.fromDate !== undefined && filter.toDate !== undefined && filter.fromDate > filter.toDate) {
    issues.push({ in: "body", parameter: "filter.fromDate", problem: `is after filter.toDate (${filter.fromDate} > ${filter.toDate})` })
  }
  return issues
}

type IdsField = "messageIds" | "dlqIds"

const checked = <F extends { readonly fromDate?: number; readonly toDate?: number }>(
  idsField: IdsField,
  ids: ReadonlyArray<string> | undefined,
  filter: F | undefined
): Effect.Effect<Selection<F>, InvalidRequest> => {
  const issues = selectionIssues(idsField, ids, filter)
  return issues.length > 0 ? Effect.fail(new InvalidRequest({ issues })) : Effect.succeed({ ids, filter })
}

/** `DELETE /v2/messages`: cancels queued messages (claimed ones included, as a single cancel does). */
export const cancelMessages = (request: {
  readonly messageIds?: ReadonlyArray<string> | undefined
  readonly filter?: MessageFilter | undefined
}): Effect.Effect<CancelledMessages, InvalidRequest, Messages> =>
  checked("messageIds", request.messageIds, request.filter).pipe(
    Effect.flatMap((selection) => Messages.use((messages) => messages.cancelMany(selection, MAX_BULK))),
    Effect.map(({ count, more }) => ({ cancelled: count, more }))
  )

type DlqRequest = { readonly dlqIds?: ReadonlyArray<string> | undefined; readonly filter?: DlqFilter | undefined }

/** `POST /v2/dlq/retry`: the entries go, their messages are queued again with their retries starting over. */
export const retryDlq = (request: DlqRequest): Effect.Effect<RetriedDlq, InvalidRequest, Dlq> =>
  checked("dlqIds", request.dlqIds, request.filter).pipe(
    Effect.flatMap((selection) => Dlq.use((dlq) => dlq.retryMany(selection, MAX_BULK))),
    Effect.map(({ count, more }) => ({ retried: count, more }))
  )

/** `DELETE /v2/dlq`: the entries go (their messages stay, failed). */
export const deleteDlq = (request: DlqRequest): Effect.Effect<DeletedDlq, InvalidRequest, Dlq> =>
  checked("dlqIds", request.dlqIds, request.filter).pipe(
    Effect.flatMap((selection) => Dlq.use((dlq) => dlq.deleteMany(selection, MAX_BULK))),
    Effect.map(({ count, more }) => ({ deleted: count, more }))
  )
