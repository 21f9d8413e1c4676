/**
 * `svc queue`: operate a running queue over its internal RPC (QUEUE_URL, QUEUE_TOKEN): the dead-letter
 * queue, URL groups, schedules, the events log and bulk cancellation. Results go to stdout (lines, or
 * JSON with --json); a failure is one line on stderr and exit 1 (bin.ts).
 */
import { describeDlq, describeSchedule, describeScheduleDetails, describeTopic, describeTopicDetails, QueueRpcClient } from "@svc/queue"
import { ServiceClient } from "@svc/platform"
import { Config, Console, Effect, Option, Redacted } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { CommandFailed } from "./CommandFailed.ts"

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
    const url = yield* Config.String("QUEUE_URL").pipe(Config.withDefault("http://localhost:8788"))
    const token = yield* Config.option(Config.Redacted("QUEUE_TOKEN"))
    // Empty is unset, as for the server.
    if (Option.isNone(token) || Redacted.value(token.value) === "") {
      return yield* Effect.fail(new CommandFailed("QUEUE_TOKEN is not set: the queue RPC needs it"))
    }
    return yield* QueueRpcClient.use(use).pipe(
      Effect.provide(QueueRpcClient.layer({ baseUrl: url, token: token.value })),
      Effect.catch((error) =>
        Effect.fail(
          new CommandFailed(
            error._tag === "RpcClientError"
              ? `no answer from the queue at ${url}: ${ServiceClient.innermostMessage(error) ?? error.message}`
              : error._tag === "Unauthorized"
              ? `the queue at ${url} refused QUEUE_TOKEN: ${error.message}`
              : error._tag === "ServiceUnavailable"
              ? `the queue at ${url}: ${error.message}`
              : error.message
          )
        )
      )
    )
  })

const json = Flag.Boolean("json").pipe(Flag.withDescription("Print JSON instead of lines"), Flag.withDefault(false))
const printJson = (value: unknown) => Console.log(JSON.stringify(value, null, 2))

const dlqList = Command.make(
  "list",
  {
    limit: Flag.Int("limit").pipe(
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
    if (page.messages.length === 0) return yield* Console.log("No dead-lettered messages.")
    yield* Effect.forEach(page.messages, (message) => Console.log(describeDlq(message)), { discard: true })
    if (page.cursor !== undefined) yield* Console.log(`More: repeat with --cursor ${page.cursor}`)
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
    yield* Console.log(`${dlqId}: re-enqueued message ${retried.messageId} (its retries start over)`)
  })
).pipe(Command.withDescription("Deliver a dead-lettered message again (it leaves the DLQ)"))

const dlqDelete = Command.make(
  "delete",
  { dlqId },
  Effect.fn(function*({ dlqId }) {
    yield* withQueue((queue) => queue.DeleteDlq({ dlqId }))
    yield* Console.log(`${dlqId}: deleted`)
  })
).pipe(Command.withDescription("Remove a message from the dead-letter queue for good"))

const dlq = Command.make("dlq").pipe(
  Command.withDescription("The dead-letter queue: messages whose every retry failed"),
  Command.withSubcommands([dlqList, dlqRetry, dlqDelete])
)

const groupName = Argument.String("name").pipe(Argument.withDescription("The URL group's name"))

const groupsList = Command.make(
  "list",
  { json },
  Effect.fn(function*({ json }) {
    const list = yield* withQueue((queue) => queue.ListTopics())
    if (json) return yield* printJson(list)
    if (list.topics.length === 0) return yield* Console.log("No URL groups.")
    yield* Effect.forEach(list.topics, (topic) => Console.log(describeTopic(topic)), { discard: true })
  })
).pipe(Command.withDescription("List URL groups, one per line with their endpoints"))

const groupsGet = Command.make(
  "get",
  { name: groupName, json },
  Effect.fn(function*({ json, name }) {
    const topic = yield* withQueue((queue) => queue.GetTopic({ name }))
    if (json) return yield* printJson(topic)
    yield* Effect.forEach(describeTopicDetails(topic), (line) => Console.log(line), { discard: true })
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
    yield* Console.log(describeTopic(topic))
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
    yield* Console.log(`${name}: deleted`)
  })
).pipe(Command.withDescription("Delete a URL group and its endpoints"))

const groups = Command.make("groups").pipe(
  Command.withDescription("URL groups: publish once, deliver to every endpoint"),
  Command.withSubcommands([groupsList, groupsGet, groupsAdd, groupsDelete])
)

const scheduleId = Argument.String("scheduleId").pipe(Argument.withDescription("The id `svc queue schedules list` prints first"))

const schedulesList = Command.make(
  "list",
  { json },
  Effect.fn(function*({ json }) {
    const list = yield* withQueue((queue) => queue.ListSchedules())
    if (json) return yield* printJson(list)
    if (list.schedules.length === 0) return yield* Console.log("No schedules.")
    yield* Effect.forEach(list.schedules, (schedule) => Console.log(describeSchedule(schedule)), { discard: true })
  })
).pipe(Command.withDescription("List schedules, one per line: id, cron, destination, next and last fire"))

const schedulesGet = Command.make(
  "get",
  { scheduleId, json },
  Effect.fn(function*({ json, scheduleId }) {
    const schedule = yield* withQueue((queue) => queue.GetSchedule({ scheduleId }))
    if (json) return yield* printJson(schedule)
    yield* Effect.forEach(describeScheduleDetails(schedule), (line) => Console.log(line), { discard: true })
  })
).pipe(Command.withDescription("Show a schedule: its next fire times, last fire and stored headers"))

const schedulesAdd = Command.make(
  "add",
  {
    destination: Argument.String("destination").pipe(Argument.withDescription("A URL or a URL group name")),
    cron: Argument.String("cron").pipe(Argument.withDescription("5 fields, optionally prefixed CRON_TZ=<zone>, quoted")),
    body: Flag.String("body").pipe(Flag.withDescription("The body each fire publishes"), Flag.optional),
    header: Flag.String("header").pipe(
      Flag.withDescription("A publish header as \"Name: value\" (Svc-Retries, Svc-Callback, Content-Type, ...); repeatable"),
      Flag.atLeast(0)
    ),
    id: Flag.String("id").pipe(Flag.withDescription("Create or replace the schedule with this id"), Flag.optional),
    json
  },
  Effect.fn(function*({ body, cron, destination, header, id, json }) {
    const headers: Record<string, string> = {}
    for (const line of header) {
      const colon = line.indexOf(":")
      if (colon <= 0) return yield* Effect.fail(new CommandFailed(`--header ${JSON.stringify(line)}: expected "Name: value"`))
      headers[line.slice(0, colon).trim()] = line.slice(colon + 1).trim()
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
    yield* Console.log(describeSchedule(yield* withQueue((queue) => queue.GetSchedule({ scheduleId: created.scheduleId }))))
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
        return yield* Console.log(`${scheduleId}: deleted`)
      }
      const schedule = yield* withQueue((queue) =>
        name === "pause" ? queue.PauseSchedule({ scheduleId }) : queue.ResumeSchedule({ scheduleId })
      )
      yield* Console.log(describeSchedule(schedule))
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
  Command.withDescription("Operate a running queue (QUEUE_URL, QUEUE_TOKEN): dead-letter queue, URL groups and schedules"),
  Command.withSubcommands([dlq, groups, schedules])
)

