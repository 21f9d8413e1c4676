/**
 * What the HTTP API and the RPC do with schedules beyond a single store call: create (or replace) a
 * schedule — its cron checked (`Cron.ts`), its request checked by the publish rules
 * (`Operations.preparePublish`, the same function a publish runs, so a schedule stores nothing a
 * publish would refuse) — and the API's view of a stored schedule.
 */
import type { RequestIssue, Schedule } from "@svc/schema"
import { InvalidRequest, SCHEDULE_ID_PATTERN, ScheduleNotFound } from "@svc/schema"
import { Clock, Effect, Option } from "effect"
import * as Crypto from "node:crypto"
import { cronOf, nextTick, nextTicks, parseCron } from "./Cron.ts"
import * as Operations from "./Operations.ts"
import * as Pages from "./Pages.ts"
import { canonicalHeaderName, NOT_FORWARDED, parsePublish } from "./Publish.ts"
import { QueueConfig } from "./QueueConfig.ts"
import { Schedules, type StoredSchedule } from "./store/Schedules.ts"

/** Most schedules one queue holds (a create past it is refused; a replace is not). */
export const MAX_SCHEDULES = 10_000

/** A schedule's own settings, read here; the rest of its request is a publish's. */
const SCHEDULE_SETTINGS: ReadonlySet<string> = new Set(["svc-cron", "svc-schedule-id"])

/**
 * Request headers never stored with a schedule: those a publish never forwards (the queue's
 * credentials, framing), and the schedule's own.
 */
const NOT_STORED: ReadonlySet<string> = new Set([...NOT_FORWARDED, ...SCHEDULE_SETTINGS])

export interface ScheduleRequest<E, R> extends Operations.PublishRequest<E, R> {}

const invalid = (issues: ReadonlyArray<RequestIssue>) => new InvalidRequest({ issues: [...issues] })

/** A configuration value by its lowercase name, from the query (which wins) or the headers. */
const configValue = <E, R>(request: ScheduleRequest<E, R>, key: string) => {
  const query = [...(request.query ?? [])].reverse().find(([name]) => name.toLowerCase() === key)
  if (query !== undefined) return { value: query[1], issue: (problem: string): RequestIssue => ({ in: "query", parameter: query[0], problem }) }
  const header = request.headers[key]
  if (header === undefined) return undefined
  const value = typeof header === "string" ? header : header.join(", ")
  return { value, issue: (problem: string): RequestIssue => ({ in: "header", parameter: canonicalHeaderName(key), problem }) }
}

/**
 * Validates and stores a schedule: `Svc-Cron` (required), `Svc-Schedule-Id` (optional: replaces
 * that schedule), and the rest as a publish. Every problem is one issue; nothing is stored unless
 * there is none.
 */
export const createSchedule = Effect.fnUntraced(function*<E, R>(request: ScheduleRequest<E, R>) {
  const issues: Array<RequestIssue> = []
  const cronSource = configValue(request, "svc-cron")
  const cron = cronSource === undefined ? undefined : parseCron(cronSource.value)
  if (cronSource === undefined) {
    issues.push({ in: "header", parameter: "Svc-Cron", problem: "is required: a cron like \"*/5 * * * *\" (5 fields, optional CRON_TZ=<zone> prefix)" })
  } else if (cron !== undefined && "problem" in cron) issues.push(cronSource.issue(cron.problem))
  const idSource = configValue(request, "svc-schedule-id")
  if (idSource !== undefined && !SCHEDULE_ID_PATTERN.test(idSource.value.trim())) {
    issues.push(idSource.issue("expected 1-100 letters, digits, '.', '_' or '-' (not '.' or '..')"))
  }
  const dedup = configValue(request, "svc-deduplication-id")
  if (dedup !== undefined) {
    issues.push(dedup.issue("is not accepted on a schedule: every fire publishes a new message"))
  }
  const contentDedup = configValue(request, "svc-content-based-deduplication")
  if (contentDedup !== undefined) {
    issues.push(contentDedup.issue("is not accepted on a schedule: every fire publishes the same content and must not be dropped"))
  }
  const notBefore = configValue(request, "svc-not-before")
  if (notBefore !== undefined) issues.push(notBefore.issue("is not accepted on a schedule: its fires are timed by Svc-Cron"))

  // The rest is a publish, which refuses a schedule's own settings (Svc-Cron on a publish delivered once).
  const publishPart: ScheduleRequest<E, R> = {
    ...request,
    headers: Object.fromEntries(Object.entries(request.headers).filter(([name]) => !SCHEDULE_SETTINGS.has(name))),
    query: request.query?.filter(([name]) => !SCHEDULE_SETTINGS.has(name.toLowerCase()))
  }
  const prepared = yield* Operations.preparePublish(publishPart).pipe(
    Effect.mapError((error) => error instanceof InvalidRequest ? invalid([...issues, ...error.issues]) : error)
  )
  if (issues.length > 0 || cron === undefined || "problem" in cron) return yield* invalid(issues)

  const schedules = yield* Schedules
  const id = idSource?.value.trim() ?? `scd_${Crypto.randomUUID().replaceAll("-", "")}`
  if (idSource === undefined || Option.isNone(yield* schedules.get(id))) {
    if ((yield* schedules.count) >= MAX_SCHEDULES) {
      return yield* invalid([{ in: "path", parameter: "destination", problem: `the queue holds ${MAX_SCHEDULES} schedules, its most` }])
    }
  }
  // The configuration and the content type; every other request header only when the schedule forwards them.
  const forwardAll = configValue(request, "svc-header-forward")?.value.trim().toLowerCase() === "true"
  const headers: Record<string, string> = {}
  for (const [name, raw] of Object.entries(request.headers)) {
    if (raw === undefined || NOT_STORED.has(name)) continue
    if (!forwardAll && !name.startsWith("svc-") && name !== "content-type") continue
    headers[name] = typeof raw === "string" ? raw : raw.join(", ")
  }
  for (const [name, value] of request.query ?? []) {
    if (!NOT_STORED.has(name.toLowerCase())) headers[name.toLowerCase()] = value
  }
  const body = new Uint8Array(prepared.messages[0]?.body ?? new Uint8Array())
  const now = yield* Clock.currentTimeMillis
  yield* schedules.upsert({
    id,
    cron: cron.cron.text,
    // A URL with its pass-through query as the publish would deliver to it; a group by name.
    destination: prepared.isGroup ? request.destination : prepared.messages[0]!.url,
    headers,
    body,
    callerIp: request.callerIp,
    nextTick: nextTick(cron.cron, now)!
  })
  return { scheduleId: id }
})

/** How many next fire times a schedule shows. */
const SHOWN_FIRE_TIMES = 5

/** The API's view of a stored schedule. */
export const toSchedule = Effect.fnUntraced(function*(stored: StoredSchedule) {
  const settings = yield* QueueConfig
  const parsed = parsePublish({ headers: stored.headers, query: [] }, settings).settings
  const cron = cronOf(stored.cron)
  const schedule: Schedule = {
    scheduleId: stored.id,
    cron: stored.cron,
    destination: stored.destination,
    header: stored.headers,
    body: Buffer.from(stored.body).toString("base64"),
    settings: {
      method: parsed.delivery.method,
      retries: parsed.delivery.retries,
      timeoutMs: parsed.delivery.timeoutMs,
      delayMs: parsed.delivery.delayMs,
      headers: parsed.delivery.headers,
      ...(parsed.callback === undefined ? {} : { callback: parsed.callback.url }),
      ...(parsed.failureCallback === undefined ? {} : { failureCallback: parsed.failureCallback.url })
    },
    paused: stored.paused,
    nextFireTimes: stored.paused ? [] : [stored.nextTick, ...nextTicks(cron, stored.nextTick, SHOWN_FIRE_TIMES - 1)],
    createdAt: stored.createdAt,
    updatedAt: stored.updatedAt,
    ...(stored.lastFire === null ? {} : {
      lastFire: {
        tick: stored.lastFire.tick,
        firedAt: stored.lastFire.firedAt,
        messageIds: stored.lastFire.messageIds,
        ...(stored.lastFire.error === null ? {} : { error: stored.lastFire.error })
      }
    }),
    ...(stored.callerIp === null ? {} : { callerIP: stored.callerIp })
  }
  return schedule
})

const found = (scheduleId: string) => (stored: Option.Option<StoredSchedule>) =>
  Option.isNone(stored) ? Effect.fail(new ScheduleNotFound({ scheduleId })) : toSchedule(stored.value)

export const getSchedule = (scheduleId: string) => Effect.flatMap(Schedules.use((s) => s.get(scheduleId)), found(scheduleId))

/**
 * A page of schedules by id (`Pages.ts`). Paged because each schedule carries its body (up to
 * `QUEUE_MAX_MESSAGE_BYTES`): all 10,000 in one answer could be gigabytes.
 */
export const listSchedules = (query: Pages.PageQuery) =>
  Effect.gen(function*() {
    const page = yield* Pages.byKey({
      query,
      keyPattern: SCHEDULE_ID_PATTERN,
      read: (page) => Schedules.use((s) => s.list(page)),
      keyOf: (schedule) => schedule.id
    })
    const schedules = yield* Effect.forEach(page.items, toSchedule)
    return Pages.answer("schedules", { items: schedules, cursor: page.cursor })
  })

export const pauseSchedule = (scheduleId: string) =>
  Effect.flatMap(Schedules.use((s) => s.setPaused(scheduleId, true, undefined)), found(scheduleId))

/** Resumes from now: the ticks passed while paused are not fired. */
export const resumeSchedule = (scheduleId: string) =>
  Effect.gen(function*() {
    const schedules = yield* Schedules
    const stored = yield* schedules.get(scheduleId)
    if (Option.isNone(stored)) return yield* new ScheduleNotFound({ scheduleId })
    const next = stored.value.paused ? nextTick(cronOf(stored.value.cron), yield* Clock.currentTimeMillis) : undefined
    return yield* found(scheduleId)(yield* schedules.setPaused(scheduleId, false, next))
  })

export const deleteSchedule = (scheduleId: string) =>
  Effect.flatMap(
    Schedules.use((s) => s.delete(scheduleId)),
    (deleted) => deleted ? Effect.void : Effect.fail(new ScheduleNotFound({ scheduleId }))
  )
