/**
 * `StdioTransport` on its own streams: what it refuses is answered at once, with the request's id,
 * and is never counted as awaiting an answer, so the end of stdin ends the session promptly.
 */
import { assert, describe, it } from "@effect/vitest"
import { PassThrough } from "node:stream"
import { StdioTransport } from "../../src/mcp/StdioTransport.ts"

describe("StdioTransport: JSON the MCP SDK's message schema refuses", () => {
  it("is -32600 naming the fault, with the request's id, and stdin's end is not held by it", async () => {
    const input = new PassThrough()
    const output = new PassThrough()
    const answers: Array<any> = []
    let pending = ""
    output.on("data", (chunk: Buffer) => {
      pending += chunk.toString("utf8")
      const lines = pending.split("\n")
      pending = lines.pop()!
      answers.push(...lines.map((line) => JSON.parse(line)))
    })
    const transport = new StdioTransport(input, output, { maxLineBytes: 1_048_576 })
    const passed: Array<any> = []
    transport.onmessage = (message: any) => {
      passed.push(message)
      void transport.send({ jsonrpc: "2.0", id: message.id, result: {} })
    }
    await transport.start()
    let finished = false
    void transport.finished.then(() => finished = true)
    input.end(
      [
        `{"jsonrpc":"2.0","id":1,"method":"ping","extra":1}`,
        `{"jsonrpc":"2.0","id":"p","method":"ping","params":{"_meta":{"progressToken":{}}}}`,
        `{"jsonrpc":"2.0","id":3,"result":{},"extra":1}`,
        `{"jsonrpc":"2.0","id":4,"method":"ping"}`
      ].join("\n") + "\n"
    )
    // a few turns of the event loop, no clock: the refusals and the one answer are written at once
    for (let turn = 0; turn < 50 && !finished; turn++) await new Promise((resolve) => setImmediate(resolve))
    assert.isTrue(finished, "stdin ended and every request read was answered")
    assert.deepStrictEqual(passed.map((message) => message.id), [4])
    assert.deepStrictEqual(answers.map((answer) => [answer.id, answer.error?.code ?? "result"]), [
      [1, -32600],
      ["p", -32600],
      [null, -32600],
      [4, "result"]
    ])
    assert.strictEqual(answers[0].error.message, `Invalid Request: the message has a member JSON-RPC 2.0 does not define: "extra"`)
    assert.strictEqual(answers[1].error.message, `Invalid Request: "params._meta.progressToken" must be a string or an integer, not object`)
    await transport.close()
  })
})
