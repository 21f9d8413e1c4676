/**
 * MCP over stdio with JSON-RPC's answers to what is not a message. The SDK's `StdioServerTransport`
 * drops a line that is not JSON, or not JSON-RPC, with no answer (its `onerror` only), so a client that
 * wrote a bad line waits for ever; JSON-RPC 2.0 answers it. Each line the client writes is judged first,
 * as `POST /mcp` judges a body (`JsonRpc.ts`):
 *
 * - bytes that are not UTF-8, not JSON, or JSON the suite refuses in every body (an unpaired surrogate,
 *   a key given twice, arrays and objects nested past 32 levels: `JsonBody`): `-32700 Parse error`;
 * - JSON that is not JSON-RPC: `-32600 Invalid Request`; a `tools/call` the tools cannot take:
 *   `-32602 Invalid params`;
 * - each with the request's id when the line is a request whose id can be read (`JsonRpc.requestId`),
 *   else id null. Over HTTP the exchange ties a refusal to its request; over stdio only the id does: a
 *   surrogate half in a tool argument (a question cut in the middle of an emoji) answered with id null
 *   left the SDK's client waiting 60 s for its timeout, then failing as "Request timed out";
 * - a batch, even a well-formed one: `-32600` (MCP 2025-06-18 has none, and the SDK's stdio transport
 *   reads one message a line);
 * - blank lines: skipped;
 * - a line longer than `maxLineBytes` (`MCP_MAX_BODY_BYTES`, 1 MiB by default, as a `POST /mcp` body):
 *   `-32600`, with the request's id when it can be read at either end of the line, never buffered
 *   whole. The SDK's transport reads at most 10 MiB a message and, past that, stopped reading stdin
 *   without a word: a 20 MB argument left that request and every later one unanswered while the process
 *   lived on. Here the SDK never sees such a line, and its own cap is raised above ours.
 *
 * Only then does the line reach the SDK's transport. Its own answers go out as over HTTP, its schema
 * refusals in words (`JsonRpc.readableErrors`).
 *
 * When stdin ends, the requests already read are still answered: {@link StdioTransport.finished}
 * resolves once every one has its answer, and the server closes then. It closed at once before, so
 * `printf '<initialize>\n<tools/call>\n' | svc mcp` exited 0 without answering the tool call.
 */
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js"
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js"
import { JsonBody } from "@svc/platform"
import { Result } from "effect"
import { PassThrough, type Readable, type Writable } from "node:stream"
import * as JsonRpc from "./JsonRpc.ts"

/** After stdin ends, how long unanswered requests may keep the process at most. */
const DRAIN_LIMIT_MS = 180_000

/** How much of each end of a line too long to read is kept to find its request's id. */
const END_BYTES = 256

export class StdioTransport extends StdioServerTransport {
  /** Resolves once stdin has ended and every request read from it has been answered. */
  readonly finished: Promise<void>
  /** The ids of the requests passed to the server and not answered yet. */
  private readonly unanswered = new Set<string | number>()
  private inputEnded = false
  private onFinished: () => void = () => {}

  /** `maxLineBytes`: the longest line read (`MCP_MAX_BODY_BYTES`, as over HTTP: `McpHttp.MaxBodyBytes`). */
  constructor(input: Readable, output: Writable, options: { readonly maxLineBytes: number }) {
    const passed = new PassThrough()
    const { maxLineBytes } = options
    // the lines passed on are at most maxLineBytes: the SDK's cap (10 MiB by default) must not be lower
    super(passed, output, { maxBufferSize: Math.max(10 * 1_048_576, 2 * maxLineBytes + 2) })
    this.finished = new Promise((resolve) => this.onFinished = resolve)
    const onLine = (line: Line) => {
      if ("tooLong" in line) {
        void this.send({
          jsonrpc: "2.0",
          id: idAtEnds(line.tooLong.head, line.tooLong.tail),
          error: {
            code: -32600,
            message: `Invalid Request: the line is ${line.tooLong.bytes} bytes, more than the ${maxLineBytes} this server ` +
              "reads in one message (MCP_MAX_BODY_BYTES)"
          }
        } as JSONRPCMessage)
        return
      }
      const judged = judge(line.bytes)
      if (judged === undefined) return
      if ("message" in judged) {
        this.note(judged.message)
        passed.write(`${judged.line}\n`)
      } else {
        const { code, id, message } = judged.refusal
        void this.send({ jsonrpc: "2.0", id, error: { code, message } } as JSONRPCMessage)
      }
    }
    splitLines(input, maxLineBytes, onLine, () => {
      passed.end()
      this.inputEnded = true
      this.finishWhenAnswered()
      // a request the server never answers must not keep the process: each tool call is bounded
      // (DocsClient: 60 s a try), so this is far past any answer
      setTimeout(this.onFinished, DRAIN_LIMIT_MS).unref()
    })
  }

  /** A request now awaits its answer; a cancelled one never gets one (MCP: the server stays silent). */
  private note(message: Message) {
    if (message.method === "notifications/cancelled") {
      const cancelled = message.params?.requestId
      if (typeof cancelled === "string" || typeof cancelled === "number") this.unanswered.delete(cancelled)
      this.finishWhenAnswered()
    } else if (typeof message.method === "string" && (typeof message.id === "string" || typeof message.id === "number")) {
      this.unanswered.add(message.id)
    }
  }

  override async send(message: JSONRPCMessage): Promise<void> {
    await super.send(JsonRpc.readableErrors(message) as JSONRPCMessage)
    if ("id" in message && message.id !== undefined && !("method" in message)) {
      this.unanswered.delete(message.id)
      this.finishWhenAnswered()
    }
  }

  private finishWhenAnswered() {
    if (this.inputEnded && this.unanswered.size === 0) this.onFinished()
  }
}

type Refusal = { readonly code: number; readonly message: string; readonly id: string | number | null }

/** A line read: its bytes, or, past the cap, its size and the bytes at either end. */
type Line =
  | { readonly bytes: Uint8Array }
  | { readonly tooLong: { readonly bytes: number; readonly head: Buffer; readonly tail: Buffer } }

/**
 * Calls `onLine` with the bytes of each line of `input` (ended by LF, a CR before it dropped; the last
 * one also without), then `onEnd`. Lines are cut as bytes and decoded one by one, strictly (`judge`):
 * readline decoded the stream leniently, so bytes that are not UTF-8 reached the tools as U+FFFD
 * where `POST /mcp` refuses them (an outside sweep). A line past `maxLineBytes` is not kept: only its
 * size and its first and last bytes ({@link END_BYTES}), so no line holds more memory than the cap.
 */
const splitLines = (input: Readable, maxLineBytes: number, onLine: (line: Line) => void, onEnd: () => void) => {
  let pending: Array<Buffer> = []
  let pendingBytes = 0
  let tooLong: { bytes: number; readonly head: Buffer; tail: Buffer } | undefined
  const add = (segment: Buffer) => {
    if (tooLong !== undefined) {
      tooLong.bytes += segment.length
      tooLong.tail = Buffer.from(Buffer.concat([tooLong.tail, segment.subarray(-END_BYTES)]).subarray(-END_BYTES))
      return
    }
    pending.push(segment)
    pendingBytes += segment.length
    if (pendingBytes > maxLineBytes) {
      const line = Buffer.concat(pending)
      tooLong = {
        bytes: line.length,
        head: Buffer.from(line.subarray(0, END_BYTES)),
        tail: Buffer.from(line.subarray(-END_BYTES))
      }
      pending = []
      pendingBytes = 0
    }
  }
  const lineEnded = () => {
    if (tooLong !== undefined) {
      const { bytes, head, tail } = tooLong
      tooLong = undefined
      onLine({ tooLong: { bytes, head, tail: tail.at(-1) === 0x0d ? tail.subarray(0, -1) : tail } })
      return
    }
    const line = pending.length === 1 ? pending[0]! : Buffer.concat(pending)
    pending = []
    pendingBytes = 0
    onLine({ bytes: line.at(-1) === 0x0d ? line.subarray(0, -1) : line })
  }
  input.on("data", (chunk: Buffer | string) => {
    let bytes = typeof chunk === "string" ? Buffer.from(chunk, "utf8") : chunk
    for (let at = bytes.indexOf(0x0a); at !== -1; at = bytes.indexOf(0x0a)) {
      add(bytes.subarray(0, at))
      lineEnded()
      bytes = bytes.subarray(at + 1)
    }
    if (bytes.length > 0) add(bytes)
  })
  let ended = false
  const end = () => {
    if (ended) return
    ended = true
    if (pending.length > 0 || tooLong !== undefined) lineEnded()
    onEnd()
  }
  input.on("end", end)
  input.on("close", end)
}

/**
 * The line as one message the SDK may have (and its text), why it is not one in JSON-RPC's terms, or
 * undefined for a blank line.
 */
const judge = (bytes: Uint8Array): { readonly refusal: Refusal } | { readonly message: Message; readonly line: string } | undefined => {
  const decoded = JsonBody.decodeText(bytes)
  if (Result.isFailure(decoded)) {
    // the request's id, when it can be read whole from the text a lenient decoder makes of the line
    const id = JsonRpc.requestId(plainJson(new TextDecoder().decode(bytes)))
    const intact = typeof id === "string" && id.includes("\ufffd") ? null : id
    return { refusal: { code: -32700, message: `Parse error: the line ${decoded.failure.problem}`, id: intact } }
  }
  const line = decoded.success
  if (line.trim() === "") return undefined
  // by the suite's rules for JSON bodies, as `POST /mcp` reads one: an unpaired surrogate, a key
  // given twice or a nesting past 32 levels is refused here too (stdio took them before)
  const parsed = JsonBody.parseText(line, "a JSON-RPC message (a JSON object)")
  if (Result.isFailure(parsed)) {
    const { parameter, problem } = parsed.failure
    const what = problem.startsWith("is not valid JSON") ? "is not JSON (one JSON-RPC message a line)" : problem
    // JSON the suite's rules refuse still names its request, unless the id itself is at fault (given twice)
    const id = parameter === "id" ? null : JsonRpc.requestId(plainJson(line))
    return { refusal: { code: -32700, message: `Parse error: the line${parameter === "" ? "" : `'s ${parameter}`} ${what}`, id } }
  }
  const message = parsed.success
  if (Array.isArray(message)) {
    return { refusal: { code: -32600, message: "Invalid Request: a batch; over stdio, write one message a line", id: null } }
  }
  const refusal = JsonRpc.refusalOf(message)
  return refusal === undefined ? { message: message as Message, line } : { refusal: { ...refusal, id: refusal.id ?? JsonRpc.requestId(message) } }
}

/** An id as JSON writes one: an integer (no leading zero: `007` is not JSON) or a short string without escapes. */
const ID = String.raw`(-?(?:0|[1-9]\d{0,15})|"[^"\\\u0000-\u001f]{0,128}")`
/** The id as the first member of the message (or after `"jsonrpc":"2.0"`), as most clients write it... */
const ID_AT_HEAD = new RegExp(String.raw`^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*${ID}\s*[,}]`)
/** ...or as its last (the SDK's client: `{"method":…,"params":…,"jsonrpc":"2.0","id":2}`). */
const ID_AT_TAIL = new RegExp(String.raw`[,{]\s*"id"\s*:\s*${ID}\s*\}\s*$`)

/**
 * The request id of a line too long to read, from its first and last bytes: only where it can only be
 * the message's own id (its first member, or its last: one `}` after it closes the message), else null.
 */
const idAtEnds = (head: Buffer, tail: Buffer): string | number | null => {
  const found = ID_AT_HEAD.exec(head.toString("utf8")) ?? ID_AT_TAIL.exec(tail.toString("utf8"))
  if (found === null) return null
  const id: unknown = JSON.parse(found[1]!)
  return typeof id === "string" || Number.isSafeInteger(id) ? id as string | number : null
}

/** The line as `JSON.parse` reads it, without the suite's rules; undefined when it is not JSON at all. */
const plainJson = (line: string): unknown => {
  try {
    return JSON.parse(line)
  } catch {
    return undefined
  }
}

/** What the transport reads of a message it passes on. */
type Message = { readonly id?: unknown; readonly method?: unknown; readonly params?: { readonly requestId?: unknown } }
