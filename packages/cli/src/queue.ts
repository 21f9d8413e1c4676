/**
 * `svc queue`: operate a running queue over its internal RPC (QUEUE_URL, QUEUE_TOKEN): the dead-letter
 * queue, URL groups, schedules, the events log and bulk cancellation. Results go to stdout (lines, or
 * JSON with --json); a failure is one line on stderr and exit 1 (bin.ts).
 */
import {
  describeDlq,
  describeEvent,
  describeSchedule,
  describeScheduleDetails,
  describeTopic,
  describeTopicDetails,
  QueueRpcClient
} from "@svc/queue"
import { EVENT_STATES, MAX_BULK, MAX_EVENTS_PAGE, MAX_UNIX_MS } from "@svc/schema"
import { ServiceClient } from "@svc/platform"
import { Config, Console, Effect, Option, Redacted } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { wholeNumberFlag } from "./WholeNumberFlag.ts"
import { CommandFailed, UsageError } from "./CommandFailed.ts"
import { printJson, printLine } from "./Terminal.ts"

/**
 * Runs `use` with a client of the queue at QUEUE_URL (default http://localhost:8788) holding
 * QUEUE_TOKEN. Every failure becomes one line: the queue's own errors (no such DLQ message, no such
 * group, invalid input) carry a message for the operator; a refusal and an unreachable queue name
 * the URL.
 */
const withQueue = <A, E extends { readonly _tag: string; readonly message: string }>(
  use: (queue: QueueRpcClient["Service"]) => Effect.Effect<A, E>
) =>
  Effect.gen(function*() {
    const url = yield* ServiceClient.urlSetting("QUEUE_URL").pipe(Config.withDefault("http://localhost:8788"))
    const token = yield* Config.option(Config.Redacted("QUEUE_TOKEN"))
    // Empty is unset, as for the server.
    if (Option.isNone(token) || Redacted.value(token.value) === "") {
      return yield* Effect.fail(new CommandFailed("QUEUE_TOKEN is not set: the queue RPC needs it"))
    }
    const problem = ServiceClient.targetProblem({ url, urlVariable: "QUEUE_URL", token: Redacted.value(token.value), tokenVariable: "QUEUE_TOKEN" })
    if (problem !== undefined) return yield* Effect.fail(new CommandFailed(problem))
    return yield* QueueRpcClient.use(use).pipe(
      Effect.provide(QueueRpcClient.layer({ baseUrl: url, token: token.value })),
      Effect.catch((error) =>
        Effect.fail(
          new CommandFailed(
            error._tag === "RpcClientError"
              ? ServiceClient.describeFailure({ service: "the queue", url, tokenVariable: "QUEUE_TOKEN" }, error)
              : error._tag === "Unauthorized"
              ? `the queue at ${url} refused QUEUE_TOKEN (401): ${error.message}`
              : error._tag === "ServiceUnavailable"
              ? `the queue at ${url} is unavailable (503): ${error.message}`
              : error.message
          )
        )
      )
    )
  })

const json = Flag.Boolean("json").pipe(Flag.withDescription("Print JSON instead of lines"), Flag.withDefault(false))

const dlqList = Command.make(
  "list",
  {
    limit: wholeNumberFlag("limit").pipe(
      Flag.withDescription("At most this many messages (1-100, default 50)"),
      Flag.filter((limit) => limit >= 1 && limit <= 100, (limit) => `--limit must be from 1 to 100, got ${limit}`),
      Flag.optional
    ),
    url: Flag.String("url").pipe(Flag.withDescription("Only messages to this destination URL"), Flag.optional),
    group: Flag.String("group").pipe(Flag.withDescription("Only messages of this URL group"), Flag.optional),
    cursor: Flag.String("cursor").pipe(Flag.withDescription("The next page, as printed after a full page"), Flag.optional),
    json
  },
  Effect.fn(function*({ cursor, group, json, limit, url }) {
    const page = yield* withQueue((queue) =>
      queue.ListDlq({
        ...Option.match(limit, { onNone: () => ({}), onSome: (limit) => ({ limit }) }),
        ...Option.match(url, { onNone: () => ({}), onSome: (url) => ({ url }) }),
        ...Option.match(group, { onNone: () => ({}), onSome: (topicName) => ({ topicName }) }),
        ...Option.match(cursor, { onNone: () => ({}), onSome: (cursor) => ({ cursor }) })
      })
    )
    if (json) return yield* printJson(page)
    if (page.messages.length === 0) return yield* printLine("No dead-lettered messages.")
    yield* Effect.forEach(page.messages, (message) => printLine(describeDlq(message)), { discard: true })
    if (page.cursor !== undefined) yield* printLine(`More: repeat with --cursor=${page.cursor}`)
  })
).pipe(
  Command.withDescription("List dead-lettered messages, one per line: id, destination, last answer, when"),
  Command.withExamples([
    { command: "svc queue dlq list", description: "The first 50" },
    { command: "svc queue dlq list --limit 10 --url https://example.com/orders", description: "Those of one destination" }
  ])
)

const dlqId = Argument.String("dlqId").pipe(Argument.withDescription("The id `svc queue dlq list` prints first"))

const dlqRetry = Command.make(
  "retry",
  { dlqId, json },
  Effect.fn(function*({ dlqId, json }) {
    const retried = yield* withQueue((queue) => queue.RetryDlq({ dlqId }))
    if (json) return yield* printJson(retried)
    yield* printLine(`${dlqId}: re-enqueued message ${retried.messageId} (its retries start over)`)
  })
).pipe(Command.withDescription("Deliver a dead-lettered message again (it leaves the DLQ)"))

const dlqDelete = Command.make(
  "delete",
  { dlqId },
  Effect.fn(function*({ dlqId }) {
    yield* withQueue((queue) => queue.DeleteDlq({ dlqId }))
    yield* printLine(`${dlqId}: deleted`)
  })
).pipe(Command.withDescription("Remove a message from the dead-letter queue for good"))

/** `value` if given: an optional flag's value as an object to spread into a request. */
const given = <K extends string, A>(key: K, value: Option.Option<A>): { readonly [P in K]?: A } =>
  Option.match(value, { onNone: () => ({}), onSome: (a) => ({ [key]: a } as { readonly [P in K]?: A }) })

/**
 * ISO 8601 as a user writes it: a date, optionally a time (minutes, seconds, fractions) and an offset.
 * `Date.parse` alone takes far more ("-5" is May 2001, "1" is 2001), which made `--from -5` on a bulk
 * cancel or DLQ delete match every message.
 */
const ISO_TIME = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/i

/** A time flag: ISO 8601 (`2026-11-27T09:00:00Z`) or Unix milliseconds, as Unix milliseconds. */
const timeFlag = (name: string, description: string) =>
  Flag.String(name).pipe(
    Flag.withDescription(`${description} (ISO 8601 or Unix milliseconds)`),
    Flag.filterMap(
      (text) => {
        const at = /^\d+$/.test(text) ? Number(text) : ISO_TIME.test(text) ? Date.parse(text) : Number.NaN
        return at >= 0 && at <= MAX_UNIX_MS ? Option.some(at) : Option.none()
      },
      (text) => `--${name} ${JSON.stringify(text)}: expected an ISO 8601 time or Unix milliseconds (0 to ${MAX_UNIX_MS})`
    ),
    Flag.optional
  )

const urlFilter = Flag.String("url").pipe(Flag.withDescription("Only those to this destination URL"), Flag.optional)
const groupFilter = Flag.String("group").pipe(Flag.withDescription("Only those of this URL group"), Flag.optional)

const events = Command.make(
  "events",
  {
    message: Flag.String("message").pipe(Flag.withDescription("Only the events of this message"), Flag.optional),
    state: Flag.Literals("state", EVENT_STATES).pipe(Flag.withDescription("Only events of this state"), Flag.optional),
    url: urlFilter,
    group: groupFilter,
    from: timeFlag("from", "Only events at or after this time"),
    to: timeFlag("to", "Only events at or before this time"),
    count: wholeNumberFlag("count").pipe(
      Flag.withDescription(`At most this many events (1-${MAX_EVENTS_PAGE}, default 100)`),
      Flag.filter((count) => count >= 1 && count <= MAX_EVENTS_PAGE, (count) => `--count must be from 1 to ${MAX_EVENTS_PAGE}, got ${count}`),
      Flag.optional
    ),
    cursor: Flag.String("cursor").pipe(Flag.withDescription("The next (older) page, as printed after a full page"), Flag.optional),
    json
  },
  Effect.fn(function*({ count, cursor, from, group, json, message, state, to, url }) {
    const page = yield* withQueue((queue) =>
      queue.ListEvents({
        ...given("messageId", message),
        ...given("state", state),
        ...given("url", url),
        ...given("topicName", group),
        ...given("fromDate", from),
        ...given("toDate", to),
        ...given("count", count),
        ...given("cursor", cursor)
      })
    )
    if (json) return yield* printJson(page)
    if (page.events.length === 0) return yield* printLine("No events.")
    yield* Effect.forEach(page.events, (event) => printLine(describeEvent(event)), { discard: true })
    if (page.cursor !== undefined) yield* printLine(`More: repeat with --cursor=${page.cursor}`)
  })
).pipe(
  Command.withDescription("The events log, newest first: every state change of a message, one per line"),
  Command.withExamples([
    { command: "svc queue events --message 0194f3c2-...", description: "What happened to one message" },
    { command: "svc queue events --state failed --from 2026-11-27T00:00:00Z", description: "Today's moves to the DLQ" }
  ])
)

/**
 * Repeats a bounded bulk call (at most MAX_BULK a call) until it answers that nothing more matches,
 * with a progress line on stderr after each call that leaves more; the total.
 */
const untilDone = <E extends { readonly _tag: string; readonly message: string }>(
  what: string,
  call: (queue: QueueRpcClient["Service"]) => Effect.Effect<{ readonly n: number; readonly more: boolean }, E>
) =>
  Effect.gen(function*() {
    let total = 0
    while (true) {
      const { more, n } = yield* withQueue(call)
      total += n
      if (!more || n === 0) return total
      yield* Console.error(`${what} ${total} so far...`)
    }
  })

/** Ids, a filter, or --all: a bulk command never acts on everything by omission. */
const requireSelection = (commandPath: ReadonlyArray<string>, ids: ReadonlyArray<string>, filter: object, all: boolean, what: string) =>
  ids.length > 0 || Object.keys(filter).length > 0 || all
    ? Effect.void
    : Effect.fail(new UsageError(commandPath, `name the ${what}: ids, a filter flag, or --all for every one`))

const all = Flag.Boolean("all").pipe(Flag.withDescription("Every one (without ids or a filter flag)"), Flag.withDefault(false))

const cancel = Command.make(
  "cancel",
  {
    ids: Argument.String("messageId").pipe(Argument.withDescription("Messages to cancel"), Argument.variadic()),
    url: urlFilter,
    group: groupFilter,
    queueName: Flag.String("queue").pipe(Flag.withDescription("Only those of this FIFO queue"), Flag.optional),
    schedule: Flag.String("schedule").pipe(Flag.withDescription("Only those a schedule published"), Flag.optional),
    flowKey: Flag.String("flow-key").pipe(Flag.withDescription("Only those of this flow-control key"), Flag.optional),
    from: timeFlag("from", "Only those created at or after this time"),
    to: timeFlag("to", "Only those created at or before this time"),
    all
  },
  Effect.fn(function*({ all, flowKey, from, group, ids, queueName, schedule, to, url }) {
    // Created before the command started: a publisher that keeps sending cannot keep it running.
    const chosen = {
      ...given("url", url),
      ...given("topicName", group),
      ...given("queue", queueName),
      ...given("scheduleId", schedule),
      ...given("flowControlKey", flowKey),
      ...given("fromDate", from),
      ...given("toDate", to)
    }
    yield* requireSelection(["svc", "queue", "cancel"], ids, chosen, all, "messages to cancel")
    const filter = { ...chosen, toDate: Math.min(Date.now(), chosen.toDate ?? Infinity) }
    let cancelled = 0
    for (let at = 0; at < Math.max(ids.length, 1); at += MAX_BULK) {
      const chunk = ids.slice(at, at + MAX_BULK)
      cancelled += yield* untilDone("cancelled", (queue) =>
        Effect.map(
          queue.CancelMessages({ ...(chunk.length === 0 ? {} : { messageIds: chunk }), filter }),
          ({ cancelled, more }) => ({ n: cancelled, more })
        ))
    }
    yield* printLine(`cancelled ${cancelled} message${cancelled === 1 ? "" : "s"}`)
  })
).pipe(
  Command.withDescription(
    `Cancel queued messages by id or filter (they are not delivered; finished ones are left alone), ${MAX_BULK} a call until done`
  ),
  Command.withExamples([
    { command: "svc queue cancel --url https://example.com/orders", description: "Everything still queued for one destination" },
    { command: "svc queue cancel 0194f3c2-... 0194f3c3-...", description: "Two messages" }
  ])
)

/** `svc queue dlq retry-all` and `delete-all`: DLQ entries by id or filter, until done. */
const dlqBulk = (action: "retry" | "delete") =>
  Command.make(
    `${action}-all`,
    {
      ids: Argument.String("dlqId").pipe(Argument.withDescription("DLQ entries"), Argument.variadic()),
      url: urlFilter,
      group: groupFilter,
      status: wholeNumberFlag("status").pipe(Flag.withDescription("Only those whose last answer had this status"), Flag.optional),
      from: timeFlag("from", "Only those failed at or after this time"),
      to: timeFlag("to", "Only those failed at or before this time"),
      all
    },
    Effect.fn(function*({ all, from, group, ids, status, to, url }) {
      // Failed before the command started: a retried entry that fails again at once is not retried again.
      const chosen = {
        ...given("url", url),
        ...given("topicName", group),
        ...given("responseStatus", status),
        ...given("fromDate", from),
        ...given("toDate", to)
      }
      yield* requireSelection(["svc", "queue", "dlq", `${action}-all`], ids, chosen, all, "DLQ entries")
      const filter = { ...chosen, toDate: Math.min(Date.now(), chosen.toDate ?? Infinity) }
      let done = 0
      for (let at = 0; at < Math.max(ids.length, 1); at += MAX_BULK) {
        const chunk = ids.slice(at, at + MAX_BULK)
        const selection = { ...(chunk.length === 0 ? {} : { dlqIds: chunk }), filter }
        done += yield* untilDone(action === "retry" ? "retried" : "deleted", (queue) =>
          action === "retry"
            ? Effect.map(queue.RetryDlqEntries(selection), ({ more, retried }) => ({ n: retried, more }))
            : Effect.map(queue.DeleteDlqEntries(selection), ({ deleted, more }) => ({ n: deleted, more })))
      }
      yield* printLine(`${action === "retry" ? "retried" : "deleted"} ${done} DLQ entr${done === 1 ? "y" : "ies"}`)
    })
  ).pipe(
    Command.withDescription(
      action === "retry"
        ? `Deliver dead-lettered messages again by id or filter (their retries start over), ${MAX_BULK} a call until done`
        : `Remove dead-lettered messages for good by id or filter, ${MAX_BULK} a call until done`
    )
  )

const dlq = Command.make("dlq").pipe(
  Command.withDescription("The dead-letter queue: messages whose every retry failed"),
  Command.withSubcommands([dlqList, dlqRetry, dlqDelete, dlqBulk("retry"), dlqBulk("delete")])
)

/** `--limit` and `--cursor` of a list paged by key (`GET /v2/schedules`, `/v2/topics`). */
const pageFlags = (what: string) => ({
  limit: wholeNumberFlag("limit").pipe(
    Flag.withDescription(`At most this many ${what} (1-100, default 100)`),
    Flag.filter((limit) => limit >= 1 && limit <= 100, (limit) => `--limit must be from 1 to 100, got ${limit}`),
    Flag.optional
  ),
  cursor: Flag.String("cursor").pipe(Flag.withDescription("The next page, as printed after a full page"), Flag.optional)
})

const groupName = Argument.String("name").pipe(Argument.withDescription("The URL group's name"))

const groupsList = Command.make(
  "list",
  { ...pageFlags("URL groups"), json },
  Effect.fn(function*({ cursor, json, limit }) {
    const list = yield* withQueue((queue) => queue.ListTopics({ ...given("limit", limit), ...given("cursor", cursor) }))
    if (json) return yield* printJson(list)
    if (list.topics.length === 0) return yield* printLine("No URL groups.")
    yield* Effect.forEach(list.topics, (topic) => printLine(describeTopic(topic)), { discard: true })
    if (list.cursor !== undefined) yield* printLine(`More: repeat with --cursor=${list.cursor}`)
  })
).pipe(Command.withDescription("List URL groups by name, one per line with their endpoints"))

const groupsGet = Command.make(
  "get",
  { name: groupName, json },
  Effect.fn(function*({ json, name }) {
    const topic = yield* withQueue((queue) => queue.GetTopic({ name }))
    if (json) return yield* printJson(topic)
    yield* Effect.forEach(describeTopicDetails(topic), (line) => printLine(line), { discard: true })
  })
).pipe(Command.withDescription("Show a URL group: endpoints and default headers"))

const groupsAdd = Command.make(
  "add",
  {
    name: groupName,
    url: Argument.String("url").pipe(Argument.withDescription("The endpoint's URL")),
    endpointName: Flag.String("endpoint-name").pipe(
      Flag.withDescription("Name the endpoint (a named endpoint given a new URL moves there)"),
      Flag.optional
    ),
    json
  },
  Effect.fn(function*({ endpointName, json, name, url }) {
    const endpoint = Option.match(endpointName, { onNone: () => ({ url }), onSome: (endpointName) => ({ name: endpointName, url }) })
    const topic = yield* withQueue((queue) => queue.UpsertEndpoints({ name, endpoints: [endpoint] }))
    if (json) return yield* printJson(topic)
    yield* printLine(describeTopic(topic))
  })
).pipe(
  Command.withDescription("Add an endpoint to a URL group, creating the group if needed"),
  Command.withExamples([
    { command: "svc queue groups add orders https://billing.example.com/in --endpoint-name billing", description: "A named endpoint" }
  ])
)

const groupsDelete = Command.make(
  "delete",
  { name: groupName },
  Effect.fn(function*({ name }) {
    yield* withQueue((queue) => queue.DeleteTopic({ name }))
    yield* printLine(`${name}: deleted`)
  })
).pipe(Command.withDescription("Delete a URL group and its endpoints"))

const groups = Command.make("groups").pipe(
  Command.withDescription("URL groups: publish once, deliver to every endpoint"),
  Command.withSubcommands([groupsList, groupsGet, groupsAdd, groupsDelete])
)

const scheduleId = Argument.String("scheduleId").pipe(Argument.withDescription("The id `svc queue schedules list` prints first"))

const schedulesList = Command.make(
  "list",
  { ...pageFlags("schedules"), json },
  Effect.fn(function*({ cursor, json, limit }) {
    const list = yield* withQueue((queue) => queue.ListSchedules({ ...given("limit", limit), ...given("cursor", cursor) }))
    if (json) return yield* printJson(list)
    if (list.schedules.length === 0) return yield* printLine("No schedules.")
    yield* Effect.forEach(list.schedules, (schedule) => printLine(describeSchedule(schedule)), { discard: true })
    if (list.cursor !== undefined) yield* printLine(`More: repeat with --cursor=${list.cursor}`)
  })
).pipe(Command.withDescription("List schedules by id, one per line: id, cron, destination, next and last fire"))

const schedulesGet = Command.make(
  "get",
  { scheduleId, json },
  Effect.fn(function*({ json, scheduleId }) {
    const schedule = yield* withQueue((queue) => queue.GetSchedule({ scheduleId }))
    if (json) return yield* printJson(schedule)
    yield* Effect.forEach(describeScheduleDetails(schedule), (line) => printLine(line), { discard: true })
  })
).pipe(Command.withDescription("Show a schedule: its next fire times, last fire and stored headers"))

const schedulesAdd = Command.make(
  "add",
  {
    destination: Argument.String("destination").pipe(Argument.withDescription("A URL or a URL group name")),
    cron: Argument.String("cron").pipe(Argument.withDescription("5 fields, optionally prefixed CRON_TZ=<zone>, quoted")),
    body: Flag.String("body").pipe(Flag.withDescription("The body each fire publishes"), Flag.optional),
    header: Flag.String("header").pipe(
      Flag.withDescription("A publish header as \"Name: value\" (Svc-Retries, Svc-Callback, Svc-Forward-<Name>, Content-Type, ...); repeatable"),
      Flag.atLeast(0)
    ),
    id: Flag.String("id").pipe(Flag.withDescription("Create or replace the schedule with this id"), Flag.optional),
    json
  },
  Effect.fn(function*({ body, cron, destination, header, id, json }) {
    const usage = (problem: string) => Effect.fail(new UsageError(["svc", "queue", "schedules", "add"], problem))
    const headers: Record<string, string> = {}
    for (const line of header) {
      const colon = line.indexOf(":")
      if (colon <= 0) return yield* usage(`--header ${JSON.stringify(line)}: expected "Name: value"`)
      // one header a flag: "X-A: b\r\nX-Evil: 1" is not two
      if (/[\r\n]/.test(line)) return yield* usage(`--header ${JSON.stringify(line)}: one header a flag, no line break`)
      headers[line.slice(0, colon).trim()] = line.slice(colon + 1).trim()
    }
    // The queue keeps its own headers (Svc-*) and Content-Type; any other reaches the destination only as
    // Svc-Forward-<Name> or under Svc-Header-Forward, and was silently dropped.
    const forwardAll = Object.entries(headers).some(([name, value]) => name.toLowerCase() === "svc-header-forward" && value.toLowerCase() === "true")
    const dropped = Object.keys(headers).find((name) => !/^svc-/i.test(name) && name.toLowerCase() !== "content-type")
    if (dropped !== undefined && !forwardAll) {
      return yield* usage(
        `--header ${JSON.stringify(dropped)} would not reach the destination: name it Svc-Forward-${dropped}, or add --header "Svc-Header-Forward: true"`
      )
    }
    const created = yield* withQueue((queue) =>
      queue.AddSchedule({
        destination,
        cron,
        headers,
        ...Option.match(body, { onNone: () => ({}), onSome: (text) => ({ body: new TextEncoder().encode(text) }) }),
        ...Option.match(id, { onNone: () => ({}), onSome: (scheduleId) => ({ scheduleId }) })
      })
    )
    if (json) return yield* printJson(created)
    yield* printLine(describeSchedule(yield* withQueue((queue) => queue.GetSchedule({ scheduleId: created.scheduleId }))))
  })
).pipe(
  Command.withDescription("Create (or with --id replace) a schedule that publishes to the destination on every cron tick"),
  Command.withExamples([
    {
      command: "svc queue schedules add https://example.com/report \"CRON_TZ=Europe/Berlin 0 9 * * 1-5\" --header \"Svc-Retries: 5\" --id weekday-report",
      description: "09:00 Berlin time on weekdays"
    }
  ])
)

const scheduleAction = (name: "pause" | "resume" | "delete", description: string) =>
  Command.make(
    name,
    { scheduleId },
    Effect.fn(function*({ scheduleId }) {
      if (name === "delete") {
        yield* withQueue((queue) => queue.DeleteSchedule({ scheduleId }))
        return yield* printLine(`${scheduleId}: deleted`)
      }
      const schedule = yield* withQueue((queue) =>
        name === "pause" ? queue.PauseSchedule({ scheduleId }) : queue.ResumeSchedule({ scheduleId })
      )
      yield* printLine(describeSchedule(schedule))
    })
  ).pipe(Command.withDescription(description))

const schedules = Command.make("schedules").pipe(
  Command.withDescription("Schedules: publish on every tick of a cron"),
  Command.withSubcommands([
    schedulesList,
    schedulesGet,
    schedulesAdd,
    scheduleAction("pause", "Stop firing (the schedule is kept)"),
    scheduleAction("resume", "Fire again from the next tick (the ticks missed while paused are not fired)"),
    scheduleAction("delete", "Delete a schedule (messages it already published stay)")
  ])
)

export const queue = Command.make("queue").pipe(
  Command.withDescription(
    "Operate a running queue (QUEUE_URL, QUEUE_TOKEN): dead-letter queue, URL groups, schedules, the events log, cancellation"
  ),
  Command.withSubcommands([dlq, groups, schedules, events, cancel])
)

