/**
 * HTML pages converted to Markdown (Html.ts) in a worker thread, one page at a time, each within a time
 * limit (`DOCS_CRAWL_PAGE_TIME_LIMIT`, 10 seconds).
 *
 * Why a thread: the conversion is synchronous, and turndown's HTML parser can take time growing much
 * faster than the page on crafted markup that the nesting scan of Html.ts does not see — formatting
 * elements the parser must reopen in every following block (`<div><b id=1>x</div><div><b id=2>x</div>…`:
 * 8.7 kB took 1.2 s, 44 kB most of a minute). On the main thread one such page stopped docs-api from
 * answering anything. In a thread, a page past the limit is abandoned: the thread is ended (nothing
 * else stops synchronous code), the page is skipped like one nested too deep, and the next page starts
 * a new thread. The thread's heap is bounded too, so a page whose conversion balloons is skipped
 * instead of taking the process's memory.
 */
import { Duration, Effect, Option, Semaphore } from "effect"
import { Worker } from "node:worker_threads"
import type { HtmlPage } from "./Html.ts"
import type { ThreadMessage } from "./HtmlThread.ts"

const THREAD = new URL("./HtmlThread.ts", import.meta.url)
/** The thread's heap: a 1 MB page (the crawl's cap) converts in a few tens of MB. */
const THREAD_HEAP_MB = 256

const skippedPage = (reason: string): HtmlPage => ({ title: "", description: "", markdown: "", links: [], skipped: reason })

export interface PageConverter {
  /** The page as Markdown; a page that could not be converted in time or at all has `skipped`, the reason. */
  readonly convert: (html: string) => Effect.Effect<HtmlPage>
}

/** A converter living as long as the scope (its thread is ended with it). */
export const makePageConverter = Effect.fnUntraced(function*(timeLimit: Duration.Duration) {
  let thread: Worker | undefined
  const end = (worker: Worker) => {
    if (thread === worker) thread = undefined
    void worker.terminate()
  }
  yield* Effect.addFinalizer(() => Effect.sync(() => thread !== undefined && end(thread)))

  /**
   * The thread's next message, after posting `html` when given; a thread that fails or stops instead
   * gives why. Interrupted (the time limit, or the crawl ending), the thread is ended: it may be deep
   * in a page, and nothing else stops synchronous code.
   */
  const nextReply = (worker: Worker, html?: string) =>
    Effect.callback<ThreadMessage | { readonly failed: string }>((resume) => {
      const detach = () => {
        worker.off("message", onMessage)
        worker.off("error", onError)
        worker.off("exit", onExit)
      }
      const settle = (reply: ThreadMessage | { readonly failed: string }) => {
        detach()
        resume(Effect.succeed(reply))
      }
      const onMessage = (message: ThreadMessage) => settle(message)
      // Out of heap, or the thread failed to start: the next page gets a new thread.
      const onError = (error: Error & { code?: string }) => {
        end(worker)
        settle({
          failed: error.code === "ERR_WORKER_OUT_OF_MEMORY" ? `needs more than ${THREAD_HEAP_MB} MB to convert` : `cannot convert it: ${error.message}`
        })
      }
      const onExit = () => {
        end(worker)
        settle({ failed: "cannot convert it: the converting thread stopped" })
      }
      worker.on("message", onMessage)
      worker.on("error", onError)
      worker.on("exit", onExit)
      if (html !== undefined) worker.postMessage(html)
      return Effect.sync(() => {
        detach()
        end(worker)
      })
    })

  /** The running thread, or a new one once it has loaded the converter (its start is not the page's time). */
  const readyThread = Effect.suspend(() => {
    if (thread !== undefined) return Effect.succeed(thread)
    const worker = new Worker(THREAD, { resourceLimits: { maxOldGenerationSizeMb: THREAD_HEAP_MB } })
    // An idle thread never keeps the process alive, and an error with no page waiting is not thrown.
    worker.unref()
    worker.on("error", () => {})
    thread = worker
    return Effect.map(nextReply(worker), (ready) => "failed" in ready ? ready : worker)
  })

  const oneAtATime = yield* Semaphore.make(1)
  const convert = (html: string): Effect.Effect<HtmlPage> =>
    Effect.gen(function*() {
      const worker = yield* readyThread
      if (!(worker instanceof Worker)) return skippedPage(worker.failed)
      const reply = yield* nextReply(worker, html).pipe(Effect.timeoutOption(timeLimit))
      if (Option.isNone(reply)) return skippedPage(`not converted within ${Duration.format(timeLimit)}`)
      const message = reply.value
      return "failed" in message
        ? skippedPage(message.failed)
        : "page" in message
        ? message.page
        : skippedPage(`cannot convert it: ${"reason" in message ? message.reason : "the thread answered out of turn"}`)
    }).pipe(oneAtATime.withPermits(1))
  return { convert } satisfies PageConverter
})
