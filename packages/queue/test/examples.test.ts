/**
 * The README's runnable examples, as written: `examples/receiver.ts` and `examples/client.ts` are
 * in the README verbatim, and run here as they would for a reader (`node <file>`, Node 24, no
 * build) against a running queue (HTTP + worker on 127.0.0.1, a fresh database): the receiver
 * prints a real delivery and refuses a forged one; the client publishes, reads and is refused.
 * And the `@svc/queue/client` entrypoint loads nothing of effect.
 */
import { assert, layer } from "@effect/vitest"
import { spawnablePort } from "@svc/platform/testing"
import { Effect } from "effect"
import { execFileSync, spawn } from "node:child_process"
import * as Fs from "node:fs"
import { fileURLToPath } from "node:url"
import { call, Destination, poll, publish, queueLayer, QueueUrl, TOKEN } from "./support.ts"

const file = (path: string) => fileURLToPath(new URL(path, import.meta.url))
const readme = Fs.readFileSync(file("../README.md"), "utf8")
const receiverExample = file("../examples/receiver.ts")
const clientExample = file("../examples/client.ts")

/** `node <example> ...args` with `env`; its output so far, and its exit. Killed when the test ends. */
const run = (example: string, args: ReadonlyArray<string>, env: Record<string, string>) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const child = spawn(process.execPath, [example, ...args], { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] })
      const output = { stdout: "", stderr: "", exit: undefined as number | null | undefined }
      child.stdout!.on("data", (chunk: Buffer) => output.stdout += chunk.toString())
      child.stderr!.on("data", (chunk: Buffer) => output.stderr += chunk.toString())
      child.on("exit", (code) => output.exit = code)
      return { child, output }
    }),
    ({ child }) =>
      Effect.promise(() =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) return resolve()
          child.once("exit", () => resolve())
          child.kill("SIGKILL")
        })
      )
  )

/** What importing `@svc/queue/client` loads: every module URL, as node's resolve hook sees them. */
const loadedByClientEntrypoint = (): Array<string> =>
  JSON.parse(execFileSync(process.execPath, [
    "--input-type=module",
    "-e",
    `import { registerHooks } from "node:module"
const loaded = []
registerHooks({ resolve: (specifier, context, next) => { const resolved = next(specifier, context); loaded.push(resolved.url); return resolved } })
await import("@svc/queue/client")
console.log(JSON.stringify(loaded))`
  ], { cwd: file("../../.."), encoding: "utf8" }))

layer(queueLayer(), { timeout: 120_000, excludeTestServices: true })("README examples", (it) => {
  it("@svc/queue/client loads no effect: its own files, the suite's ServiceTarget and Arguments, jose and node's built-ins", () => {
    const loaded = [...new Set(loadedByClientEntrypoint())]
    const own = loaded.filter((url) => url.includes("/packages/")).map((url) => url.slice(url.indexOf("/packages/") + 1))
    assert.sameMembers(own, [
      "packages/queue/src/promise/index.ts",
      "packages/queue/src/promise/handlers.ts",
      "packages/queue/src/promise/Receiver.ts",
      "packages/queue/src/promise/QueueClient.ts",
      "packages/queue/src/promise/Arguments.ts",
      "packages/queue/src/promise/QueueError.ts",
      "packages/queue/src/CappedBody.ts",
      "packages/queue/src/Signing.ts",
      "packages/queue/src/PublishHeaders.ts",
      "packages/platform/src/ServiceTarget.ts",
      "packages/platform/src/Arguments.ts"
    ])
    const others = loaded.filter((url) => !url.includes("/packages/"))
    assert.isTrue(others.every((url) => url.startsWith("node:") || url.includes("/node_modules/jose/")), others.join("\n"))
  })


  it("are in the README as they are in examples/", () => {
    for (const example of [receiverExample, clientExample]) {
      assert.include(readme, "```ts\n" + Fs.readFileSync(example, "utf8") + "```")
    }
  })

  it.effect("examples/receiver.ts prints a real delivery and refuses a forged signature", () =>
    Effect.gen(function*() {
      const keys = (yield* call("/v2/keys")).body
      const port = yield* spawnablePort()
      const { output } = yield* run(receiverExample, [], {
        PORT: String(port),
        SVC_CURRENT_SIGNING_KEY: keys.current,
        SVC_NEXT_SIGNING_KEY: keys.next
      })
      const url = `http://127.0.0.1:${port}/orders`
      yield* poll(Effect.sync(() => output.stdout), (out) => out.includes(`Receiving on ${url}`), "60 seconds", () =>
        `the receiver to listen (stderr: ${output.stderr})`)

      const published = yield* publish(url, { body: "order 42" })
      assert.strictEqual(published.status, 201)
      yield* poll(Effect.sync(() => output.stdout), (out) => out.includes(`${published.body.messageId} for ${url}: order 42\n`), "30 seconds", () =>
        `the delivery to be printed (stdout: ${output.stdout}, stderr: ${output.stderr})`)

      const forged = yield* Effect.promise(async () => {
        const response = await fetch(url, { method: "POST", body: "order 42", headers: { "svc-signature": "forged" } })
        return { status: response.status, body: await response.json() }
      })
      assert.deepStrictEqual(forged, { status: 401, body: { code: "invalid_signature", message: "The signature is not an HS256 JWT", reason: "malformed" } })
      assert.strictEqual(output.stdout.trim().split("\n").length, 2, "the forged request was not handled")
    }))

  it.effect("examples/client.ts publishes, reads the message back and is refused for an unknown id", () =>
    Effect.gen(function*() {
      const dest = yield* Destination
      const { output } = yield* run(clientExample, [`${dest.baseUrl}/example`], {
        QUEUE_URL: yield* QueueUrl,
        QUEUE_TOKEN: TOKEN
      })
      yield* poll(Effect.sync(() => output.exit), (exit) => exit !== undefined, "60 seconds", () =>
        `the client example to finish (stdout: ${output.stdout}, stderr: ${output.stderr})`)
      assert.strictEqual(output.exit, 0, output.stderr)
      const lines = output.stdout.trim().split("\n")
      assert.match(lines[0]!, /^published \{"messageId":"[0-9a-f-]{36}"\}$/)
      assert.match(lines[1]!, /^message [0-9a-f-]{36} is (queued|delivering|delivered) \(retried 0 of 3\)$/)
      assert.match(lines[2]!, /^\d+ dead-lettered messages on this page/)
      assert.strictEqual(lines[3], "refused: 404 message_not_found")
      const [received] = yield* dest.waitFor("/example", 1)
      assert.deepStrictEqual(JSON.parse(received!.body.toString()), { order: 42 })
      assert.strictEqual(received!.headers["x-source"], "example")
    }))

  it.effect("examples/client.ts with a wrong token: one line on stderr and exit 1, no stack trace", () =>
    Effect.gen(function*() {
      const { output } = yield* run(clientExample, ["http://127.0.0.1:9/example"], {
        QUEUE_URL: yield* QueueUrl,
        QUEUE_TOKEN: "not-the-token"
      })
      yield* poll(Effect.sync(() => output.exit), (exit) => exit !== undefined, "60 seconds", () =>
        `the client example to finish (stdout: ${output.stdout}, stderr: ${output.stderr})`)
      assert.strictEqual(output.exit, 1, output.stderr)
      assert.strictEqual(output.stdout, "")
      assert.strictEqual(output.stderr, "the queue refused: 401 unauthorized: Invalid bearer token\n")
    }))
})
