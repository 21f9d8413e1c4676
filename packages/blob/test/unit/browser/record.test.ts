/**
 * The upload record state machine (idle -> uploading -> done | error | canceled) and the multi-file queue,
 * on the scripted route and storage.
 */
import { assert, describe, it } from "@effect/vitest"
import { getEventListeners } from "node:events"
import { createUploadQueue, createUploadTask, type UploadStatus } from "../../../src/browser/record.ts"
import { upload } from "../../../src/browser/upload.ts"
import { BlobError } from "../../../src/shared/BlobError.ts"
import { completed, fileOf, MiB, multipartBegin, scriptedRoute, scriptedStorage, singleBegin } from "../../browser/scripted.ts"

const fast = { retryDelay: { base: 1, cap: 5 }, resume: false } as const

const okRoute = () => scriptedRoute((body) => body.type === "begin" ? singleBegin() : completed(5))

describe("upload record", () => {
  it("idle -> uploading -> done, with progress and the result", async () => {
    const storage = scriptedStorage(() => ({ status: 200, etag: "\"e\"" }))
    const task = createUploadTask(fileOf(5, "a.bin"), { route: "/u", fetch: okRoute().fetch, XMLHttpRequest: storage.Xhr, ...fast })
    const seen: Array<UploadStatus> = []
    task.subscribe(() => {
      const status = task.snapshot().status
      if (seen.at(-1) !== status) seen.push(status)
    })
    assert.strictEqual(task.snapshot().status, "idle")
    assert.strictEqual(task.snapshot().name, "a.bin")
    const result = await task.start()
    assert.strictEqual(task.start(), task.start()) // one upload per record
    assert.deepStrictEqual(seen, ["uploading", "done"])
    const record = task.snapshot()
    assert.strictEqual(record.progress.percentage, 100)
    assert.deepStrictEqual(record.result, result)
    assert.isUndefined(record.error)
  })

  it("a refusal moves to error with the BlobError; the promise rejects with it", async () => {
    const route = scriptedRoute(() => Response.json(new BlobError("too_large", { message: "The file is over 5 MiB" }).toJSON(), { status: 413 }))
    const task = createUploadTask(fileOf(5), { route: "/u", fetch: route.fetch, XMLHttpRequest: scriptedStorage(() => ({ status: 200 })).Xhr, ...fast })
    const rejected = await task.start().catch((e: unknown) => e)
    const record = task.snapshot()
    assert.strictEqual(record.status, "error")
    assert.isTrue(BlobError.is(record.error, "too_large"))
    assert.strictEqual(rejected, record.error)
  })

  it("exhausted retries move to error with request_failed", async () => {
    const storage = scriptedStorage(() => ({ status: 503 }))
    const task = createUploadTask(fileOf(5), { route: "/u", fetch: okRoute().fetch, XMLHttpRequest: storage.Xhr, retries: 1, ...fast })
    await task.start().catch(() => undefined)
    assert.strictEqual(task.snapshot().status, "error")
    assert.strictEqual(task.snapshot().error?.code, "request_failed")
    assert.match(task.snapshot().error!.message, /after 2 attempts \(last status 503\)/)
  })

  it("cancel() while uploading: canceled, error undefined, the promise rejects with AbortError", async () => {
    const size = 2 * MiB
    const route = scriptedRoute((body) => body.type === "begin" ? multipartBegin(size, MiB) : completed(size))
    const storage = scriptedStorage(() => ({ hang: true }))
    const task = createUploadTask(fileOf(size), { route: "/u", fetch: route.fetch, XMLHttpRequest: storage.Xhr, ...fast })
    const pending = task.start().catch((e: unknown) => e)
    await new Promise((resolve) => setTimeout(resolve, 20))
    assert.strictEqual(task.snapshot().status, "uploading")
    assert.isAbove(task.snapshot().progress.loaded, 0)
    task.snapshot().cancel()
    const rejected = await pending
    assert.strictEqual((rejected as DOMException).name, "AbortError")
    assert.isFalse(BlobError.is(rejected))
    assert.strictEqual(task.snapshot().status, "canceled")
    assert.isUndefined(task.snapshot().error)
    assert.strictEqual(storage.aborted.length, 2)
  })

  it("cancel() before start: canceled, and start() rejects with AbortError without sending anything", async () => {
    const route = okRoute()
    const task = createUploadTask(fileOf(5), { route: "/u", fetch: route.fetch, XMLHttpRequest: scriptedStorage(() => ({ status: 200 })).Xhr, ...fast })
    task.cancel()
    assert.strictEqual(task.snapshot().status, "canceled")
    assert.strictEqual(((await task.start().catch((e: unknown) => e)) as DOMException).name, "AbortError")
    assert.strictEqual(route.calls.length, 0)
  })

  it("an outer signal cancels like cancel()", async () => {
    const controller = new AbortController()
    const storage = scriptedStorage(() => ({ hang: true }))
    const task = createUploadTask(fileOf(5), { route: "/u", fetch: okRoute().fetch, XMLHttpRequest: storage.Xhr, signal: controller.signal, ...fast })
    const pending = task.start().catch((e: unknown) => e)
    await new Promise((resolve) => setTimeout(resolve, 10))
    controller.abort()
    assert.strictEqual(((await pending) as DOMException).name, "AbortError")
    assert.strictEqual(task.snapshot().status, "canceled")
  })

  it("a signal aborted before the task was created: canceled at once, start() rejects with AbortError, no route call", async () => {
    const route = okRoute()
    const task = createUploadTask(fileOf(5), {
      route: "/u",
      fetch: route.fetch,
      XMLHttpRequest: scriptedStorage(() => ({ status: 200 })).Xhr,
      signal: AbortSignal.abort(),
      ...fast
    })
    assert.strictEqual(task.snapshot().status, "canceled")
    const rejected = await task.start().then(() => assert.fail("expected a rejection"), (e: unknown) => e)
    assert.strictEqual((rejected as DOMException).name, "AbortError")
    assert.strictEqual(route.calls.length, 0)
  })

  it("a settled task leaves no listener on a long-lived signal (done, error and canceled alike)", async () => {
    const page = new AbortController()
    const storage = scriptedStorage(() => ({ status: 200, etag: "\"e\"" }))
    const refusing = scriptedRoute(() => Response.json(new BlobError("forbidden", { message: "No" }).toJSON(), { status: 403 }))
    const options = { route: "/u", XMLHttpRequest: storage.Xhr, signal: page.signal, ...fast }
    const done = createUploadTask(fileOf(5), { ...options, fetch: okRoute().fetch })
    const failed = createUploadTask(fileOf(5), { ...options, fetch: refusing.fetch })
    const canceled = createUploadTask(fileOf(5), { ...options, fetch: okRoute().fetch })
    assert.strictEqual(getEventListeners(page.signal, "abort").length, 3)
    await done.start()
    await failed.start().catch(() => undefined)
    canceled.cancel()
    assert.deepStrictEqual([done, failed, canceled].map((t) => t.snapshot().status), ["done", "error", "canceled"])
    assert.strictEqual(getEventListeners(page.signal, "abort").length, 0)
  })
})

describe("upload record: what a page gets wrong", () => {
  it("a subscriber that throws (a render bug) is reported, and the task still ends done; snapshots are frozen", async () => {
    const storage = scriptedStorage(() => ({ status: 200, etag: "\"e\"" }))
    const task = createUploadTask(fileOf(5, "a.bin"), { route: "/u", fetch: okRoute().fetch, XMLHttpRequest: storage.Xhr, ...fast })
    const bug = new Error("render bug")
    let calls = 0
    task.subscribe(() => {
      if (++calls === 1) throw bug
    })
    const logged: Array<ReadonlyArray<unknown>> = []
    const original = console.error
    console.error = (...args: Array<unknown>) => void logged.push(args)
    try {
      const result = await task.start()
      assert.strictEqual(task.snapshot().status, "done")
      assert.deepStrictEqual(task.snapshot().result, result)
      assert.deepStrictEqual(logged, [["an upload listener failed", bug]])
    } finally {
      console.error = original
    }
    assert.isTrue(Object.isFrozen(task.snapshot()))
    assert.throws(() => {
      ;(task.snapshot() as { status: string }).status = "idle"
    }, TypeError)
    assert.strictEqual(task.snapshot().status, "done")
  })

  it("a file or signal that is not one is a TypeError saying so, at creation and from upload(); a Blob needs a pathname", async () => {
    const options = { route: "/u", fetch: okRoute().fetch, XMLHttpRequest: scriptedStorage(() => ({ status: 200 })).Xhr, ...fast }
    assert.throws(() => createUploadTask(null as unknown as File, options), TypeError, /^createUploadTask: the file must be a File or Blob, got null$/)
    assert.throws(() => createUploadTask(fileOf(5), { ...options, signal: {} as AbortSignal }), TypeError, /options\.signal must be an AbortSignal/)
    const queue = createUploadQueue(options)
    assert.throws(() => queue.add([null as unknown as File]), TypeError, /the file must be a File or Blob, got null/)
    for (const [pattern, call] of [
      [/^upload: the file must be a File or Blob, got string$/, () => upload("hello" as unknown as File, options)],
      [/^upload: options\.signal must be an AbortSignal/, () => upload(fileOf(5), { ...options, signal: {} as AbortSignal })],
      [/^upload: options\.headers\["bad header"\] cannot be sent/, () => upload(fileOf(5), { ...options, headers: { "bad header": "x" } })],
      [/^upload: options\.route is not a URL or path: "http:\/\/\[bad"$/, () => upload(fileOf(5), { ...options, route: "http://[bad" })],
      [/^upload: options\.onProgress must be a function$/, () => upload(fileOf(5), { ...options, onProgress: 5 as unknown as () => void })],
      [/^upload: options\.pathname is required for a Blob/, () => upload(new Blob(["hi"]), options)]
    ] as const) {
      const error = await call().then(() => undefined, (rejected: unknown) => rejected)
      assert.instanceOf(error, TypeError)
      assert.match((error as Error).message, pattern)
    }
  })
})

describe("upload queue", () => {
  it("add() takes one File or Blob as a list of one (it uploaded nothing, without an error)", async () => {
    const storage = scriptedStorage(() => ({ status: 200, etag: "\"e\"" }))
    const queue = createUploadQueue({ route: "/u", fetch: okRoute().fetch, XMLHttpRequest: storage.Xhr, ...fast })
    const added = queue.add(fileOf(5, "one.bin"))
    assert.deepStrictEqual(added.map((record) => [record.name, record.status]), [["one.bin", "uploading"]])
    await new Promise((resolve) => setTimeout(resolve, 50))
    assert.deepStrictEqual(queue.snapshot().map((record) => record.status), ["done"])
  })

  it("runs one record per file; each ends on its own; clearFinished drops the finished ones", async () => {
    const route = scriptedRoute((body) =>
      body.type === "begin" && body.pathname === "bad.html"
        ? Response.json(new BlobError("content_type_not_allowed", { message: "text/html is not allowed" }).toJSON(), { status: 400 })
        : body.type === "begin"
        ? singleBegin()
        : completed(5)
    )
    const storage = scriptedStorage(() => ({ status: 200, etag: "\"e\"" }))
    const queue = createUploadQueue({ route: "/u", fetch: route.fetch, XMLHttpRequest: storage.Xhr, ...fast })
    let notifications = 0
    queue.subscribe(() => notifications++)
    const added = queue.add([fileOf(5, "good.bin"), fileOf(5, "bad.html", "text/html")])
    assert.deepStrictEqual(added.map((r) => r.status), ["uploading", "uploading"])
    await new Promise((resolve) => setTimeout(resolve, 50))
    const records = queue.snapshot()
    assert.deepStrictEqual(records.map((r) => [r.name, r.status]), [["good.bin", "done"], ["bad.html", "error"]])
    assert.strictEqual(records[1]!.error?.code, "content_type_not_allowed")
    assert.isAbove(notifications, 2)
    assert.strictEqual(queue.snapshot(), queue.snapshot()) // stable between changes
    queue.clearFinished()
    assert.strictEqual(queue.snapshot().length, 0)
  })

  it("cancelAll cancels the records in flight", async () => {
    const storage = scriptedStorage(() => ({ hang: true }))
    const queue = createUploadQueue({ route: "/u", fetch: okRoute().fetch, XMLHttpRequest: storage.Xhr, ...fast })
    queue.add([fileOf(5, "a"), fileOf(5, "b")], (file) => ({ pathname: `docs/${file.name}` }))
    await new Promise((resolve) => setTimeout(resolve, 10))
    queue.cancelAll()
    assert.deepStrictEqual(queue.snapshot().map((r) => [r.status, r.error]), [["canceled", undefined], ["canceled", undefined]])
  })
})
