/**
 * The upload slot behind `useUpload` (`src/react/slot.ts`), without React: the calls an event handler
 * makes in one tick (before any render) must act on the task they started.
 */
import { assert, describe, it } from "@effect/vitest"
import type { UploadRecord } from "../../../src/browser/record.ts"
import { createUploadSlot } from "../../../src/react/slot.ts"
import { BlobError } from "../../../src/shared/BlobError.ts"
import { completed, fileOf, scriptedRoute, scriptedStorage, singleBegin } from "../../browser/scripted.ts"

const fast = { retryDelay: { base: 1, cap: 5 }, resume: false } as const

const outcome = (promise: Promise<unknown>) =>
  promise.then(() => "resolved", (e: unknown) => BlobError.is(e) ? `BlobError ${e.code}` : (e as DOMException).name)

/** A route that begins and completes, storage that stores; each PUT's URL names the file. */
const client = () => {
  const route = scriptedRoute((body) => body.type === "begin" ? singleBegin({ url: `https://storage.test/${body.pathname}` }) : completed(1))
  const storage = scriptedStorage(() => ({ status: 200, etag: "\"e\"" }))
  return { route, storage, options: { route: "/u", fetch: route.fetch, XMLHttpRequest: storage.Xhr, ...fast } }
}

describe("upload slot (useUpload)", () => {
  it("two upload() calls in one tick: the first is canceled at once, the second completes", async () => {
    const { options, storage } = client()
    const slot = createUploadSlot()
    const first = outcome(slot.upload(fileOf(1, "first.bin"), options))
    const second = outcome(slot.upload(fileOf(1, "second.bin"), options))
    assert.strictEqual(slot.snapshot()?.name, "second.bin")
    assert.deepStrictEqual([await first, await second], ["AbortError", "resolved"])
    assert.strictEqual(slot.snapshot()?.status, "done")
    assert.deepStrictEqual(storage.puts.map((p) => p.url), ["https://storage.test/second.bin"])
  })

  it("upload(null) rejects with a TypeError saying so (it threw at the call) and leaves the running upload alone", async () => {
    const { options } = client()
    const slot = createUploadSlot()
    const running = outcome(slot.upload(fileOf(1, "kept.bin"), options))
    let pending: Promise<unknown> | undefined
    assert.doesNotThrow(() => {
      pending = slot.upload(null as unknown as File, options)
    })
    const error = await pending!.then(() => undefined, (rejected: unknown) => rejected)
    assert.instanceOf(error, TypeError)
    assert.match((error as Error).message, /the file must be a File or Blob, got null/)
    assert.strictEqual(slot.snapshot()?.name, "kept.bin")
    assert.strictEqual(await running, "resolved")
  })

  it("upload() then cancel() in one tick: that upload is canceled, nothing reaches storage", async () => {
    const { options, storage } = client()
    const slot = createUploadSlot()
    const pending = outcome(slot.upload(fileOf(1), options))
    slot.cancel()
    assert.strictEqual(await pending, "AbortError")
    assert.strictEqual(slot.snapshot()?.status, "canceled")
    assert.strictEqual(storage.puts.length, 0)
  })

  it("subscribers see the current task's changes, not the replaced one's; reset cancels and clears", async () => {
    const { options } = client()
    const slot = createUploadSlot()
    const seen: Array<UploadRecord | undefined> = []
    slot.subscribe(() => seen.push(slot.snapshot()))
    const first = outcome(slot.upload(fileOf(1, "first.bin"), options))
    const second = outcome(slot.upload(fileOf(1, "second.bin"), options))
    await first
    await second
    const names = seen.map((r) => r?.name)
    assert.deepStrictEqual(names.slice(names.indexOf("second.bin")).filter((n) => n !== "second.bin"), [])
    assert.isFalse(seen.some((r) => r?.status === "canceled")) // the replaced task's cancel is not the slot's news
    assert.strictEqual(seen.at(-1)?.status, "done")
    const third = outcome(slot.upload(fileOf(1, "third.bin"), options))
    const running = slot.snapshot()!
    slot.reset()
    assert.isUndefined(slot.snapshot())
    assert.strictEqual(await third, "AbortError")
    assert.strictEqual(running.status, "uploading") // the record seen before reset; the task itself ended canceled
  })
})
