/** The worker thread of PageConverter.ts: converts each HTML page it is sent (Html.ts). */
import { answerInThread } from "./BoundedThread.ts"
import { htmlToMarkdown } from "./Html.ts"

answerInThread((page: { readonly html: string; readonly base?: string | undefined }) => htmlToMarkdown(page.html, page.base))
