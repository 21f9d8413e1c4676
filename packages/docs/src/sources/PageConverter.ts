/**
 * HTML pages converted to Markdown (Html.ts) in a worker thread (BoundedThread.ts), one page at a time,
 * each within a time limit (`DOCS_CRAWL_PAGE_TIME_LIMIT`, 10 seconds) and a heap of 256 MB.
 *
 * Why: turndown's HTML parser can take time growing much faster than the page on crafted markup that
 * the nesting scan of Html.ts does not see — formatting elements the parser must reopen in every
 * following block (`<div><b id=1>x</div><div><b id=2>x</div>…`: 8.7 kB took 1.2 s, 44 kB most of a
 * minute). On the main thread one such page stopped docs-api from answering anything. A page past
 * either limit is skipped like one nested too deep, and the next page starts a new thread.
 */
import { Duration, Effect } from "effect"
import { makeBoundedThread } from "./BoundedThread.ts"
import type { HtmlPage } from "./Html.ts"

const THREAD = new URL("./HtmlThread.ts", import.meta.url)
/** The thread's heap: a 1 MB page (the crawl's cap) converts in a few tens of MB. */
const THREAD_HEAP_MB = 256

const skippedPage = (reason: string): HtmlPage => ({ title: "", description: "", markdown: "", links: [], skipped: reason })

export interface PageConverter {
  /** The page as Markdown; a page that could not be converted in time or at all has `skipped`, the reason. */
  readonly convert: (html: string, base?: string) => Effect.Effect<HtmlPage>
}

/** A converter living as long as the scope (its thread is ended with it). */
export const makePageConverter = Effect.fnUntraced(function*(timeLimit: Duration.Duration) {
  const thread = yield* makeBoundedThread<{ readonly html: string; readonly base?: string | undefined }, HtmlPage>({
    module: THREAD,
    timeLimit,
    heapMb: THREAD_HEAP_MB
  })
  /** `base`, the page's URL: its links and images made absolute against it (Html.ts). */
  const convert = (html: string, base?: string): Effect.Effect<HtmlPage> =>
    Effect.map(thread.run({ html, base }), (outcome) => {
      switch (outcome._tag) {
        case "Done":
          return outcome.result
        case "TooSlow":
          return skippedPage(`not converted within ${Duration.format(timeLimit)}`)
        case "TooBig":
          return skippedPage(`needs more than ${THREAD_HEAP_MB} MB to convert`)
        case "Failed":
          return skippedPage(`cannot convert it: ${outcome.reason}`)
      }
    })
  return { convert } satisfies PageConverter
})
