/**
 * The worker thread of PageConverter.ts: converts each HTML page it is sent (Html.ts) and posts the
 * page back. What a conversion throws is posted as its reason, so one bad page does not end the thread.
 */
import { parentPort } from "node:worker_threads"
import { htmlToMarkdown } from "./Html.ts"

export type ThreadReply =
  | { readonly ok: true; readonly page: ReturnType<typeof htmlToMarkdown> }
  | { readonly ok: false; readonly reason: string }

const port = parentPort!
port.on("message", (html: string) => {
  let reply: ThreadReply
  try {
    reply = { ok: true, page: htmlToMarkdown(html) }
  } catch (error) {
    reply = { ok: false, reason: error instanceof Error ? error.message : String(error) }
  }
  port.postMessage(reply)
})
