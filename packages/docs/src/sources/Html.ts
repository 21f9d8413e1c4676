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
  /** Why the page was not converted (`markdown` is then ""): it nests deeper than {@link MAX_NESTING}. */
  readonly skipped?: string
}

const DROPPED: ReadonlySet<string> = new Set(["HEAD", "NAV", "HEADER", "FOOTER", "ASIDE", "SCRIPT", "STYLE", "NOSCRIPT", "TEMPLATE", "IFRAME", "FORM", "SVG"])

/**
 * How deep a page's elements may nest. turndown converts recursively, one stack frame per level, and
 * its time grows with the square of the depth: 2,000 nested `<div>`s overflowed the stack, 150,000
 * (a 750 kB page) pinned a core for minutes. A real documentation page nests well under 100 levels.
 */
export const MAX_NESTING = 256

/** Elements without content: never counted as open. */
const VOID: ReadonlySet<string> = new Set([
  "area", "base", "basefont", "bgsound", "br", "col", "embed", "frame", "hr", "img", "input", "keygen", "link", "meta", "param", "source", "track", "wbr"
])
/**
 * Elements whose end tag may be left out (a `<p>` or `<li>` closes the one before it): not counted,
 * so that a page writing `<li>` without `</li>` is not taken for a deep one.
 */
const OPTIONAL_END: ReadonlySet<string> = new Set([
  "body", "caption", "colgroup", "dd", "dt", "head", "html", "li", "optgroup", "option", "p", "rb", "rp", "rt", "rtc", "tbody", "td", "tfoot", "th", "thead", "tr"
])
/**
 * The HTML standard's "special" elements (blocks, lists, tables…): an end tag of another element
 * (`</span>`, `</b>`) does not close one of these, it is ignored (`<div></span>` nests the next `<div>`).
 */
const SPECIAL: ReadonlySet<string> = new Set([
  "address", "applet", "area", "article", "aside", "base", "basefont", "bgsound", "blockquote", "body", "br", "button", "caption", "center", "col",
  "colgroup", "dd", "details", "dir", "div", "dl", "dt", "embed", "fieldset", "figcaption", "figure", "footer", "form", "frame", "frameset", "h1",
  "h2", "h3", "h4", "h5", "h6", "head", "header", "hgroup", "hr", "html", "iframe", "img", "input", "keygen", "li", "link", "listing", "main",
  "marquee", "menu", "meta", "nav", "noembed", "noframes", "noscript", "object", "ol", "p", "param", "plaintext", "pre", "script", "search",
  "section", "select", "source", "style", "summary", "table", "tbody", "td", "template", "textarea", "tfoot", "th", "thead", "title", "tr",
  "track", "ul", "wbr", "xmp"
])
/** Elements whose content is text up to their end tag, not markup. */
const RAW_TEXT: ReadonlySet<string> = new Set(["iframe", "noembed", "noframes", "noscript", "script", "style", "textarea", "title", "xmp"])

/** What one linear pass over a page's tags finds (see {@link scanTags}). */
interface TagScan {
  /** The deepest nesting seen. */
  readonly depth: number
  readonly links: Array<string>
  readonly title: string | undefined
  readonly description: string | undefined
  /** Where the content of the first `<body>`/`<main>` starts and its last end tag begins (-1: none). */
  readonly body: { start: number; end: number }
  readonly main: { start: number; end: number }
  /** The first `<h1>`'s inner HTML within each range is found from these (positions in order). */
  readonly h1: Array<{ start: number; end: number }>
}

const TAG_NAME = /[a-zA-Z][^\s/>]*/y
const HREF = /\bhref\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))/i
const META_NAME_DESCRIPTION = /\bname\s*=\s*["']?description\b/i
const META_CONTENT = /\bcontent\s*=\s*(?:"([^"]*)"|'([^']*)')/i

/**
 * One pass over the tags of a page, linear in its length (every regular expression here is anchored
 * at a position or runs over one tag's own text, so no input makes them backtrack over the page):
 * the nesting depth, the links, `<title>`, the meta description and where `<body>`, `<main>` and the
 * `<h1>`s are. Kept simple on purpose: a tag ends at the first `>` (one inside a quoted attribute
 * ends it early), `<x/>` counts as closed, void elements and elements whose end tag is optional are
 * not counted, comments and the content of `script`, `style`, `title` and the like are skipped. An
 * end tag closes its element and those opened inside it, as a browser does; one of an element that is
 * not open is ignored, and so is one of a non-{@link SPECIAL} element (`</span>`) when a special one
 * (`<div>`) was opened inside it. Elements are tracked up to `MAX_NESTING + 1` deep (the answer is
 * known then), so each end tag costs at most that many steps. It does not need to be exact: only to
 * tell a page nested like a document from one nested thousands deep (table scopes, the adoption of
 * misnested `<b>`, a start tag closing another are not modelled).
 */
const scanTags = (html: string): TagScan => {
  const links: Array<string> = []
  const h1: Array<{ start: number; end: number }> = []
  const body = { start: -1, end: -1 }
  const main = { start: -1, end: -1 }
  let title: string | undefined
  let description: string | undefined
  const open: Array<string> = []
  let deepest = 0
  let at = html.indexOf("<")
  while (at !== -1) {
    if (html.startsWith("<!--", at)) {
      const end = html.indexOf("-->", at + 4)
      if (end === -1) break
      at = html.indexOf("<", end + 3)
      continue
    }
    const closing = html[at + 1] === "/"
    TAG_NAME.lastIndex = at + (closing ? 2 : 1)
    const name = TAG_NAME.exec(html)?.[0].toLowerCase()
    if (name === undefined && !(html[at + 1] === "!" || html[at + 1] === "?")) {
      at = html.indexOf("<", at + 1) // text, as `a < b`
      continue
    }
    const close = html.indexOf(">", at)
    if (close === -1) break
    let next = close + 1
    if (name !== undefined && closing) {
      if (deepest <= MAX_NESTING && !VOID.has(name) && !OPTIONAL_END.has(name)) {
        for (let i = open.length - 1; i >= 0; i--) {
          if (open[i] === name) {
            open.length = i
            break
          }
          if (!SPECIAL.has(name) && SPECIAL.has(open[i]!)) break
        }
      }
      if (name === "body") body.end = at
      if (name === "main") main.end = at
      if (name === "h1" && h1.length > 0 && h1.at(-1)!.end === -1) h1.at(-1)!.end = at
    } else if (name !== undefined) {
      const tag = html.slice(at, close)
      if (name === "a") {
        const href = HREF.exec(tag)
        const value = (href?.[1] ?? href?.[2] ?? href?.[3] ?? "").trim()
        if (value !== "") links.push(decodeEntities(value))
      } else if (name === "meta" && description === undefined && META_NAME_DESCRIPTION.test(tag)) {
        const content = META_CONTENT.exec(tag)
        description = decodeEntities(content?.[1] ?? content?.[2] ?? "").trim()
      } else if (name === "body" && body.start === -1) body.start = close + 1
      else if (name === "main" && main.start === -1) main.start = close + 1
      else if (name === "h1") h1.push({ start: close + 1, end: -1 })
      if (name === "plaintext") break
      if (RAW_TEXT.has(name)) {
        const end = new RegExp(`</${name}`, "gi")
        end.lastIndex = next
        const found = end.exec(html)
        if (name === "title" && title === undefined) title = html.slice(next, found?.index ?? html.length)
        if (found === null) break
        next = found.index
      } else if (deepest <= MAX_NESTING && !VOID.has(name) && !OPTIONAL_END.has(name) && html[close - 1] !== "/") {
        open.push(name)
        deepest = Math.max(deepest, open.length)
      }
    }
    at = html.indexOf("<", next)
  }
  return { depth: deepest, links, title, description, body, main, h1 }
}

/** `&#…;` of a code point no character has (over U+10FFFF, a surrogate, 0): U+FFFD, as browsers read it. */
const fromCodePoint = (code: number): string =>
  Number.isInteger(code) && code > 0 && code <= 0x10ffff && !(code >= 0xd800 && code <= 0xdfff) ? String.fromCodePoint(code) : "\uFFFD"

const decodeEntities = (text: string): string =>
  text.replace(/&(#x?[0-9a-f]+|amp|lt|gt|quot|apos|nbsp);/gi, (all, entity: string) => {
    const lower = entity.toLowerCase()
    if (lower.startsWith("#x")) return fromCodePoint(parseInt(lower.slice(2), 16))
    if (lower.startsWith("#")) return fromCodePoint(parseInt(lower.slice(1), 10))
    return ({ amp: "&", lt: "<", gt: ">", quot: "\"", apos: "'", nbsp: " " } as Record<string, string>)[lower] ?? all
  })

/** Text of an HTML fragment: tags removed (`<[^<>]*>`: linear), entities decoded, spaces collapsed. */
const textOf = (fragment: string): string => decodeEntities(fragment.replace(/<[^<>]*>/g, "")).replace(/\s+/g, " ").trim()

/**
 * Converts a page; `links` collects every `<a href>` of it (furniture's links included). A page nested
 * deeper than {@link MAX_NESTING} elements is not converted: its `markdown` is "" and `skipped` says
 * why (its title, description and links are still read).
 */
/**
 * `target` (an `href` or `src` as written) resolved against the page's URL, when it gives an http(s)
 * URL; else as written (`mailto:`, a malformed one).
 */
const absolute = (target: string, base: string | undefined): string => {
  if (base === undefined) return target
  const url = URL.parse(target, base)
  return url !== null && (url.protocol === "http:" || url.protocol === "https:") ? url.href : target
}

/** An attribute as Markdown shows it in a link's title: one line. */
const titleOf = (node: HTMLElement): string => {
  const title = (node.getAttribute("title") ?? "").replace(/(\n+\s*)+/g, "\n").trim()
  return title === "" ? "" : ` "${title.replace(/"/g, '\\"')}"`
}

/**
 * `html` as Markdown. With `base`, the page's URL, its links and images are made absolute (as
 * docs-mcp-server makes them): `[the configuration](config.html)` in an answer pointed nowhere an
 * agent could follow.
 */
export const htmlToMarkdown = (html: string, base?: string): HtmlPage => {
  // Links in the navigation are how a crawl finds pages, so they are collected before it is dropped.
  const scan = scanTags(html)
  const inRange = (of: { start: number; end: number }) => of.start !== -1 && of.end >= of.start
  const content = inRange(scan.main) ? scan.main : inRange(scan.body) ? scan.body : { start: 0, end: html.length }
  const main = html.slice(content.start, content.end)
  const heading = scan.h1.find((h) => h.start >= content.start && h.end !== -1 && h.end <= content.end)
  const title = textOf(scan.title ?? "") || (heading === undefined ? "" : textOf(html.slice(heading.start, heading.end)))
  const description = scan.description ?? ""
  if (scan.depth > MAX_NESTING) {
    return { title, description, markdown: "", links: scan.links, skipped: `nested deeper than ${MAX_NESTING} elements` }
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
  if (base !== undefined) {
    // turndown's own inline link and image rules, with the target resolved
    service.addRule("absoluteLink", {
      filter: (node) => node.nodeName === "A" && (node.getAttribute("href") ?? "") !== "",
      replacement: (content, node) => {
        const element = node as HTMLElement
        const href = absolute(element.getAttribute("href")!, base).replace(/([()])/g, "\\$1")
        return `[${content}](${href}${titleOf(element)})`
      }
    })
    service.addRule("absoluteImage", {
      filter: (node) => node.nodeName === "IMG" && (node.getAttribute("src") ?? "") !== "",
      replacement: (_content, node) => {
        const element = node as HTMLElement
        const alt = (element.getAttribute("alt") ?? "").replace(/(\n+\s*)+/g, "\n").trim()
        return `![${alt}](${absolute(element.getAttribute("src")!, base)}${titleOf(element)})`
      }
    })
  }
  const markdown = service.turndown(main).replace(/\n{3,}/g, "\n\n").trim()
  return { title, description, markdown, links: scan.links }
}
