/**
 * The delivery worker. Any number of them (in any number of processes) share one database:
 *
 * - **claim**: one statement takes up to `QUEUE_BATCH_SIZE` due messages (`FOR UPDATE SKIP LOCKED`,
 *   so workers never wait on each other) and leases them: `not_before` moves to now + the message's
 *   timeout + `QUEUE_LEASE_MARGIN`, `claim_id` is set. A worker that dies loses nothing: when the
 *   lease runs out the message is due again and any worker delivers it (at-least-once).
 * - **wake-up**: LISTEN on {@link CHANNEL} (publishes and callbacks NOTIFY in their transaction),
 *   with a poll fallback: an idle worker sleeps until the earliest `not_before` or
 *   `QUEUE_POLL_INTERVAL`, whichever is sooner. If the LISTEN connection drops, polling carries on
 *   and the listener reconnects.
 * - **delivery**: at most `QUEUE_CONCURRENCY` requests in flight; method, forwarded headers and
 *   timeout of the message, plus `Svc-Message-Id`, `Svc-Retried` and `Svc-Signature`.
 * - **outcome**: 2xx = delivered (recorded in batches); otherwise retried after the delay of an
 *   exponential `Schedule` (`QUEUE_RETRY_BASE`, doubling, capped at `QUEUE_RETRY_MAX_DELAY`), or
 *   the message's `Svc-Retry-Delay` expression (RetryDelay.ts, same cap), or after the
 *   destination's `Retry-After` when it sent one; when every retry is used, the message
 *   goes to the dead-letter queue and its callbacks are enqueued, all in one transaction.
 * - **shutdown**: stop claiming, let in-flight deliveries finish (5 s at most, and never longer than
 *   `SHUTDOWN_TIMEOUT`: the process's watchdog exits at `SHUTDOWN_TIMEOUT` + 5 s, and a wait that
 *   outlived it left every claim held and every finished delivery unrecorded, all delivered again a
 *   lease later), record them, give the remaining claims back so another worker takes them at once.
 */
import { PgClient } from "@effect/sql-pg"
import { postgresReason, ShutdownTimeout } from "@svc/platform"
import type { CallbackSettings } from "@svc/schema"
import { Duration, Effect, Exit, FiberSet, Layer, Option, Queue, Schedule } from "effect"
import { Reactivity } from "effect/reactivity"
import { SqlError } from "effect/sql"
import * as Crypto from "node:crypto"
import type { DeliveryOutcome } from "./Delivery.ts"
import { makeSender, retryAfterMs } from "./Delivery.ts"
import { headerSyntaxProblem } from "./Publish.ts"
import { QueueConfig } from "./QueueConfig.ts"
import { evaluateRetryDelay } from "./RetryDelay.ts"
import { sign } from "./Signature.ts"
import { CHANNEL } from "./store/Enqueue.ts"
import { Messages } from "./store/Messages.ts"
import type { ClaimedMessage, DeliveredResult, NewMessage } from "./store/Model.ts"
import { SigningKeys } from "./store/SigningKeys.ts"

/** The delay before retry number `attempt + 1` (attempt 0 = the first retry), from the schedule. */
export const scheduleDelay = (
  schedule: Schedule.Schedule<unknown, unknown>,
  attempt: number
): Effect.Effect<number> =>
  Effect.gen(function*() {
    const step = yield* Schedule.toStep(schedule)
    let delay = 0
    for (let i = 0; i <= attempt; i++) {
      const [, duration] = yield* step(0, undefined)
      delay = Duration.toMillis(duration)
    }
    return delay
  }).pipe(Effect.catchCause(() => Effect.succeed(0)))

/** The retry schedule of the configuration: exponential from `base`, doubling, capped at `max`. */
export const retrySchedule = (base: Duration.Duration, max: Duration.Duration): Schedule.Schedule<unknown, unknown> =>
  Schedule.exponential(base, 2).pipe(
    Schedule.modifyDelay((metadata) => Effect.succeed(Duration.min(metadata.duration, max)))
  ) as Schedule.Schedule<unknown, unknown>

const base64 = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64")

/** The spec's callback body (and, with `dlqId`, the failure callback body). */
export const callbackBody = (
  message: ClaimedMessage,
  outcome: DeliveryOutcome,
  maxBytes: number,
  dlqId?: string
): Record<string, unknown> => {
  const response = outcome._tag === "Response" ? outcome : undefined
  return {
    status: response?.status ?? 0,
    header: response?.headers ?? {},
    body: response === undefined ? "" : base64(response.body.subarray(0, maxBytes)),
    retried: message.retried,
    maxRetries: message.maxRetries,
    sourceMessageId: message.id,
    ...(message.topicName === null ? {} : { topicName: message.topicName }),
    ...(message.endpointName === null ? {} : { endpointName: message.endpointName }),
    url: message.url,
    method: message.method,
    sourceHeader: message.headers,
    sourceBody: base64(message.body),
    notBefore: String(message.scheduledAt.getTime()),
    createdAt: String(message.createdAt.getTime()),
    ...(message.callerIp === null ? {} : { callerIP: message.callerIp }),
    ...(message.scheduleId === null ? {} : { scheduleId: message.scheduleId }),
    ...(outcome._tag === "Failed" ? { error: outcome.error } : {}),
    ...(dlqId === undefined ? {} : { dlqId })
  }
}

const callbackMessage = (
  kind: "callback" | "failure_callback",
  settings: CallbackSettings,
  source: ClaimedMessage,
  body: Record<string, unknown>
): NewMessage => ({
  kind,
  url: settings.url,
  delivery: {
    method: settings.method,
    timeoutMs: settings.timeoutMs,
    retries: settings.retries,
    delayMs: settings.delayMs,
    headers: settings.headers
  },
  body: new TextEncoder().encode(JSON.stringify(body)),
  sourceMessageId: source.id
})

/**
 * Why a claimed message's request cannot be built, or `undefined`: checked before every attempt, by
 * the rules the delivery client applies (an http(s) URL, a token method, sendable headers), so a
 * message stored with something node would refuse fails its attempt with the reason.
 */
export const requestProblem = (message: Pick<ClaimedMessage, "url" | "method" | "headers">): string | undefined => {
  let url: URL
  try {
    url = new URL(message.url)
  } catch {
    return `the destination ${JSON.stringify(String(message.url).slice(0, 200))} is not a URL`
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return `the destination's scheme ${url.protocol} is not http or https`
  if (typeof message.method !== "string" || !/^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/.test(message.method)) {
    return `the method ${JSON.stringify(String(message.method).slice(0, 50))} is not a valid HTTP method`
  }
  if (typeof message.headers !== "object" || message.headers === null) return "the stored headers are not an object"
  for (const [name, value] of Object.entries(message.headers)) {
    const problem = headerSyntaxProblem(name, value)
    if (problem !== undefined) return problem
  }
  return undefined
}

/**
 * An attempt that could not even be sent: a failed attempt like any other (retried, then the
 * dead-letter queue with this reason), and a warning, since only the message itself can cause it.
 */
const unsendable = (message: Pick<ClaimedMessage, "id" | "url">, reason: string): Effect.Effect<DeliveryOutcome> =>
  Effect.as(
    Effect.logWarning(`Message ${message.id} to ${origin(message.url)} could not be sent: ${reason}`),
    { _tag: "Failed", error: `The request could not be sent: ${reason}` }
  )

/**
 * Whatever throws while an attempt is built or sent (node refusing a header, a URL, a method; a
 * client bug) becomes a failed attempt of `message` with the thrown message as the reason.
 */
export const failedOnDefect = (message: Pick<ClaimedMessage, "id" | "url">) =>
<E, R>(attempt: Effect.Effect<DeliveryOutcome, E, R>): Effect.Effect<DeliveryOutcome, E, R> =>
  Effect.catchDefect(attempt, (defect) => unsendable(message, defectReason(defect)))

/** The words of a defect, for the message's `lastError` (no stack). */
const defectReason = (defect: unknown): string => {
  const text = defect instanceof Error ? defect.message : String(defect)
  return text.split("\n")[0]!.slice(0, 300) || "the request could not be built"
}

const origin = (url: string) => {
  try {
    return new URL(url).origin
  } catch {
    return "(invalid URL)"
  }
}

/** The worker, as a layer: runs for the life of the layer. */
export const layer = Layer.effectDiscard(Effect.gen(function*() {
  const config = yield* QueueConfig
  // How long a graceful stop waits for deliveries in flight (module comment, *shutdown*).
  const drainMs = Math.min(5_000, Duration.toMillis(yield* ShutdownTimeout))
  const store = yield* Messages
  const signingKeys = yield* SigningKeys
  const sql = yield* PgClient.PgClient
  const sender = makeSender({
    maxSockets: config.concurrency,
    maxResponseBytes: config.maxMessageBytes,
    allowPrivate: config.allowPrivate
  })
  yield* Effect.addFinalizer(() => Effect.sync(sender.close))
  const schedule = retrySchedule(config.retryBase, config.retryMaxDelay)
  const retryMaxMs = Duration.toMillis(config.retryMaxDelay)
  const pollMs = Math.max(1, Duration.toMillis(config.pollInterval))

  const notified = yield* Queue.sliding<void>(1)
  const slotFreed = yield* Queue.sliding<void>(1)
  const delivered = yield* Queue.unbounded<DeliveredResult>()
  /** Claimed and not finished: id -> claim id. */
  const inFlight = new Map<string, string>()
  let stopping = false

  // Read at most once a second, however many deliveries start at once (they share the pending
  // read); a rotation reaches deliveries within that second. A failed read is not kept.
  const currentKey = yield* Effect.cachedWithTTL(
    Effect.map(signingKeys.get, (keys) => keys.current),
    (exit) => Exit.isSuccess(exit) ? "1 second" : 0
  )

  // The stores die on a database failure (their boundary): the worker logs it and carries on.
  const logSqlError = (what: string) => (defect: unknown) =>
    Effect.logWarning(`Queue worker: ${what} failed: ${postgresReason(defect)}`)

  const finish = Effect.fnUntraced(function*(message: ClaimedMessage, outcome: DeliveryOutcome) {
    const status = outcome._tag === "Response" ? outcome.status : undefined
    if (status !== undefined && status >= 200 && status < 300) {
      const result = { id: message.id, claimId: message.claimId, status }
      if (message.kind === "message" && message.callback !== null) {
        const body = callbackBody(message, outcome, config.maxMessageBytes)
        return yield* store.deliveredWithCallback(result, callbackMessage("callback", message.callback, message, body))
      }
      return Queue.offerUnsafe(delivered, result)
    }
    const error = outcome._tag === "Failed" ? outcome.error : `The destination answered ${status}`
    if (message.retried < message.maxRetries) {
      const retryAfter = outcome._tag === "Response" ? retryAfterMs(outcome.headers, Date.now()) : undefined
      // The destination's Retry-After first, then the message's Svc-Retry-Delay, then the backoff.
      const delay = retryAfter !== undefined
        ? Math.min(retryAfter, retryMaxMs)
        : (message.retryDelay === null ? undefined : evaluateRetryDelay(message.retryDelay, message.retried, retryMaxMs)) ??
          (yield* scheduleDelay(schedule, message.retried))
      yield* Effect.logDebug(
        `Message ${message.id} to ${origin(message.url)}: ${error}; retry ${message.retried + 1} of ${message.maxRetries} in ${delay} ms`
      )
      yield* store.scheduleRetry(message, delay, status, error)
      // Wake this worker when the retry is due (others find it by their own idle sleep).
      return yield* Effect.sleep(delay).pipe(
        Effect.andThen(Effect.sync(() => Queue.offerUnsafe(notified, undefined))),
        Effect.forkDetach,
        Effect.asVoid
      )
    }
    yield* Effect.logInfo(
      `Message ${message.id} to ${origin(message.url)} failed after ${message.retried} retries (${error}); moved to the dead-letter queue`
    )
    // Everything the transaction writes is decided here, as data: the DLQ entry's id and the
    // callbacks naming it.
    const dlqId = Crypto.randomUUID()
    const callbacks: Array<NewMessage> = []
    if (message.kind === "message") {
      if (message.callback !== null && outcome._tag === "Response") {
        const body = callbackBody(message, outcome, config.maxMessageBytes)
        callbacks.push(callbackMessage("callback", message.callback, message, body))
      }
      if (message.failureCallback !== null) {
        const body = callbackBody(message, outcome, config.maxMessageBytes, dlqId)
        callbacks.push(callbackMessage("failure_callback", message.failureCallback, message, body))
      }
    }
    yield* store.exhaust(message, {
      dlqId,
      status,
      headers: outcome._tag === "Response" ? outcome.headers : undefined,
      body: outcome._tag === "Response" ? outcome.body : undefined,
      error,
      callbacks
    })
  })

  const attempt = Effect.fnUntraced(function*(message: ClaimedMessage, key: string) {
    const problem = requestProblem(message)
    if (problem !== undefined) return yield* unsendable(message, problem)
    const headers: Record<string, string> = {
      "user-agent": "svc-queue",
      ...message.headers,
      "svc-message-id": message.id,
      "svc-retried": String(message.retried),
      "svc-signature": sign(key, { url: message.url, body: message.body })
    }
    if (message.topicName !== null) headers["svc-topic-name"] = message.topicName
    if (message.scheduleId !== null) headers["svc-schedule-id"] = message.scheduleId
    return yield* sender.send({
      url: message.url,
      method: message.method,
      headers,
      body: message.body,
      timeoutMs: message.timeoutMs
    })
  })

  /** `finish` hands a plain 2xx delivery to the batch below; everything else it records itself. */
  const recordedInBatch = (message: ClaimedMessage, outcome: DeliveryOutcome) =>
    outcome._tag === "Response" && outcome.status >= 200 && outcome.status < 300 &&
    !(message.kind === "message" && message.callback !== null)

  const deliver = Effect.fnUntraced(function*(message: ClaimedMessage) {
    // Whatever throws while building or sending the request (node refusing a header or a URL, a
    // client bug) is a failed attempt of this message, never a fiber dying with the message left
    // claimed, to be claimed again at every lease, forever. A lost signing-key read is the
    // database's problem, not the message's: read outside the attempt (the store dies on a database
    // failure, which the attempt would take for the message's), the claim expires and the message
    // is tried again.
    const key = yield* currentKey
    const outcome = yield* attempt(message, key).pipe(failedOnDefect(message))
    // A failed completion statement leaves the claim to expire: the message is delivered again.
    yield* finish(message, outcome).pipe(
      Effect.catchDefect((defect) =>
        SqlError.isSqlError(defect)
          ? logSqlError(`recording the outcome of ${message.id}`)(defect)
          : Effect.logError(`Queue worker: recording the outcome of ${message.id} failed`, defect)
      )
    )
    // A slot of its flow-control key or queue is free once recorded (a delivery: by the batch below).
    if ((message.flowKey !== null || message.queueName !== null) && !recordedInBatch(message, outcome)) {
      Queue.offerUnsafe(notified, undefined)
    }
  }, Effect.catchDefect(logSqlError("reading the signing key")))

  // Deliveries run in this set: interrupted last, after the graceful stop below had its chance.
  const deliveries = yield* FiberSet.make()

  /**
   * The deliveries the recording loop below took and has not recorded yet. That loop is interrupted
   * before the graceful stop runs (it is forked after it), possibly while its statement waits for a
   * pooled connection: the stop records them with the rest, or they stayed claimed, to be sent again
   * a lease later (a busy worker stopped by SIGTERM sent ~130 of 5,000 messages twice that way).
   */
  let recording: ReadonlyArray<DeliveredResult> = []

  // Graceful stop (finalizers run in reverse order: this one before the set is interrupted).
  yield* Effect.addFinalizer(() =>
    Effect.gen(function*() {
      stopping = true
      Queue.offerUnsafe(notified, undefined)
      yield* FiberSet.awaitEmpty(deliveries).pipe(Effect.timeoutOption(drainMs))
      const pending = [...recording, ...yield* Queue.clear(delivered)]
      recording = []
      if (pending.length > 0) yield* Effect.logInfo(`Queue worker: stopping; recording ${pending.length} finished deliveries`)
      // `markDelivered` is guarded by the claim id: a batch the interrupted loop did record is not changed again.
      yield* store.markDelivered(pending).pipe(Effect.catchDefect(logSqlError("recording deliveries")))
      const leftover = [...inFlight].map(([id, claimId]) => ({ id, claimId }))
      yield* store.release(leftover).pipe(Effect.catchDefect(logSqlError("releasing claims")))
      if (leftover.length > 0) yield* Effect.logInfo(`Queue worker: released ${leftover.length} unfinished claims`)
    })
  )

  // Record deliveries in batches: one statement for everything finished since the last one.
  yield* Effect.gen(function*() {
    while (true) {
      // Taken and remembered in one step, so that an interruption cannot fall between the two.
      const batch = yield* Effect.uninterruptibleMask((restore) =>
        Effect.tap(restore(Queue.takeBetween(delivered, 1, 2000)), (taken) => Effect.sync(() => recording = taken))
      )
      yield* store.markDelivered(batch).pipe(
        Effect.catchDefect(Effect.fail),
        Effect.retry({ schedule: Schedule.exponential("100 millis"), times: 3 }),
        Effect.catch(logSqlError("recording deliveries"))
      )
      recording = []
      // Recorded: slots of flow-control keys and FIFO queues are free, so claim again at once.
      Queue.offerUnsafe(notified, undefined)
    }
  }).pipe(Effect.forkScoped)

  // LISTEN for new due messages; reconnects (and polling covers the gap) when the connection drops.
  // On a connection of its own, outside the pool: a LISTEN holds its connection for good, and taken
  // from the pool it left DATABASE_POOL_SIZE=1 with none for anything else (every publish, claim and
  // /ready waited forever).
  yield* Effect.scoped(Effect.gen(function*() {
    const listener = yield* PgClient.makeClient(sql.config).pipe(Effect.provide(Reactivity.layer))
    const notifications = yield* listener.listen(CHANNEL)
    Queue.offerUnsafe(notified, undefined)
    while (true) {
      yield* Queue.take(notifications)
      Queue.offerUnsafe(notified, undefined)
    }
  })).pipe(
    Effect.tapCause(() => Effect.logWarning("Queue worker: LISTEN connection lost; polling until it is back")),
    Effect.retry(Schedule.spaced("1 second")),
    Effect.forkScoped
  )

  // The claim loop. With every slot taken it waits until half a batch of slots is free again, so
  // that a busy worker claims in batches rather than one message per finished delivery.
  const refill = Math.max(1, Math.floor(Math.min(config.batchSize, config.concurrency) / 2))
  yield* Effect.gen(function*() {
    let saturated = false
    while (!stopping) {
      const free = config.concurrency - inFlight.size
      if (free <= 0 || (saturated && free < refill)) {
        saturated = true
        yield* Queue.take(slotFreed)
        continue
      }
      saturated = false
      const limit = Math.min(config.batchSize, free)
      const claimed = yield* store.claim(limit).pipe(
        Effect.catchDefect((defect) => Effect.as(Effect.andThen(logSqlError("claiming")(defect), Effect.sleep(pollMs)), []))
      )
      for (const message of claimed) {
        inFlight.set(message.id, message.claimId)
        yield* FiberSet.run(
          deliveries,
          deliver(message).pipe(Effect.ensuring(Effect.sync(() => {
            inFlight.delete(message.id)
            Queue.offerUnsafe(slotFreed, undefined)
          })))
        )
      }
      if (claimed.length === 0 && !stopping) {
        // Idle: until a notification, the earliest due message (delays, retries, expired leases) or the poll.
        const due = yield* store.nextDue.pipe(Effect.catchDefect(() => Effect.succeed(Option.none<number>())))
        const wait = Math.max(5, Math.min(pollMs, Option.getOrElse(due, () => pollMs)))
        yield* Queue.take(notified).pipe(Effect.timeoutOption(wait))
      } else if (claimed.length < limit && !stopping) {
        // Caught up: wait for the next notification (or a retry this worker scheduled, or the poll).
        yield* Queue.take(notified).pipe(Effect.timeoutOption(pollMs))
      }
    }
  }).pipe(Effect.forkScoped)

  yield* Effect.logInfo(`Queue worker started (concurrency ${config.concurrency}, batch ${config.batchSize})`)
}))
