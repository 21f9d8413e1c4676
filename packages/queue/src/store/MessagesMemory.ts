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
import type { Claim, StoredMessage } from "./Model.ts"
import { isUuid, toClaimed, toMessage, toPublished } from "./Model.ts"

/** The message of `claim` when it is still queued under that claim (the guard of every completion). */
const claimed = (tables: Tables, claim: Claim): StoredMessage | undefined => {
  const message = tables.messages.get(claim.id)
  return message !== undefined && message.claimId === claim.claimId && message.state === "queued" ? message : undefined
}

const update = (tables: Tables, message: StoredMessage, change: Partial<StoredMessage>) =>
  void tables.messages.set(message.id, { ...message, ...change })

export const makeMessagesMemory = Effect.gen(function*() {
  const tables = yield* MemoryTables
  const config = yield* QueueConfig
  const leaseMarginMs = Duration.toMillis(config.leaseMargin)
  const dedupWindowMs = Duration.toMillis(config.dedupWindow)

  const shape: MessagesShape = {
    publish: (messages, dedupId) =>
      atNow(tables, (now) => {
        if (dedupId !== undefined) {
          const seen = tables.dedup.get(dedupId)
          if (seen !== undefined && seen.expiresAt >= now) return seen.result.map((entry) => ({ ...entry, deduplicated: true }))
        }
        const result = toPublished(messages, insertMessages(tables, now, messages))
        if (dedupId !== undefined) tables.dedup.set(dedupId, { result, expiresAt: now + dedupWindowMs })
        return result
      }),

    claim: (limit) =>
      atNow(tables, (now) => {
        const claimId = Crypto.randomUUID()
        const due = [...tables.messages.values()]
          .filter((message) => message.state === "queued" && message.notBefore.getTime() <= now)
          .sort((a, b) => a.notBefore.getTime() - b.notBefore.getTime())
          .slice(0, limit)
        return due.map((message) => {
          update(tables, message, { claimId, notBefore: new Date(now + message.timeoutMs + leaseMarginMs) })
          return toClaimed(message, claimId)
        })
      }),

    nextDue: atNow(tables, (now) => {
      let earliest: number | undefined
      for (const message of tables.messages.values()) {
        if (message.state === "queued" && (earliest === undefined || message.notBefore.getTime() < earliest)) {
          earliest = message.notBefore.getTime()
        }
      }
      return earliest === undefined ? Option.none<number>() : Option.some(Math.max(0, earliest - now))
    }),

    markDelivered: (results) =>
      atNow(tables, (now) => {
        for (const result of results) {
          const message = claimed(tables, result)
          if (message !== undefined) {
            update(tables, message, { state: "delivered", deliveredAt: new Date(now), claimId: null, lastStatus: result.status, lastError: null })
          }
        }
      }),

    deliveredWithCallback: (result, callback) =>
      atNow(tables, (now) => {
        const message = claimed(tables, result)
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
        update(tables, message, { state: "cancelled", claimId: null })
        return Effect.void
      }))
  }
  return shape
})
