/**
 * What a `POST /mcp` body says wrong, in JSON-RPC 2.0's own terms, before the MCP SDK sees it. The SDK's
 * HTTP transport answers any message that is not JSON-RPC with `-32700 Parse error` (which JSON-RPC keeps
 * for text that is not JSON), and `tools/call` params that fail its schema with `-32603 Internal error`
 * and zod's issue list as the message. Here:
 *
 * - `-32600 Invalid Request`: not an object; `jsonrpc` not `"2.0"`; neither a `method` (a request or a
 *   notification) nor a `result` or `error` (a response), or both; an `id` that is not a string or an
 *   integer (MCP: never null); `params` or its `_meta` that is not an object (MCP's params are named);
 *   a `result` that is not an object, an `error` without an integer `code` and a string `message`; an
 *   empty batch, or one where two requests share an id (their answers could not be told apart), or
 *   one that holds an initialize beside other messages (the SDK's words were "Only one initialization
 *   request is allowed"); and
 *   then anything else the SDK's own schema (`JSONRPCMessageSchema`) refuses, named from its first
 *   issue: a member JSON-RPC 2.0 does not define (`"extra"`: refused, not stripped, as the SDK's
 *   schema is strict), a `progressToken` that is not a string or an integer, … The SDK's transports
 *   answered those `-32700 Parse error` over HTTP and nothing at all over stdio. The hand-written checks
 *   above only word the common faults (and add the unsafe-integer id); what the SDK takes is the SDK's
 *   rule, {@link sdkProblem};
 * - `-32602 Invalid params`: a `tools/call` without a tool `name`, or whose `arguments` is not an object;
 *   and, in the SDK's own answers ({@link readableErrors}), the `-32603` it gives for params its schema
 *   refuses (`initialize` without `protocolVersion`), with the first issue in words instead of zod's list.
 *
 * A batch is refused whole, naming the message at fault (MCP 2025-06-18 and later have no batches; the
 * SDK still takes them from older clients).
 */

import { JSONRPCMessageSchema } from "@modelcontextprotocol/sdk/types.js"

export interface JsonRpcRefusal {
  readonly code: -32600 | -32602
  readonly message: string
  /**
   * The id of the request at fault when it has a usable one (a single request), else null. Never a
   * response's id: it names a request of the server's, and an error carrying it would answer the
   * client's own request of that id.
   */
  readonly id: string | number | null
}

type Message = Record<string, unknown>

const isObject = (value: unknown): value is Message => typeof value === "object" && value !== null && !Array.isArray(value)

const isId = (value: unknown): value is string | number => typeof value === "string" || Number.isSafeInteger(value)

const kind = (value: unknown) => value === null ? "null" : Array.isArray(value) ? "an array" : typeof value

/**
 * Why `id` is not one. An integer past 2^53 - 1 was rounded when the body was parsed
 * (9007199254740993 reads as 9007199254740992): it is not quoted, the parsed value is not what was sent.
 */
const idProblem = (id: unknown): string =>
  typeof id === "number" && (Number.isInteger(id) || !Number.isFinite(id))
    ? `"id" is an integer beyond ±${Number.MAX_SAFE_INTEGER} (2^53 - 1), which this server cannot read exactly; send it as a string`
    : `"id" must be a string or an integer, not ${JSON.stringify(id)?.slice(0, 40)}`

/** Why `message` is not a JSON-RPC message MCP takes, if it is not. */
const envelopeProblem = (message: unknown): string | undefined => {
  if (!isObject(message)) return `a message must be a JSON object, not ${kind(message)}`
  if (message["jsonrpc"] !== "2.0") return `"jsonrpc" must be "2.0"`
  if ("id" in message && !isId(message["id"])) return idProblem(message["id"])
  const response = "result" in message || "error" in message
  if ("method" in message) {
    if (typeof message["method"] !== "string") return `"method" must be a string`
    if (response) return `a message has a "method" (a request) or a "result" or "error" (a response), not both`
    if ("params" in message) {
      const params = message["params"]
      if (!isObject(params)) return `"params" must be an object, not ${kind(params)}`
      if ("_meta" in params && !isObject(params["_meta"])) return `"params._meta" must be an object, not ${kind(params["_meta"])}`
    }
    return undefined
  }
  if (response) {
    if (!("id" in message)) return `a response must have an "id"`
    if ("result" in message && !isObject(message["result"])) return `"result" must be an object, not ${kind(message["result"])}`
    if ("error" in message) {
      const error = message["error"]
      if (!isObject(error) || !Number.isSafeInteger(error["code"]) || typeof error["message"] !== "string") {
        return `"error" must be an object with an integer "code" and a string "message"`
      }
    }
    return undefined
  }
  return `a message needs a "method" (a request or a notification), or a "result" or "error" (a response)`
}

/** The SDK's schemas of a request, a notification, a result and an error, in `JSONRPCMessageSchema`'s order. */
const [RequestSchema, NotificationSchema, ResultSchema, ErrorSchema] = JSONRPCMessageSchema.options

/** A path of zod's issue as `params._meta.progressToken`, `[0]` for an index. */
const issuePath = (path: ReadonlyArray<PropertyKey>) =>
  path.map((part) => typeof part === "number" ? `[${part}]` : `.${String(part)}`).join("").replace(/^\./, "")

/**
 * Why the SDK's schema (`JSONRPCMessageSchema`, the one its transports parse every message with)
 * refuses `message`, which passed {@link envelopeProblem}: the first issue of the branch of the union
 * that `message` is (a request, a notification, a result or an error), in words.
 */
const sdkProblem = (message: Message): string | undefined => {
  if (JSONRPCMessageSchema.safeParse(message).success) return undefined
  const branch = "method" in message
    ? ("id" in message ? RequestSchema : NotificationSchema)
    : "result" in message
    ? ResultSchema
    : ErrorSchema
  const parsed = branch.safeParse(message)
  const issue = parsed.success ? undefined : parsed.error.issues[0]
  if (issue === undefined) return "the message is not one the MCP SDK's JSON-RPC schema takes"
  const path = issuePath(issue.path)
  const where = path === "" ? "the message" : `"${path}"`
  if (issue.code === "unrecognized_keys") {
    const keys = issue.keys.map((key) => JSON.stringify(key)).join(", ")
    return `${where} has ${issue.keys.length === 1 ? "a member" : "members"} JSON-RPC 2.0 does not define: ${keys}`
  }
  if (issue.code === "invalid_union") {
    // `progressToken`, an id: a string or an integer (zod's "number" of an `int()`)
    const expected = issue.errors.flatMap((errors) => errors[0]?.code === "invalid_type" ? [errors[0].expected] : [])
    if (expected.length === issue.errors.length) {
      const types = expected.map((type) => type === "number" ? "an integer" : `a ${type}`).join(" or ")
      return `${where} must be ${types}, not ${kind(valueAt(message, issue.path))}`
    }
  }
  return `${where}: ${issue.message}`
}

/** The value at `path` in `value`. */
const valueAt = (value: unknown, path: ReadonlyArray<PropertyKey>): unknown =>
  path.reduce<unknown>((at, part) => isObject(at) || Array.isArray(at) ? (at as Record<PropertyKey, unknown>)[part] : undefined, value)

/**
 * The id of `message` when it is a request whose id can be read (a string or a safe integer), else null.
 * Over stdio it is all a client has to tie an answer to its request: refused with id null, the request
 * stays unanswered for the client, and the SDK's client waits out its timeout (60 s) for it.
 */
export const requestId = (message: unknown): string | number | null =>
  isObject(message) && typeof message["method"] === "string" && isId(message["id"]) ? message["id"] : null

/** Why a `tools/call` request's params cannot be taken, if they cannot. */
const toolCallProblem = (message: Message): string | undefined => {
  if (message["method"] !== "tools/call") return undefined
  const params = message["params"]
  if (!isObject(params)) return `tools/call needs params with the tool's "name"`
  if (typeof params["name"] !== "string" || params["name"] === "") return `tools/call needs the tool's "name" as a string`
  if ("arguments" in params && !isObject(params["arguments"])) {
    return `the tool's "arguments" must be an object, not ${kind(params["arguments"])}`
  }
  return undefined
}

/** The refusal of `body` (one JSON-RPC message or a batch of them), or `undefined` when the SDK may have it. */
export const refusalOf = (body: unknown): JsonRpcRefusal | undefined => {
  const batch = Array.isArray(body)
  const messages: ReadonlyArray<unknown> = batch ? body : [body]
  if (messages.length === 0) return { code: -32600, message: "Invalid Request: an empty batch", id: null }
  const where = (index: number) => batch ? `message ${index + 1} of the batch: ` : ""
  for (const [index, message] of messages.entries()) {
    const problem = envelopeProblem(message) ?? sdkProblem(message as Message)
    if (problem !== undefined) {
      return { code: -32600, message: `Invalid Request: ${where(index)}${problem}`, id: batch ? null : requestId(message) }
    }
  }
  // the SDK's transport refused this as "Only one initialization request is allowed", which a batch
  // holding one initialize does not break: what it refuses is an initialize with anything beside it
  const initialize = messages.findIndex((message) => (message as Message)["method"] === "initialize")
  if (batch && initialize !== -1 && messages.length > 1) {
    return {
      code: -32600,
      message: `Invalid Request: message ${initialize + 1} of the batch is an initialize, which must be sent alone, ` +
        "not in a batch with other messages: send it, then the rest",
      id: null
    }
  }
  const ids = messages.filter((message) => "method" in (message as Message) && "id" in (message as Message)).map((message) => (message as Message)["id"])
  const repeated = ids.find((id, index) => ids.indexOf(id) !== index)
  if (repeated !== undefined) {
    return { code: -32600, message: `Invalid Request: the id ${JSON.stringify(repeated)} is given to two requests of the batch`, id: null }
  }
  for (const [index, message] of messages.entries()) {
    const params = toolCallProblem(message as Message)
    if (params !== undefined) {
      const id = (message as Message)["id"]
      return { code: -32602, message: `Invalid params: ${where(index)}${params}`, id: !batch && isId(id) ? id : null }
    }
  }
  return undefined
}

/** One issue of zod's list, as the SDK puts it in an error's message. */
const zodIssue = (message: string): { readonly path: ReadonlyArray<unknown>; readonly message: string } | undefined => {
  if (!message.trimStart().startsWith("[")) return undefined
  try {
    const issues: unknown = JSON.parse(message)
    const first = Array.isArray(issues) ? issues[0] : undefined
    return isObject(first) && Array.isArray(first["path"]) && typeof first["message"] === "string"
      ? { path: first["path"], message: first["message"] }
      : undefined
  } catch {
    return undefined
  }
}

/**
 * The SDK's answer (one JSON-RPC response or a batch of them) with its `-32603` errors whose message is
 * zod's issue list for params its schema refused made `-32602 Invalid params` naming the first issue:
 * `Invalid params: params.protocolVersion: Invalid input: expected string, received undefined`.
 */
export const readableErrors = (answer: unknown): unknown => {
  if (Array.isArray(answer)) return answer.map(readableErrors)
  if (!isObject(answer) || !isObject(answer["error"])) return answer
  const error = answer["error"]
  const issue = error["code"] === -32603 && typeof error["message"] === "string" ? zodIssue(error["message"]) : undefined
  if (issue === undefined) return answer
  const path = issue.path.map((part) => typeof part === "number" ? `[${part}]` : `.${String(part)}`).join("").replace(/^\./, "")
  return { ...answer, error: { code: -32602, message: `Invalid params: ${path === "" ? "" : `${path}: `}${issue.message}` } }
}
