/**
 * `POST /v2/batch` (and the RPC's `PublishBatch`): several publishes in one request, stored in one
 * transaction. Each element goes through the checks of a single publish (`Operations.checkPublish`
 * and `publishMessages`, the two halves of `preparePublish`: destination, every `Svc-*` header,
 * private-address refusals, the body cap), so an element means exactly what
 * `POST /v2/publish/<destination>` with the same headers and body means.
 *
 * **All or nothing**: every element is checked first; any problem refuses the whole batch with one
 * 400 naming each bad element by its index (`[3].destination`, `[7].headers.Svc-Retries`) and
 * nothing is stored. Caps: `QUEUE_MAX_BATCH_MESSAGES` elements (400) and `QUEUE_MAX_BATCH_BYTES`
 * bytes (413; on HTTP the request body, checked before it is read; on the RPC the decoded bodies).
 */
import { JsonBody } from "@svc/platform"
import type { BatchElement, BatchResult, RequestIssue } from "@svc/schema"
import { BatchTooLarge, InvalidRequest } from "@svc/schema"
import { Effect, Result } from "effect"
import type { CheckedPublish } from "./Operations.ts"
import { CHECK_CONCURRENCY, checkPublish, publishMessages } from "./Operations.ts"
import { lowercaseHeaders } from "./Publish.ts"
import { QueueConfig } from "./QueueConfig.ts"
import { Messages } from "./store/Messages.ts"

/** The issue of a batch with more elements than `QUEUE_MAX_BATCH_MESSAGES` (none for an empty one). */
export const batchSizeIssue = (count: number, max: number): RequestIssue | undefined =>
  count === 0
    ? { in: "body", parameter: "", problem: "is an empty batch: expected a JSON array of at least one message" }
    : count > max
    ? { in: "body", parameter: "", problem: `holds ${count} messages, more than QUEUE_MAX_BATCH_MESSAGES (${max}) per batch` }
    : undefined

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/

/** The bytes of an element's body, or why they cannot be had (base64 that is not, text UTF-8 cannot carry). */
const elementBody = (element: BatchElement): Uint8Array | string => {
  const body = element.body ?? ""
  if (element.bodyEncoding !== "base64") {
    // Over HTTP the JSON body's rules (JsonBody.ts) refuse this first; an RPC payload arrives unchecked.
    const problem = JsonBody.unpairedSurrogateProblem(body)
    return problem === undefined ? Buffer.from(body, "utf8") : `${problem} (bytes go as bodyEncoding base64)`
  }
  if (!BASE64.test(body)) return "is not valid base64 (bodyEncoding is base64: A-Z, a-z, 0-9, + and / in groups of 4, = padding)"
  return Buffer.from(body, "base64")
}

/** A publish's issue as an issue of element `index` of the batch body. */
const ofElement = (index: number) => (issue: RequestIssue): RequestIssue => ({
  in: "body",
  parameter: issue.in === "header" ? `[${index}].headers.${issue.parameter}` : `[${index}].${issue.parameter || "body"}`,
  problem: issue.problem
})


/**
 * The elements checked as publishes (`Operations.checkPublish`), once per distinct destination,
 * headers and queue: a batch of one destination and one set of headers costs one check (and one
 * URL group read, so every element of a group sees the same endpoints), not one per element.
 */
const checkElements = (elements: ReadonlyArray<BatchElement>, callerIp: string | undefined) =>
  Effect.gen(function*() {
    const keyOf = elements.map((element) => JSON.stringify([element.destination, element.headers ?? {}, element.queue ?? null]))
    const firstOf = new Map<string, number>()
    keyOf.forEach((key, index) => {
      if (!firstOf.has(key)) firstOf.set(key, index)
    })
    const check = (element: BatchElement) => {
      // Names lowercase, as node gives a publish's headers (what the publish parser reads).
      const { headers, issues } = lowercaseHeaders(element.headers ?? {})
      return issues.length > 0
        ? Effect.succeed(Result.fail(new InvalidRequest({ issues: [...issues] })))
        : Effect.result(checkPublish({ destination: element.destination, headers, callerIp, queueName: element.queue }))
    }
    const checks = new Map(
      yield* Effect.forEach(
        [...firstOf],
        ([key, index]) => Effect.map(check(elements[index]!), (result) => [key, result] as const),
        { concurrency: CHECK_CONCURRENCY }
      )
    )
    return keyOf.map((key) => checks.get(key)!)
  })

/** One element with its body: its messages and deduplication id, or its issues (named by index). */
const prepareElement = (
  element: BatchElement,
  index: number,
  checked: Result.Result<CheckedPublish, InvalidRequest>,
  callerIp: string | undefined
) => {
  const issues: Array<RequestIssue> = Result.isFailure(checked) ? checked.failure.issues.map(ofElement(index)) : []
  const body = elementBody(element)
  if (typeof body === "string") issues.push({ in: "body", parameter: `[${index}].body`, problem: body })
  if (issues.length > 0 || Result.isFailure(checked) || typeof body === "string") return Effect.succeed(Result.fail(issues))
  return publishMessages({ destination: element.destination, callerIp, queueName: element.queue }, checked.success, body).pipe(
    Effect.mapError((error): ReadonlyArray<RequestIssue> => [
      // "The message body is larger than ..." as the problem of `[i].body`: "is larger than ...".
      { in: "body", parameter: `[${index}].body`, problem: error.message.replace(/^The message body /, "") }
    ]),
    Effect.result
  )
}

/** Checks every element, then stores them all in one transaction; the answers in order. */
export const publishBatch = Effect.fnUntraced(function*(
  elements: ReadonlyArray<BatchElement>,
  options: { readonly callerIp?: string | undefined } = {}
) {
  const settings = yield* QueueConfig
  const sizeIssue = batchSizeIssue(elements.length, settings.maxBatchMessages)
  if (sizeIssue !== undefined) return yield* new InvalidRequest({ issues: [sizeIssue] })

  const checks = yield* checkElements(elements, options.callerIp)
  const prepared = yield* Effect.forEach(elements, (element, index) => prepareElement(element, index, checks[index]!, options.callerIp))
  const issues = prepared.flatMap((result) => Result.isFailure(result) ? result.failure : [])
  if (issues.length > 0) return yield* new InvalidRequest({ issues })
  const publishes = prepared.map((result) => Result.getOrThrow(result))

  // The RPC carries the bodies decoded: the byte cap counts them (on HTTP the raw body was capped).
  const bytes = publishes.reduce((sum, publish) => sum + (publish.messages[0]?.body.length ?? 0), 0)
  if (bytes > settings.maxBatchBytes) return yield* new BatchTooLarge({ maxBytes: settings.maxBatchBytes })

  const answers = yield* Messages.use((store) =>
    store.publishBatch(publishes.map((publish) => ({ messages: publish.messages, dedupId: publish.deduplicationId })))
  )
  const result: BatchResult = answers.map((published, index) => publishes[index]!.isGroup ? published : published[0]!)
  return result
})
