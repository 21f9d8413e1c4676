/**
 * MCP over stdio with JSON-RPC's answers to what is not a message. The SDK's `StdioServerTransport`
 * drops a line that is not JSON, or not JSON-RPC, with no answer (its `onerror` only), so a client that
 * wrote a bad line waits for ever; JSON-RPC 2.0 answers it. Each line the client writes is judged first,
 * as `POST /mcp` judges a body (`JsonRpc.ts`):
 *
 * - not JSON: `-32700 Parse error`, id null;
 * - JSON that is not JSON-RPC: `-32600 Invalid Request`; a `tools/call` the tools cannot take:
 *   `-32602 Invalid params` (with the request's id);
 * - a batch, even a well-formed one: `-32600` (MCP 2025-06-18 has none, and the SDK's stdio transport
 *   reads one message a line);
 * - blank lines: skipped.
 *
 * Only then does the line reach the SDK's transport. Its own answers go out as over HTTP, its schema
 * refusals in words (`JsonRpc.readableErrors`).
 */
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js"
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js"
import { createInterface } from "node:readline"
import { PassThrough, type Readable, type Writable } from "node:stream"
import * as JsonRpc from "./JsonRpc.ts"

export class StdioTransport extends StdioServerTransport {
  constructor(input: Readable = process.stdin, output: Writable = process.stdout) {
    const judged = new PassThrough()
    super(judged, output)
    const lines = createInterface({ input, crlfDelay: Infinity })
    lines.on("line", (line) => {
      if (line.trim() === "") return
      const refusal = refusalOf(line)
      if (refusal === undefined) judged.write(`${line}\n`)
      else void this.send({ jsonrpc: "2.0", id: refusal.id, error: { code: refusal.code, message: refusal.message } } as JSONRPCMessage)
    })
    lines.on("close", () => judged.end())
  }

  override send(message: JSONRPCMessage): Promise<void> {
    return super.send(JsonRpc.readableErrors(message) as JSONRPCMessage)
  }
}

/** Why a line is not one message the SDK may have, in JSON-RPC's terms; undefined when it may. */
const refusalOf = (line: string): { readonly code: number; readonly message: string; readonly id: string | number | null } | undefined => {
  let message: unknown
  try {
    message = JSON.parse(line)
  } catch {
    return { code: -32700, message: "Parse error: the line is not JSON (one JSON-RPC message a line)", id: null }
  }
  if (Array.isArray(message)) {
    return { code: -32600, message: "Invalid Request: a batch; over stdio, write one message a line", id: null }
  }
  return JsonRpc.refusalOf(message)
}
