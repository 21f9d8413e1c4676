/**
 * `llms.txt` (https://llmstxt.org): a Markdown file at a site's root (or under a docs path) that
 * names the project (`# Title`), summarises it (`> summary`) and lists links to Markdown versions of
 * its pages (`- [Name](url): notes`) under `##` sections; `llms-full.txt` is the whole documentation
 * in one Markdown file. Only the parsing is here; fetching is Website.ts's.
 */

export interface LlmsTxt {
  /** The `# H1`, or "" when it has none. */
  readonly title: string
  /** The first `>` blockquote, or "". */
  readonly summary: string
  /** Every Markdown link's target, in order, as written (resolve against the file's URL). */
  readonly links: ReadonlyArray<string>
}

export const parseLlmsTxt = (text: string): LlmsTxt => {
  const lines = text.split(/\r?\n/)
  const title = lines.find((line) => /^#\s+\S/.test(line))?.replace(/^#\s+/, "").trim() ?? ""
  const quoteStart = lines.findIndex((line) => /^>\s?/.test(line))
  const summary: Array<string> = []
  for (let i = quoteStart; quoteStart !== -1 && i < lines.length && /^>\s?/.test(lines[i]!); i++) {
    summary.push(lines[i]!.replace(/^>\s?/, "").trim())
  }
  const links = [...text.matchAll(/\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((match) => match[1]!)
  return { title, summary: summary.join(" ").trim(), links }
}

/**
 * Whether a response body can be an llms.txt: text, not an HTML page (a site that answers every path
 * with its app's index page must not count as having one).
 */
export const looksLikeLlmsTxt = (contentType: string, body: string): boolean =>
  !/html/i.test(contentType) && !/^\s*<(!doctype|html|head|body)\b/i.test(body) && body.trim() !== ""
