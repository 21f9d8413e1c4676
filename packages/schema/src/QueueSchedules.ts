/**
 * The queue's schedules (issue 17): the `schedules` group of `QueueApi` and the schedule procedures
 * of `QueueRpcs` (both assembled in `Queue.ts`, which adds the queue's auth middleware), with their
 * records. Definitions only.
 *
 * `POST /v2/schedules/<destination>` (create or replace) is not part of the `HttpApi`: like publish,
 * its configuration travels in open-ended header families and its body is any bytes, so the
 * service serves it as a raw route; it answers {@link CreatedSchedule}.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema } from "effect/http-api"
import { Rpc } from "effect/rpc"
import { ApiError, InvalidRequest } from "./Errors.ts"
import { RequestString, UrlParam } from "./Limits.ts"
import { PagePayload, PageQuery } from "./QueueLimits.ts"

/** A schedule id: chosen with `Svc-Schedule-Id` (not `.` or `..`: it is a URL path segment), or `scd_` and 32 hex digits. */
export const SCHEDULE_ID_PATTERN = /^(?!\.\.?$)[A-Za-z0-9._-]{1,100}$/
export const ScheduleId = Schema.String.check(
  Schema.isPattern(SCHEDULE_ID_PATTERN, { message: "Expected a schedule id of 1-100 letters, digits, '.', '_' or '-' (not '.' or '..')" })
)

export const CreatedSchedule = Schema.Struct({ scheduleId: Schema.String }).annotate({ identifier: "CreatedSchedule" })
export type CreatedSchedule = typeof CreatedSchedule.Type

/** How each fire's message is delivered, as the stored headers configure it. */
export const ScheduleSettings = Schema.Struct({
  method: Schema.String,
  retries: Schema.Int,
  timeoutMs: Schema.Int,
  delayMs: Schema.Int,
  /** Headers sent to the destination (forwarded ones, `content-type`). */
  headers: Schema.Record(Schema.String, Schema.String),
  callback: Schema.optionalKey(Schema.String),
  failureCallback: Schema.optionalKey(Schema.String)
}).annotate({ identifier: "ScheduleSettings" })

export const ScheduleFire = Schema.Struct({
  /** Unix ms of the cron time fired. */
  tick: Schema.Number,
  firedAt: Schema.Number,
  /** The messages it published (one per endpoint for a URL group). */
  messageIds: Schema.Array(Schema.String),
  /** Why it published nothing, when its request was refused at fire time (e.g. the URL group is gone). */
  error: Schema.optionalKey(Schema.String)
}).annotate({ identifier: "ScheduleFire" })

export const Schedule = Schema.Struct({
  scheduleId: Schema.String,
  /** `Svc-Cron` as given, `CRON_TZ=` prefix included. */
  cron: Schema.String,
  /** A URL or a URL group name. */
  destination: Schema.String,
  /** The stored configuration and forwarded headers (names lowercase). */
  header: Schema.Record(Schema.String, Schema.String),
  /** The body, base64-encoded. */
  body: Schema.String,
  settings: ScheduleSettings,
  paused: Schema.Boolean,
  /** Unix ms of the next fires (empty while paused). */
  nextFireTimes: Schema.Array(Schema.Number),
  lastFire: Schema.optionalKey(ScheduleFire),
  createdAt: Schema.Number,
  updatedAt: Schema.Number,
  callerIP: Schema.optionalKey(Schema.String)
}).annotate({ identifier: "Schedule" })
export type Schedule = typeof Schedule.Type

export const ScheduleList = Schema.Struct({
  schedules: Schema.Array(Schedule),
  /** Pass as `cursor` for the next page; absent on the last page. */
  cursor: Schema.optionalKey(Schema.String)
}).annotate({ identifier: "ScheduleList" })
export type ScheduleList = typeof ScheduleList.Type

export class ScheduleNotFound extends ApiError<ScheduleNotFound>()("ScheduleNotFound", {
  status: 404,
  fields: { scheduleId: Schema.String },
  message: ({ scheduleId }) => `No schedule with id ${scheduleId}`
}) {}

/** The schedule routes but create (see the module comment); `Queue.ts` adds the queue's auth. */
export class SchedulesGroup extends HttpApiGroup.make("schedules").add(
  HttpApiEndpoint.get("list", "/v2/schedules", { query: PageQuery, success: ScheduleList, error: InvalidRequest }),
  HttpApiEndpoint.get("get", "/v2/schedules/:scheduleId", {
    params: { scheduleId: ScheduleId },
    success: Schedule,
    error: ScheduleNotFound
  }),
  HttpApiEndpoint.delete("delete", "/v2/schedules/:scheduleId", {
    params: { scheduleId: ScheduleId },
    success: HttpApiSchema.NoContent,
    error: ScheduleNotFound
  }),
  HttpApiEndpoint.post("pause", "/v2/schedules/:scheduleId/pause", {
    params: { scheduleId: ScheduleId },
    success: Schedule,
    error: ScheduleNotFound
  }),
  HttpApiEndpoint.post("resume", "/v2/schedules/:scheduleId/resume", {
    params: { scheduleId: ScheduleId },
    success: Schedule,
    error: ScheduleNotFound
  })
) {}

// -----------------------------------------------------------------------------
// RPC (in QueueRpcs)
// -----------------------------------------------------------------------------

const ScheduleIdParam = RequestString({ maxLength: 100 })

/**
 * Like `POST /v2/schedules/<destination>` with `Svc-Cron: <cron>`: `headers` are the publish
 * headers (`Svc-Retries`, `Svc-Forward-<Name>`, `Content-Type`, ...), `scheduleId` replaces the
 * schedule with that id (`Svc-Schedule-Id`).
 */
export const AddScheduleRpc = Rpc.make("AddSchedule", {
  payload: {
    destination: UrlParam,
    cron: RequestString({ maxLength: 200 }),
    scheduleId: Schema.optionalKey(ScheduleIdParam),
    body: Schema.optionalKey(Schema.Uint8Array),
    headers: Schema.optionalKey(Schema.Record(Schema.String, Schema.String))
  },
  success: CreatedSchedule,
  error: InvalidRequest
})

/** A page of schedules by id, as `GET /v2/schedules`; `limit` 1-100 (the default), checked by the handler. */
export const ListSchedulesRpc = Rpc.make("ListSchedules", {
  payload: PagePayload,
  success: ScheduleList,
  error: InvalidRequest
})

export const GetScheduleRpc = Rpc.make("GetSchedule", {
  payload: { scheduleId: ScheduleIdParam },
  success: Schedule,
  error: ScheduleNotFound
})

export const PauseScheduleRpc = Rpc.make("PauseSchedule", {
  payload: { scheduleId: ScheduleIdParam },
  success: Schedule,
  error: ScheduleNotFound
})

export const ResumeScheduleRpc = Rpc.make("ResumeSchedule", {
  payload: { scheduleId: ScheduleIdParam },
  success: Schedule,
  error: ScheduleNotFound
})

export const DeleteScheduleRpc = Rpc.make("DeleteSchedule", {
  payload: { scheduleId: ScheduleIdParam },
  error: ScheduleNotFound
})
