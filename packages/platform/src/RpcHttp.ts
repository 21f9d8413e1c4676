/**
 * The HTTP effect of an internal RPC server (`POST /rpc`, NDJSON), the same for every service.
 *
 * A body is checked whole before effect's RPC server sees any of it, and refused with a 400 naming
 * the line and the problem, so a refused body has changed nothing. Unchecked, the server ran the
 * lines before a bad one and then answered oddly for it (an outside sweep, on all three services):
 * a request id given twice ran the first request and interrupted the exchange, which the suite
 * answered "503 The server is shutting down" although the work was done (a client retrying the 503
 * did it twice); a last line without its newline was dropped with an empty 200; a line that is not
 * JSON or not a request, or a payload its procedure cannot decode, came back as a "defect" naming
 * effect's internal errors (`NdjsonDecodeError`, a `TypeError`). Over HTTP, effect's `RpcClient`
 * sends only `Request` messages, each line ending with a newline: that is what is accepted.
 *
 * Its answers are buffered without a bound. effect's server writes the answer to a request it cannot
 * decode while it is still reading the body, into a queue of 16 that nothing drains before the whole
 * body is read: a body holding 17 such requests never got an answer, and its connection stayed open
 * (an outside sweep, on all three services). The body is bounded ({@link MAX_RPC_BODY_BYTES}) and
 * every caller holds the admin token, so what the buffer holds is bounded by what that caller sent,
 * plus the progress events of a streamed procedure its caller reads slowly.
 *
 * A body whose `Content-Type` names a charset other than UTF-8 is refused 415 before it is read
 * (`JsonBody.charsetProblem`): its lines are JSON, which is UTF-8 (RFC 8259).
 */
import { InvalidRequest, type RequestIssue, UnsupportedMediaType } from "@svc/schema"
import { ByteSize, Context, Effect, Exit, Result, Schema } from "effect"
import { HttpIncomingMessage, HttpServerError, HttpServerRequest, HttpServerResponse } from "effect/http"
import type { RpcGroup } from "effect/rpc"
import { Rpc, RpcServer } from "effect/rpc"
import { toIssues } from "./Http.ts"
import * as JsonBody from "./JsonBody.ts"

/** The largest RPC body (413 beyond): what effect's NDJSON reader buffers at most. */
export const MAX_RPC_BODY_BYTES = 16 * 1024 * 1024

/** One line as effect's `RpcClient` writes it (`RpcMessage.RequestEncoded`); the payload is its procedure's. */
const RequestLine = Schema.Struct({
  _tag: Schema.Literal("Request"),
  id: Schema.Union([Schema.String, Schema.Finite]),
  tag: Schema.String,
  payload: Schema.Unknown,
  headers: Schema.Array(Schema.Tuple([Schema.String, Schema.String])),
  isNotification: Schema.optionalKey(Schema.Literal(true)),
  discard: Schema.optionalKey(Schema.Literal(true)),
  traceId: Schema.optionalKey(Schema.String),
  spanId: Schema.optionalKey(Schema.String),
  sampled: Schema.optionalKey(Schema.Boolean)
})
const decodeRequestLine = Schema.decodeUnknownExit(RequestLine)

const lineIssue = (line: number, problem: string, field?: string): RequestIssue => ({
  in: "body",
  parameter: field === undefined || field === "" ? `line ${line}` : `line ${line} ${field}`,
  problem
})

/** Issues of a schema's failure, each named by its line and its field within the line. */
const schemaIssues = (error: Schema.SchemaError, line: number, prefix: string): Array<RequestIssue> =>
  toIssues(error, "body").map((issue) =>
    lineIssue(line, issue.problem, [prefix, issue.parameter].filter((part) => part !== "").join("."))
  )

/**
 * Why an RPC body may not be run, as issues (none: it may). Each non-empty line must be a JSON
 * request (by the suite's JSON rules, {@link JsonBody}) for a procedure of `group`, its payload
 * decoding by that procedure's schema (and its parse options), with an id of its own (a whole number
 * within ±2^53 or a string; notifications, which are never answered, excepted), and end with a newline.
 */
export const bodyIssues = <Rpcs extends Rpc.Any>(group: RpcGroup.RpcGroup<Rpcs>, bytes: Uint8Array): Array<RequestIssue> => {
  const text = JsonBody.decodeText(bytes)
  if (Result.isFailure(text)) return [text.failure]
  const lines = text.success.split("\n")
  // nothing to run: the server answered an empty 200, which read as a call that ran and returned nothing
  if (lines.every((line) => line === "" || line === "\r")) {
    return [{ in: "body", parameter: "", problem: "holds no request: send one JSON request per line (NDJSON), each ending with a newline" }]
  }
  const issues: Array<RequestIssue> = []
  const firstLineOf = new Map<string | number, number>()
  lines.forEach((raw, index) => {
    const line = index + 1
    const content = raw.endsWith("\r") ? raw.slice(0, -1) : raw
    if (content === "") return
    if (index === lines.length - 1) {
      issues.push(lineIssue(line, "has no newline at its end: every NDJSON line ends with one, the last too"))
      return
    }
    // a string that is not well-formed Unicode is the procedure's to refuse: its typed `InvalidRequest`
    // reaches effect's client as such, where a 400 here would be a transport error to it
    const json = JsonBody.parseText(content, "a JSON request", { wellFormedStrings: false })
    if (Result.isFailure(json)) {
      issues.push(lineIssue(line, json.failure.problem, json.failure.parameter))
      return
    }
    const request = decodeRequestLine(json.success)
    if (Exit.isFailure(request)) {
      const cause = request.cause.reasons[0]
      if (cause?._tag === "Fail") issues.push(...schemaIssues(cause.error, line, ""))
      return
    }
    const { id, tag, payload, isNotification } = request.value
    const rpc = group.requests.get(tag) as Rpc.AnyWithProps | undefined
    if (rpc === undefined) {
      issues.push(lineIssue(line, `names no procedure of this server: it has ${[...group.requests.keys()].join(", ")}`, "tag"))
      return
    }
    // with the procedure's own parse options, as the server decodes it (the queue's refuse unknown keys)
    const decoded = Schema.decodeUnknownExit(
      Schema.toCodecJson(rpc.payloadSchema) as unknown as Schema.Codec<unknown, unknown>,
      Context.get(rpc.annotations, Rpc.ParseOptions)
    )(payload)
    if (Exit.isFailure(decoded)) {
      const cause = decoded.cause.reasons[0]
      if (cause?._tag === "Fail") issues.push(...schemaIssues(cause.error, line, "payload"))
    }
    if (typeof id === "number" && !Number.isSafeInteger(id)) {
      // JSON numbers past 2^53 (or with a fraction) do not survive as themselves: 9007199254740993 read as ...992
      issues.push(lineIssue(line, `${JSON.stringify(id)} is not a whole number within ±2^53: send the id as a string`, "id"))
      return
    }
    // a notification gets no answer, so its id names nothing: the server numbers notifications itself
    if (isNotification === true) return
    const earlier = firstLineOf.get(id)
    if (earlier === undefined) firstLineOf.set(id, line)
    else issues.push(lineIssue(line, `repeats the id of line ${earlier}: each request of a body needs its own`, "id"))
  })
  return issues
}

/** The answer to a body over {@link MAX_RPC_BODY_BYTES}, before the rest of it is read. */
const tooLarge = HttpServerResponse.jsonUnsafe({
  code: "payload_too_large",
  message: `The RPC body is larger than ${MAX_RPC_BODY_BYTES} bytes (16 MiB), the most one call may send`,
  maxBytes: MAX_RPC_BODY_BYTES
}, { status: 413 })

export const rpcHttpEffect = <Rpcs extends Rpc.Any>(group: RpcGroup.RpcGroup<Rpcs>) =>
  Effect.map(RpcServer.toHttpEffect(group, { streamBufferSize: "unbounded" }), (serve) =>
    Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const charset = JsonBody.charsetProblem(request.headers["content-type"])
      if (charset !== undefined) return yield* new UnsupportedMediaType({ message: charset })
      // a declared length over the cap is refused before any of the body is asked for: with `Expect:
      // 100-continue` the client was told to go on (100 Continue) and then to send 16 MiB of a body the
      // route refuses, where the queue's batch and the upload route answer 413 at once — outside protocol
      // audit. The connection is closed, not drained of the body it announced.
      if (Number(request.headers["content-length"]) > MAX_RPC_BODY_BYTES) {
        return HttpServerResponse.setHeader(tooLarge, "connection", "close")
      }
      // read (and kept by the request) once, here: the server below reads the same bytes
      const body = yield* request.arrayBuffer.pipe(
        Effect.provideService(HttpIncomingMessage.MaxBodySize, ByteSize.bytes(MAX_RPC_BODY_BYTES)),
        Effect.map((bytes) => new Uint8Array(bytes)),
        // the cap named, as every other 413 of the suite names its own (it read "Payload Too Large")
        Effect.catchIf(
          (error) => HttpServerError.isHttpServerError(error) && error.reason._tag === "RequestParseError" && error.reason.reason === "BodyTooLarge",
          () => Effect.succeed(undefined)
        )
      )
      if (body === undefined) return tooLarge
      const issues = bodyIssues(group, body)
      if (issues.length > 0) return yield* new InvalidRequest({ issues })
      return yield* serve
    }))
