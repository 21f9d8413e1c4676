/**
 * `useUpload` driven through a stand-in for React's hook semantics (`fakeReact.ts`: no DOM or test
 * renderer is installed): the calls one event handler makes before any render act on the upload they
 * started, as the README promises (a new upload cancels the one running; cancel cancels it).
 */
import { assert, describe, it } from "@effect/vitest"
import { vi } from "vitest"
import { completed, fileOf, scriptedRoute, scriptedStorage, singleBegin } from "../../browser/scripted.ts"

vi.mock("react", () => import("./fakeReact.ts"))
// The fast tier shares modules between the files of a worker (isolate: false): a file that ran before
// (BlobError.test.ts imports the react entrypoint) may hold hooks.ts bound to the real React already,
// which the mock cannot change. Loaded afresh here, hooks.ts gets the mock and this file's fakeReact.
vi.resetModules()
const { render } = await import("./fakeReact.ts")
const { useUpload } = await import("../../../src/react/hooks.ts")

const outcome = (promise: Promise<unknown>) => promise.then(() => "resolved", (e: unknown) => (e as Error).name)

const client = () => {
  const route = scriptedRoute((body) => body.type === "begin" ? singleBegin({ url: `https://storage.test/${body.pathname}` }) : completed(1))
  const storage = scriptedStorage(() => ({ status: 200, etag: "\"e\"" }))
  return { storage, options: { fetch: route.fetch, XMLHttpRequest: storage.Xhr, retryDelay: { base: 1, cap: 5 }, resume: false as const } }
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 20))

describe("useUpload", () => {
  it("two upload() calls in one handler: the first is canceled, only the second reaches storage", async () => {
    const { options, storage } = client()
    const root = render(() => useUpload("/u", options))
    const first = outcome(root.value.upload(fileOf(1, "first.bin")))
    const second = outcome(root.value.upload(fileOf(1, "second.bin")))
    assert.deepStrictEqual([await first, await second], ["AbortError", "resolved"])
    await settle()
    assert.strictEqual(root.value.status, "done")
    assert.deepStrictEqual(storage.puts.map((p) => p.url), ["https://storage.test/second.bin"])
    root.unmount()
  })

  it("upload() then cancel() from the same render: that upload is canceled", async () => {
    const { options, storage } = client()
    const root = render(() => useUpload("/u", options))
    const { upload, cancel } = root.value
    const pending = outcome(upload(fileOf(1)))
    cancel()
    assert.strictEqual(await pending, "AbortError")
    await settle()
    assert.strictEqual(root.value.status, "canceled")
    assert.strictEqual(storage.puts.length, 0)
    root.unmount()
  })

  it("unmounting cancels the upload running; reset goes back to idle", async () => {
    const { options } = client()
    const root = render(() => useUpload("/u", options))
    const done = outcome(root.value.upload(fileOf(1)))
    assert.strictEqual(await done, "resolved")
    await settle()
    assert.strictEqual(root.value.status, "done")
    root.value.reset()
    await settle()
    assert.strictEqual(root.value.status, "idle")
    const running = outcome(root.value.upload(fileOf(1)))
    root.unmount()
    assert.strictEqual(await running, "AbortError")
  })
})
