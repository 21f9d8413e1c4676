/**
 * PageConverter: HTML converted in a worker thread within a time limit. A crafted page whose conversion
 * takes minutes (formatting elements reopened in every block, which the nesting scan does not see)
 * is abandoned at the limit while the main thread keeps running, and the next page converts normally.
 */
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect } from "effect"
import { makePageConverter } from "../../src/sources/PageConverter.ts"

/** Each block reopens every `<b>` left open before it (they differ by id): output and time grow with the square. */
const reopening = (blocks: number) => Array.from({ length: blocks }, (_, i) => `<div><b id=${i}>x</div>`).join("")

const guide = "<html><head><title>Guide</title></head><body><main><h1>Guide</h1><p>See <a href='b.html'>b</a>.</p></main></body></html>"

describe("PageConverter", () => {
  it.live("converts pages in a thread, abandons one past the limit without blocking, then goes on", () =>
    Effect.gen(function*() {
      // the limit counts the conversion only, not the thread's start (seconds on a busy machine)
      const converter = yield* makePageConverter(Duration.seconds(1))
      const first = yield* converter.convert(guide)
      assert.strictEqual(first.title, "Guide")
      assert.strictEqual(first.markdown, "# Guide\n\nSee [b](b.html).")
      assert.deepStrictEqual(first.links, ["b.html"])

      // The main thread's timers keep firing while the thread is busy with the crafted page.
      let ticks = 0
      const timer = setInterval(() => ticks++, 50)
      const started = performance.now()
      const crafted = yield* converter.convert(`<html><body><main>${reopening(700)}</main></body></html>`)
      const took = performance.now() - started
      clearInterval(timer)
      assert.strictEqual(crafted.skipped, "not converted within 1s")
      assert.strictEqual(crafted.markdown, "")
      assert.isBelow(took, 10_000, "abandoned at the limit, not converted")
      assert.isAtLeast(ticks, 5, "the main thread was free while the page converted")

      // A new thread takes the next page.
      const after = yield* converter.convert(guide)
      assert.strictEqual(after.markdown, "# Guide\n\nSee [b](b.html).")
    }).pipe(Effect.scoped))

  it.live("a page whose conversion outgrows the thread's heap is skipped, and the next one converts", () =>
    Effect.gen(function*() {
      const converter = yield* makePageConverter(Duration.minutes(5))
      const crafted = yield* converter.convert(`<html><body><main>${reopening(6000)}</main></body></html>`)
      assert.strictEqual(crafted.skipped, "needs more than 256 MB to convert")
      const after = yield* converter.convert(guide)
      assert.strictEqual(after.markdown, "# Guide\n\nSee [b](b.html).")
    }).pipe(Effect.scoped))

  it.live("pages converted one at a time come back to the right caller", () =>
    Effect.gen(function*() {
      const converter = yield* makePageConverter(Duration.seconds(30))
      const pages = yield* Effect.forEach(
        Array.from({ length: 8 }, (_, i) => i),
        (i) => converter.convert(`<html><body><main><h1>Page ${i}</h1></main></body></html>`),
        { concurrency: "unbounded" }
      )
      assert.deepStrictEqual(pages.map((p) => p.markdown), Array.from({ length: 8 }, (_, i) => `# Page ${i}`))
    }).pipe(Effect.scoped))
})
