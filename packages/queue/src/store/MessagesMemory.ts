/**
 * `Messages.layerMemory`'s implementation: the Postgres statements of `Messages.ts`, one for one,
 * on `MemoryTables` (claims leased until their expiry, completions guarded by the claim id,
 * deduplication ids remembered for `QUEUE_DEDUP_WINDOW`).
 */
import { MessageNotCancellable, MessageNotFound } from "@svc/schema"
import { Duration, Effect, Option } from "effect"
import * as Crypto from "node:crypto"
import { QueueConfig } from "../QueueConfig.ts"
import { atNow, insertMessages, MemoryTables, type Tables } from "./MemoryTables.ts"
import type { MessagesShape } from "./Messages.ts"
import type { Claim, MessageSelection, NewMessage, StoredMessage } from "./Model.ts"
import { CONTROLLED_POLL_MS, inByteOrder, isUuid, nextTurnStart, toClaimed, toMessage, toPublished } from "./Model.ts"

/** The message of `claim` when it is still queued under that claim (the guard of every completion). */
const claimed = (tables: Tables, claim: Claim): StoredMessage | undefined => {
  const message = tables.messages.get(claim.id)
  return message !== undefined && message.claimId === claim.claimId && message.state === "queued" ? message : undefined
}

/** {@link claimed}, or cancelled while the attempt under that claim was in flight: its 2xx is still recorded. */
const claimedForDelivery = (tables: Tables, claim: Claim): StoredMessage | undefined => {
  const message = tables.messages.get(claim.id)
  return message !== undefined && message.claimId === claim.claimId && (message.state === "queued" || message.state === "cancelled")
    ? message
    : undefined
}

const update = (tables: Tables, message: StoredMessage, change: Partial<StoredMessage>) =>
  void tables.messages.set(message.id, { ...message, ...change })

const byDue = (a: StoredMessage, b: StoredMessage) => a.notBefore.getTime() - b.notBefore.getTime() || Number(a.seq - b.seq)

/**
 * Messages.ts's claim on the tables (queue.claim_controlled, then the free claim): controlled
 * messages first, the flow-control keys served in turns in byte order from just after `after`, each
 * up to its room (parallelism minus unexpired claims, rate minus starts in the period), interleaved
 * with the heads of the queues (each queue's first `parallelism` queued messages); then due messages
 * under neither, oldest first, up to `limit` in all.
 */
const claimable = (tables: Tables, now: number, limit: number, after: string): Array<StoredMessage> => {
  const queued = [...tables.messages.values()].filter((message) => message.state === "queued")
  const due = (message: StoredMessage) => message.notBefore.getTime() <= now
  const heads = new Set<string>()
  for (const queue of tables.queues.values()) {
    if (queue.paused) continue
    const window = queued.filter((m) => m.queueName === queue.name).sort((a, b) => Number(a.seq - b.seq)).slice(0, queue.parallelism)
    for (const message of window) if (due(message)) heads.add(message.id)
  }
  const flows = [...tables.flowControl.values()].filter((flow) => !flow.paused).sort((a, b) => inByteOrder(a.key, b.key))
  const turn = [...flows.filter((flow) => inByteOrder(flow.key, after) > 0), ...flows.filter((flow) => inByteOrder(flow.key, after) <= 0)]
  const keyed: Array<StoredMessage> = []
  for (const flow of turn) {
    if (keyed.length >= limit) break
    const inFlight = queued.filter((m) => m.flowKey === flow.key && m.claimId !== null && m.notBefore.getTime() > now).length
    const started = tables.flowStarts.filter((s) => s.key === flow.key && s.at > now - flow.periodMs).length
    const room = Math.min(flow.parallelism === null ? limit : flow.parallelism - inFlight, flow.rate === null ? limit : flow.rate - started)
    const candidates = queued
      .filter((m) => m.flowKey === flow.key && due(m) && (m.queueName === null || heads.has(m.id)))
      .sort(byDue)
      .slice(0, Math.max(room, 0))
    keyed.push(...candidates.slice(0, limit - keyed.length))
  }
  const unkeyedHeads = queued.filter((m) => heads.has(m.id) && m.flowKey === null).sort((a, b) => Number(a.seq - b.seq))
  const controlled = [...keyed.map((message, n) => ({ message, n })), ...unkeyedHeads.map((message, n) => ({ message, n }))]
    .sort((a, b) => a.n - b.n)
    .slice(0, limit)
    .map(({ message }) => message)
  const free = queued
    .filter((message) => due(message) && message.flowKey === null && message.queueName === null)
    .sort(byDue)
    .slice(0, limit - controlled.length)
  return [...controlled, ...free]
}

/** Messages.ts's `cancelMany` selection: queued, among the ids (when given), matching every filter field. */
const selected = ({ ids, filter }: MessageSelection) => {
  const idSet = ids === undefined ? undefined : new Set(ids)
  return (m: StoredMessage) =>
    m.state === "queued" && (idSet === undefined || idSet.has(m.id)) &&
    (filter?.url === undefined || m.url === filter.url) &&
    (filter?.topicName === undefined || m.topicName === filter.topicName) &&
    (filter?.queue === undefined || m.queueName === filter.queue) &&
    (filter?.scheduleId === undefined || m.scheduleId === filter.scheduleId) &&
    (filter?.flowControlKey === undefined || m.flowKey === filter.flowControlKey) &&
    (filter?.fromDate === undefined || m.createdAt.getTime() >= filter.fromDate) &&
    (filter?.toDate === undefined || m.createdAt.getTime() <= filter.toDate)
}

export const makeMessagesMemory = Effect.gen(function*() {
  const tables = yield* MemoryTables
  const config = yield* QueueConfig
  const leaseMarginMs = Duration.toMillis(config.leaseMargin)
  const dedupWindowMs = Duration.toMillis(config.dedupWindow)

  /** One publish at `now`: with a deduplication id seen within the window, the first answer instead. */
  const publishOne = (now: number, messages: ReadonlyArray<NewMessage>, dedupId: string | undefined) => {
    if (dedupId !== undefined) {
      const seen = tables.dedup.get(dedupId)
      if (seen !== undefined && seen.expiresAt >= now) return seen.result.map((entry) => ({ ...entry, deduplicated: true }))
    }
    const result = toPublished(messages, insertMessages(tables, now, messages))
    if (dedupId !== undefined) tables.dedup.set(dedupId, { result, expiresAt: now + dedupWindowMs })
    return result
  }

  /** The last flow-control key the previous claim served (where the next turn starts). */
  let lastServedKey = ""

  const shape: MessagesShape = {
    publish: (messages, dedupId) => atNow(tables, (now) => publishOne(now, messages, dedupId)),

    // One synchronous step: nothing else sees the tables between the publishes of a batch.
    publishBatch: (publishes) =>
      atNow(tables, (now) => publishes.map((publish) => publishOne(now, publish.messages, publish.dedupId))),

    claim: (limit) =>
      atNow(tables, (now) => {
        const claimId = Crypto.randomUUID()
        const picked = claimable(tables, now, limit, lastServedKey)
        lastServedKey = nextTurnStart(lastServedKey, picked.map((message) => message.flowKey))
        tables.flowStarts = tables.flowStarts.filter((start) =>
          start.at > now - (tables.flowControl.get(start.key)?.periodMs ?? 0)
        )
        return picked.map((message) => {
          update(tables, message, { claimId, notBefore: new Date(now + message.timeoutMs + leaseMarginMs) })
          const flow = message.flowKey === null ? undefined : tables.flowControl.get(message.flowKey)
          if (flow !== undefined && flow.rate !== null) tables.flowStarts.push({ key: flow.key, at: now })
          return toClaimed(message, claimId)
        })
      }),

    nextDue: atNow(tables, (now) => {
      let earliest: number | undefined
      for (const message of tables.messages.values()) {
        if (message.state !== "queued") continue
        let at = message.notBefore.getTime()
        if (message.flowKey !== null || message.queueName !== null) {
          if (message.flowKey !== null && tables.flowControl.get(message.flowKey)?.paused === true) continue
          if (message.queueName !== null && tables.queues.get(message.queueName)?.paused === true) continue
          at = Math.max(at, now + CONTROLLED_POLL_MS)
        }
        if (earliest === undefined || at < earliest) earliest = at
      }
      return earliest === undefined ? Option.none<number>() : Option.some(Math.max(0, earliest - now))
    }),

    markDelivered: (results) =>
      atNow(tables, (now) => {
        for (const result of results) {
          const message = claimedForDelivery(tables, result)
          if (message !== undefined) {
            update(tables, message, { state: "delivered", deliveredAt: new Date(now), claimId: null, lastStatus: result.status, lastError: null })
          }
        }
      }),

    deliveredWithCallback: (result, callback) =>
      atNow(tables, (now) => {
        const message = claimedForDelivery(tables, result)
        if (message === undefined) return
        update(tables, message, { state: "delivered", deliveredAt: new Date(now), claimId: null, lastStatus: result.status, lastError: null })
        insertMessages(tables, now, [callback])
      }),

    scheduleRetry: (claim, delayMs, status, error) =>
      atNow(tables, (now) => {
        const message = claimed(tables, claim)
        if (message === undefined) return
        update(tables, message, {
          retried: message.retried + 1,
          claimId: null,
          lastStatus: status ?? null,
          lastError: error ?? null,
          notBefore: new Date(now + delayMs)
        })
      }),

    exhaust: (claim, exhausted) =>
      atNow(tables, (now) => {
        const message = claimed(tables, claim)
        if (message === undefined) return
        update(tables, message, { state: "failed", claimId: null, lastStatus: exhausted.status ?? null, lastError: exhausted.error ?? null })
        tables.seq += 1n
        tables.dlq.set(exhausted.dlqId, {
          id: exhausted.dlqId,
          seq: tables.seq,
          messageId: message.id,
          failedAt: new Date(now),
          responseStatus: exhausted.status ?? null,
          responseHeaders: exhausted.headers ?? null,
          responseBody: exhausted.body ?? null,
          lastError: exhausted.error ?? null
        })
        insertMessages(tables, now, exhausted.callbacks)
      }),

    release: (claims) =>
      atNow(tables, (now) => {
        for (const claim of claims) {
          const message = claimed(tables, claim)
          if (message !== undefined) update(tables, message, { claimId: null, notBefore: new Date(now) })
        }
      }),

    get: (id) =>
      Effect.flatten(atNow(tables, (now) => {
        const message = isUuid(id) ? tables.messages.get(id) : undefined
        if (message === undefined) return Effect.fail(new MessageNotFound({ messageId: id }))
        const inFlight = message.claimId !== null && message.notBefore.getTime() > now
        const entry = [...tables.dlq.values()].find((dlq) => dlq.messageId === id)
        return Effect.succeed(toMessage(message, inFlight, entry?.id ?? null))
      })),

    cancel: (id) =>
      Effect.flatten(atNow(tables, (): Effect.Effect<void, MessageNotFound | MessageNotCancellable> => {
        const message = isUuid(id) ? tables.messages.get(id) : undefined
        if (message === undefined) return Effect.fail(new MessageNotFound({ messageId: id }))
        if (message.state !== "queued") return Effect.fail(new MessageNotCancellable({ messageId: id, state: message.state }))
        update(tables, message, { state: "cancelled" })
        return Effect.void
      })),

    cancelMany: (selection, limit) =>
      atNow(tables, () => {
        const candidates = [...tables.messages.values()].filter(selected(selection)).sort((a, b) => Number(a.seq - b.seq))
        for (const message of candidates.slice(0, limit)) update(tables, message, { state: "cancelled" })
        return { count: Math.min(limit, candidates.length), more: candidates.length > limit }
      })
  }
  return shape
})
