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
 * - blank lines: skipped.
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

export class StdioTransport extends StdioServerTransport {
  /** Resolves once stdin has ended and every request read from it has been answered. */
  readonly finished: Promise<void>
  /** The ids of the requests passed to the server and not answered yet. */
  private readonly unanswered = new Set<string | number>()
  private inputEnded = false
  private onFinished: () => void = () => {}

  constructor(input: Readable = process.stdin, output: Writable = process.stdout) {
    const passed = new PassThrough()
    super(passed, output)
    this.finished = new Promise((resolve) => this.onFinished = resolve)
    const onLine = (bytes: Uint8Array) => {
      const judged = judge(bytes)
      if (judged === undefined) return
      if ("message" in judged) {
        this.note(judged.message)
        passed.write(`${judged.line}\n`)
      } else {
        const { code, id, message } = judged.refusal
        void this.send({ jsonrpc: "2.0", id, error: { code, message } } as JSONRPCMessage)
      }
    }
    splitLines(input, onLine, () => {
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

/**
 * Calls `onLine` with the bytes of each line of `input` (ended by LF, a CR before it dropped; the last
 * one also without), then `onEnd`. Lines are cut as bytes and decoded one by one, strictly (`judge`):
 * readline decoded the stream leniently, so bytes that are not UTF-8 reached the tools as U+FFFD
 * where `POST /mcp` refuses them (an outside sweep).
 */
const splitLines = (input: Readable, onLine: (bytes: Uint8Array) => void, onEnd: () => void) => {
  let pending: Array<Buffer> = []
  input.on("data", (chunk: Buffer | string) => {
    let bytes = typeof chunk === "string" ? Buffer.from(chunk, "utf8") : chunk
    for (let at = bytes.indexOf(0x0a); at !== -1; at = bytes.indexOf(0x0a)) {
      pending.push(bytes.subarray(0, at))
      const line = pending.length === 1 ? pending[0]! : Buffer.concat(pending)
      pending = []
      onLine(line.at(-1) === 0x0d ? line.subarray(0, -1) : line)
      bytes = bytes.subarray(at + 1)
    }
    if (bytes.length > 0) pending.push(bytes)
  })
  let ended = false
  const end = () => {
    if (ended) return
    ended = true
    if (pending.length > 0) onLine(Buffer.concat(pending))
    pending = []
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
