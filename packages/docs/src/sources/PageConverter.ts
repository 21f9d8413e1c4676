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
import type { ThreadReply } from "./HtmlThread.ts"

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

  const startThread = () => {
    const worker = new Worker(THREAD, { resourceLimits: { maxOldGenerationSizeMb: THREAD_HEAP_MB } })
    // An idle thread never keeps the process alive, and an error with no page waiting is not thrown.
    worker.unref()
    worker.on("error", () => {})
    return worker
  }

  const inThread = (html: string) =>
    Effect.callback<HtmlPage>((resume) => {
      const worker = thread ?? startThread()
      thread = worker
      const detach = () => {
        worker.off("message", onMessage)
        worker.off("error", onError)
        worker.off("exit", onExit)
      }
      const settle = (page: HtmlPage) => {
        detach()
        resume(Effect.succeed(page))
      }
      const onMessage = (reply: ThreadReply) => settle(reply.ok ? reply.page : skippedPage(`cannot convert it: ${reply.reason}`))
      // Out of heap, or the thread failed to start: the next page gets a new thread.
      const onError = (error: Error & { code?: string }) => {
        end(worker)
        settle(skippedPage(
          error.code === "ERR_WORKER_OUT_OF_MEMORY"
            ? `needs more than ${THREAD_HEAP_MB} MB to convert`
            : `cannot convert it: ${error.message}`
        ))
      }
      const onExit = () => {
        end(worker)
        settle(skippedPage("cannot convert it: the converting thread stopped"))
      }
      worker.on("message", onMessage)
      worker.on("error", onError)
      worker.on("exit", onExit)
      worker.postMessage(html)
      // Interrupted (the time limit, or the crawl ending): the thread may be deep in the page.
      return Effect.sync(() => {
        detach()
        end(worker)
      })
    })

  const oneAtATime = yield* Semaphore.make(1)
  const convert = (html: string): Effect.Effect<HtmlPage> =>
    inThread(html).pipe(
      Effect.timeoutOption(timeLimit),
      Effect.map(Option.getOrElse(() => skippedPage(`not converted within ${Duration.format(timeLimit)}`))),
      oneAtATime.withPermits(1)
    )
  return { convert } satisfies PageConverter
})
