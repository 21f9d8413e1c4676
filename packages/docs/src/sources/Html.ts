/**
 * One HTML page as Markdown (turndown), with what a crawl needs from it: its title, its description
 * (`<meta name="description">`) and the links it has. Page furniture is dropped before converting:
 * `nav`, `header`, `footer`, `aside`, `script`, `style`, `noscript`, `template`, `iframe`, `form`,
 * `svg`, and `<head>` as a whole. Code blocks stay fenced (`<pre><code class="language-ts">` keeps
 * its language), headings are ATX (`#`), so the splitter reads a page like any Markdown file.
 */
import TurndownService from "turndown"

export interface HtmlPage {
  readonly title: string
  readonly description: string
  readonly markdown: string
  /** `href`s of the page's links, as written (resolve them against the page's URL). */
  readonly links: ReadonlyArray<string>
}

const DROPPED: ReadonlySet<string> = new Set(["HEAD", "NAV", "HEADER", "FOOTER", "ASIDE", "SCRIPT", "STYLE", "NOSCRIPT", "TEMPLATE", "IFRAME", "FORM", "SVG"])

const decodeEntities = (text: string): string =>
  text.replace(/&(#x?[0-9a-f]+|amp|lt|gt|quot|apos|nbsp);/gi, (all, entity: string) => {
    const lower = entity.toLowerCase()
    if (lower.startsWith("#x")) return String.fromCodePoint(parseInt(lower.slice(2), 16))
    if (lower.startsWith("#")) return String.fromCodePoint(parseInt(lower.slice(1), 10))
    return ({ amp: "&", lt: "<", gt: ">", quot: "\"", apos: "'", nbsp: " " } as Record<string, string>)[lower] ?? all
  })

const textOf = (html: string, pattern: RegExp): string => {
  const match = pattern.exec(html)
  return match === null ? "" : decodeEntities(match[1]!.replace(/<[^>]*>/g, "")).replace(/\s+/g, " ").trim()
}

/** Converts a page; `links` collects every `<a href>` of its content (furniture's links included). */
export const htmlToMarkdown = (html: string): HtmlPage => {
  const links: Array<string> = []
  // Links in the navigation are how a crawl finds pages, so they are collected before it is dropped.
  for (const match of html.matchAll(/<a\b[^>]*?\bhref\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))/gi)) {
    const href = decodeEntities((match[1] ?? match[2] ?? match[3] ?? "").trim())
    if (href !== "") links.push(href)
  }
  const service = new TurndownService({ headingStyle: "atx", codeBlockStyle: "fenced", bulletListMarker: "-" })
  service.remove((node) => DROPPED.has(node.nodeName.toUpperCase()))
  // `<pre><code class="language-ts">` (or `lang-ts`, or on the pre): a fence with that language.
  service.addRule("fencedWithLanguage", {
    filter: (node) => node.nodeName === "PRE",
    replacement: (_content, node) => {
      const element = node as HTMLElement
      const code = element.querySelector("code")
      const classes = `${element.getAttribute("class") ?? ""} ${code?.getAttribute("class") ?? ""}`
      const language = /(?:^|\s)(?:language|lang)-([\w+#.-]+)/.exec(classes)?.[1] ?? ""
      const text = (code ?? element).textContent ?? ""
      const fence = text.includes("```") ? "~~~~" : "```"
      return `\n\n${fence}${language}\n${text.replace(/\n$/, "")}\n${fence}\n\n`
    }
  })
  const body = /<body\b[^>]*>([\s\S]*)<\/body>/i.exec(html)?.[1] ?? html
  const main = /<main\b[^>]*>([\s\S]*)<\/main>/i.exec(body)?.[1] ?? body
  const markdown = service.turndown(main).replace(/\n{3,}/g, "\n\n").trim()
  return {
    title: textOf(html, /<title\b[^>]*>([\s\S]*?)<\/title>/i) || textOf(main, /<h1\b[^>]*>([\s\S]*?)<\/h1>/i),
    description: decodeEntities(
      /<meta\b(?=[^>]*\bname\s*=\s*["']description["'])[^>]*\bcontent\s*=\s*(?:"([^"]*)"|'([^']*)')/i.exec(html)?.slice(1).find((v) => v !== undefined) ?? ""
    ).trim(),
    markdown,
    links
  }
}
