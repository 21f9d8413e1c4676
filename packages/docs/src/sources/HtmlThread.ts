/**
 * The worker thread of PageConverter.ts: converts each HTML page it is sent (Html.ts) and posts the
 * page back. What a conversion throws is posted as its reason, so one bad page does not end the thread.
 */
import { parentPort } from "node:worker_threads"
import { htmlToMarkdown } from "./Html.ts"

/** What the thread posts: once `ready` (its modules loaded), then a page or a reason for each page sent. */
export type ThreadMessage =
  | { readonly ready: true }
  | { readonly page: ReturnType<typeof htmlToMarkdown> }
  | { readonly reason: string }

const port = parentPort!
const post = (message: ThreadMessage) => port.postMessage(message)
port.on("message", (html: string) => {
  let reply: ThreadMessage
  try {
    reply = { page: htmlToMarkdown(html) }
  } catch (error) {
    reply = { reason: error instanceof Error ? error.message : String(error) }
  }
  post(reply)
})
post({ ready: true })
