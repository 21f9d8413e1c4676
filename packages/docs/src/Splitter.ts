/**
 * Splits one documentation file into snippets: pure functions, no I/O.
 *
 * A file is first read into a flat list of blocks (heading, paragraph, code) by a small reader per
 * format (Markdown/MDX, reStructuredText, plain text); one assembler then turns blocks into snippets,
 * so every format follows the same rules:
 *
 * - every code block is a snippet, with the heading path above it (H1 > H2 > H3 ...), its title (the
 *   nearest heading, else the file name), its description (the prose paragraph just before it, in the
 *   same section) and its language;
 * - the prose of a section (between two headings, code and the code's descriptions left out) is a
 *   snippet of its own;
 * - size bounds: a snippet over {@link MAX_SNIPPET_CHARS} is cut (prose at paragraph ends, code at
 *   line ends) into parts titled "… (part n)"; trivial ones (prose under {@link MIN_PROSE_CHARS},
 *   code under {@link MIN_CODE_CHARS}) are dropped;
 * - tokens are estimated as characters / 4 of the snippet as the context endpoint renders it, so the
 *   endpoint's token budget adds up.
 */

export type Format = "markdown" | "rst" | "text" | "example"

export interface Snippet {
  readonly kind: "code" | "prose"
  readonly title: string
  readonly headingPath: ReadonlyArray<string>
  /** Code: the paragraph before the block. Prose: empty. */
  readonly description: string
  /** Code only; null when the block names none. */
  readonly language: string | null
  /** The code, or the prose text. */
  readonly body: string
  /** Relative to the library's root, `/`-separated. */
  readonly sourcePath: string
  /**
   * Where an agent can open it, shown on the `Source:` line instead of `sourcePath`: the repository's
   * page of the file at its line, or a folder's file path (sources/SourceLinks.ts); none: `sourcePath`.
   */
  readonly sourceUrl?: string | undefined
  readonly tokens: number
}

/** Prose sections shorter than this say nothing on their own ("See below."). */
export const MIN_PROSE_CHARS = 60
/** Code blocks shorter than this are not worth a snippet (`npm i x` is 8 chars and is kept). */
export const MIN_CODE_CHARS = 8
/** About 1,000 tokens: one snippet must fit comfortably into a small context budget. */
export const MAX_SNIPPET_CHARS = 4000

/** The tokens of a text of `length` characters: ≈ chars / 4, the usual estimate for English text and code. */
export const tokensOfLength = (length: number): number => Math.ceil(length / 4)
export const estimateTokens = (text: string): number => tokensOfLength(text.length)

/** Folders whose source files are examples meant to be read (`examples/`, `ai-docs/`, ...). */
const EXAMPLE_FOLDERS = new Set(["example", "examples", "ai-docs", "cookbook", "recipes"])
const EXAMPLE_LANGUAGES: Record<string, string> = {
  ts: "ts", tsx: "tsx", mts: "ts", cts: "ts", js: "js", jsx: "jsx", mjs: "js", cjs: "js"
}

/**
 * Which reader a file (its path relative to the library root) calls for; undefined: not
 * documentation. Source files count only inside an examples folder: a package's own sources and
 * builds are not documentation, its examples are.
 */
export const formatOf = (filePath: string): Format | undefined => {
  const lower = filePath.toLowerCase()
  if (lower.endsWith(".md") || lower.endsWith(".mdx") || lower.endsWith(".markdown")) return "markdown"
  if (lower.endsWith(".rst")) return "rst"
  if (lower.endsWith(".txt")) return "text"
  const extension = lower.slice(lower.lastIndexOf(".") + 1)
  if (EXAMPLE_LANGUAGES[extension] !== undefined && !lower.endsWith(".d.ts")) {
    const folders = lower.split("/").slice(0, -1)
    if (folders.some((folder) => EXAMPLE_FOLDERS.has(folder))) return "example"
  }
  return undefined
}

// -----------------------------------------------------------------------------
// Rendering (shared with the context endpoint, so token estimates match what is sent)
// -----------------------------------------------------------------------------

/** Written between snippets in text answers. */
export const SEPARATOR = "\n\n----------------------------------------\n\n"

type Renderable = Pick<Snippet, "kind" | "title" | "description" | "language" | "body" | "sourcePath" | "sourceUrl">

/** A snippet as the context endpoint's `type=txt` answer shows it. */
export const render = (snippet: Renderable): string => {
  const head = `### ${snippet.title}\n\nSource: ${snippet.sourceUrl ?? snippet.sourcePath}\n\n`
  if (snippet.kind === "prose") return head + snippet.body
  const description = snippet.description === "" ? "" : `${snippet.description}\n\n`
  return `${head}${description}\`\`\`${snippet.language ?? ""}\n${snippet.body}\n\`\`\``
}

/** What one snippet costs in a text answer, its separator included. */
export const tokensOf = (snippet: Renderable): number => estimateTokens(render(snippet) + SEPARATOR)

// -----------------------------------------------------------------------------
// Blocks
// -----------------------------------------------------------------------------

export type Block =
  | { readonly _tag: "Heading"; readonly level: number; readonly text: string }
  | { readonly _tag: "Paragraph"; readonly text: string }
  | { readonly _tag: "Code"; readonly language: string | null; readonly code: string }

const heading = (level: number, text: string): Block => ({ _tag: "Heading", level, text: cleanInline(text) })
const paragraph = (lines: ReadonlyArray<string>): Block => ({ _tag: "Paragraph", text: lines.join("\n").trim() })
const code = (language: string | null, lines: ReadonlyArray<string>): Block => ({
  _tag: "Code",
  language: language === null || language === "" ? null : language.toLowerCase(),
  code: dedent(lines).join("\n").replace(/^\n+|\s+$/g, "")
})

/**
 * Heading text without Markdown decoration: `` `foo()` `` → `foo()`, links keep their text, images
 * (README badges: `# he [![Build status](…)](…)`), HTML tags, VitePress badges and an explicit
 * anchor (`{#id}`) go.
 */
const cleanInline = (text: string): string =>
  text.replace(/!\[[^\]]*\]\([^)]*\)/g, "").replace(/\[([^\]]*)\]\([^)]*\)/g, "$1").replace(BADGE, "")
    .replace(/<[^>]+>/g, "").replace(CUSTOM_ANCHOR, "").replace(/[`*_]/g, "").replace(/\s+/g, " ").trim()

/** VitePress's label beside a heading (`## vi.fn <Badge type="info">experimental</Badge>`), its text included. */
const BADGE = /<Badge\b[^>]*\/>|<Badge\b[^>]*>.*?<\/Badge>/g
/** A heading's explicit anchor, `## Mocking {#mocking}` (VitePress, Docusaurus, Pandoc): not words of the heading. */
const CUSTOM_ANCHOR = /\s*\{#[\w.:-]+\}\s*$/

/**
 * A VitePress code import (`<<< @/snippets/a.ts`, a file this reader does not have), a table-of-contents
 * marker, or the opening of a code group (`::: code-group`: else the group's first block is described
 * by it, not by the paragraph before the group).
 */
const SITE_MARKER = /^\s{0,3}(<<<\s|\[\[toc\]\]\s*$|:{3,}\s*code-group\s*$)/i
/** A Vue block of a VitePress page (`<script setup>` … `</script>`, `<style>`): code of the site, not docs. */
const VUE_BLOCK = /^<(script|style)\b[^>]*>/i

const dedent = (lines: ReadonlyArray<string>): ReadonlyArray<string> => {
  const indents = lines.filter((line) => line.trim() !== "").map((line) => /^\s*/.exec(line)![0].length)
  const strip = indents.length === 0 ? 0 : Math.min(...indents)
  return lines.map((line) => line.slice(strip))
}

/** Collects paragraph lines; a blank line or a block ends the paragraph. */
const paragraphs = () => {
  const blocks: Array<Block> = []
  let lines: Array<string> = []
  const flush = () => {
    if (lines.some((line) => line.trim() !== "")) blocks.push(paragraph(lines))
    lines = []
  }
  return { blocks, flush, add: (line: string) => lines.push(line), push: (block: Block) => (flush(), blocks.push(block)) }
}

// -----------------------------------------------------------------------------
// Markdown / MDX
// -----------------------------------------------------------------------------

const FENCE = /^(\s{0,3})(`{3,}|~{3,})\s*([^`\s{]*)/
const ATX = /^\s{0,3}(#{1,6})\s+(.*?)(?:\s+#+)?\s*$/

/** Markdown (and MDX: import/export lines and lone JSX tags are skipped) into blocks. */
export const readMarkdown = (content: string): ReadonlyArray<Block> => {
  const lines = content.replace(/\r\n?/g, "\n").split("\n")
  const out = paragraphs()
  let i = 0
  // YAML front matter
  if (lines[0]?.trim() === "---") {
    const end = lines.indexOf("---", 1)
    if (end > 0) i = end + 1
  }
  let inComment = false
  for (; i < lines.length; i++) {
    const line = lines[i]!
    if (inComment) {
      if (line.includes("-->")) inComment = false
      continue
    }
    const fence = FENCE.exec(line)
    if (fence) {
      const marker = fence[2]!
      const body: Array<string> = []
      i++
      while (i < lines.length && !lines[i]!.trimStart().startsWith(marker)) body.push(lines[i++]!)
      out.push(code(fence[3] ?? null, body))
      continue
    }
    const atx = ATX.exec(line)
    if (atx) {
      out.push(heading(atx[1]!.length, atx[2]!))
      continue
    }
    if (SITE_MARKER.test(line)) continue
    const vue = VUE_BLOCK.exec(line)
    const vueEnd = vue ? lines.findIndex((later, j) => j >= i && later.toLowerCase().includes(`</${vue[1]!.toLowerCase()}>`)) : -1
    if (vueEnd !== -1) {
      // (never closed: not a block, read on as text)
      out.flush()
      i = vueEnd
      continue
    }
    const next = lines[i + 1]
    // Setext: "Title\n=====" (H1) or "Title\n-----" (H2), when the title is one plain line.
    if (next !== undefined && line.trim() !== "" && /^\s{0,3}(=+|-+)\s*$/.test(next) && !/^\s*[-*+>|]/.test(line)) {
      out.push(heading(next.trim().startsWith("=") ? 1 : 2, line))
      i++
      continue
    }
    if (line.trimStart().startsWith("<!--")) {
      if (!line.includes("-->")) inComment = true
      continue
    }
    // MDX module syntax and lone JSX tags carry no prose.
    if (/^(import|export)\s/.test(line) || /^\s*<\/?[A-Z][\w.]*[^>]*>\s*$/.test(line)) {
      out.flush()
      continue
    }
    if (line.trim() === "") out.flush()
    else out.add(line)
  }
  out.flush()
  return out.blocks
}

// -----------------------------------------------------------------------------
// reStructuredText
// -----------------------------------------------------------------------------

const ADORNMENT = /^([=\-~^"'`#*+:.])\1{2,}\s*$/
const CODE_DIRECTIVE = /^\.\.\s+(?:code-block|code|sourcecode)::\s*(\S*)\s*$/
const OTHER_DIRECTIVE = /^\.\.\s+\S/

/**
 * reStructuredText into blocks. Section levels follow the order in which underline styles first
 * appear (as docutils does). Code: `.. code-block:: lang` (and `code`, `sourcecode`) and literal
 * blocks after a paragraph ending in `::`. Other directives and comments are skipped, their indented
 * content read as prose.
 */
export const readRst = (content: string): ReadonlyArray<Block> => {
  const lines = content.replace(/\r\n?/g, "\n").split("\n")
  const out = paragraphs()
  const styles: Array<string> = []
  const levelOf = (style: string) => {
    if (!styles.includes(style)) styles.push(style)
    return styles.indexOf(style) + 1
  }
  /** The indented block from line `from` on (after blank lines): its lines and where it ends. */
  const indented = (from: number) => {
    let j = from
    const body: Array<string> = []
    while (j < lines.length && (lines[j]!.trim() === "" || /^\s/.test(lines[j]!))) {
      if (body.length > 0 || lines[j]!.trim() !== "") body.push(lines[j]!)
      j++
    }
    return { body, end: j - 1 }
  }
  let literalNext = false
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!
    const next = lines[i + 1]
    // Overlined title: ====\nTitle\n====
    if (ADORNMENT.test(line) && next !== undefined && next.trim() !== "" && ADORNMENT.test(lines[i + 2] ?? "")) {
      out.push(heading(levelOf(`over${line.trim()[0]}`), next))
      i += 2
      continue
    }
    if (line.trim() !== "" && !/^\s/.test(line) && next !== undefined && ADORNMENT.test(next) &&
      next.trim().length >= line.trim().length) {
      out.push(heading(levelOf(next.trim()[0]!), line))
      i++
      continue
    }
    const directive = CODE_DIRECTIVE.exec(line)
    if (directive) {
      let j = i + 1
      while (j < lines.length && /^\s+:[\w-]+:/.test(lines[j]!)) j++ // options such as :linenos:
      const { body, end } = indented(j)
      out.push(code(directive[1] || null, body))
      i = end
      continue
    }
    if (OTHER_DIRECTIVE.test(line)) {
      out.flush()
      continue // its indented content, if any, reads as prose
    }
    if (literalNext && /^\s/.test(line)) {
      const { body, end } = indented(i)
      out.push(code(null, body))
      i = end
      literalNext = false
      continue
    }
    if (line.trim() === "") {
      out.flush()
      continue
    }
    if (line.trimEnd().endsWith("::")) {
      // "Example::" introduces a literal block; the paragraph reads "Example:".
      out.add(line.trimEnd().replace(/\s*::$/, line.trim() === "::" ? "" : ":"))
      literalNext = true
      continue
    }
    literalNext = false
    out.add(line.trim())
  }
  out.flush()
  return out.blocks
}

/** Plain text: paragraphs only. */
export const readText = (content: string): ReadonlyArray<Block> => {
  const out = paragraphs()
  for (const line of content.replace(/\r\n?/g, "\n").split("\n")) {
    if (line.trim() === "") out.flush()
    else out.add(line)
  }
  out.flush()
  return out.blocks
}

// -----------------------------------------------------------------------------
// Blocks into snippets
// -----------------------------------------------------------------------------

/** Cuts text at `separator` boundaries into pieces of at most `max` chars (hard cut for longer pieces). */
const cut = (text: string, separator: string, max: number): ReadonlyArray<string> => {
  const parts: Array<string> = []
  let current = ""
  for (const piece of text.split(separator)) {
    for (let start = 0; start < Math.max(piece.length, 1); start += max) {
      const chunk = piece.slice(start, start + max)
      if (current !== "" && current.length + separator.length + chunk.length > max) {
        parts.push(current)
        current = chunk
      } else {
        current = current === "" ? chunk : current + separator + chunk
      }
    }
  }
  if (current.trim() !== "") parts.push(current)
  return parts
}

/** Blocks of one file into size-bounded snippets (see the module comment). */
export const assemble = (blocks: ReadonlyArray<Block>, sourcePath: string): ReadonlyArray<Snippet> => {
  const fileTitle = sourcePath.split("/").pop()!.replace(/\.[^.]+$/, "")
  const snippets: Array<Snippet> = []
  const path: Array<{ level: number; text: string }> = []
  let prose: Array<string> = []
  let lastParagraph = ""

  const base = () => {
    const headingPath = path.map((entry) => entry.text)
    return { headingPath, title: headingPath.at(-1) ?? fileTitle, sourcePath }
  }
  const emit = (snippet: Omit<Snippet, "tokens">, separator: string) => {
    const parts = snippet.body.length > MAX_SNIPPET_CHARS ? cut(snippet.body, separator, MAX_SNIPPET_CHARS) : [snippet.body]
    parts.forEach((body, index) => {
      const part = {
        ...snippet,
        body,
        title: parts.length > 1 ? `${snippet.title} (part ${index + 1})` : snippet.title
      }
      snippets.push({ ...part, tokens: tokensOf(part) })
    })
  }
  const flushProse = () => {
    const text = prose.join("\n\n").trim()
    prose = []
    if (text.length >= MIN_PROSE_CHARS) {
      emit({ ...base(), kind: "prose", description: "", language: null, body: text }, "\n\n")
    }
  }

  for (const block of blocks) {
    switch (block._tag) {
      case "Heading": {
        flushProse()
        lastParagraph = ""
        while (path.length > 0 && path.at(-1)!.level >= block.level) path.pop()
        path.push({ level: block.level, text: block.text })
        break
      }
      case "Paragraph": {
        prose.push(block.text)
        lastParagraph = block.text
        break
      }
      case "Code": {
        if (block.code.trim().length >= MIN_CODE_CHARS) {
          emit({ ...base(), kind: "code", description: lastParagraph, language: block.language, body: block.code }, "\n")
          // The paragraph lives on as the code's description; the section's prose does not repeat it.
          if (lastParagraph !== "" && prose.at(-1) === lastParagraph) prose.pop()
        }
        // The next block's description must be its own paragraph, not this block's.
        lastParagraph = ""
        break
      }
    }
  }
  flushProse()
  return snippets
}

/**
 * An example source file: its leading doc comment (an `@title` tag, or else its first line, and the
 * text after it) becomes the heading and the description, the code after the comment one code block
 * (cut by the size bound like any other block).
 */
export const readExample = (content: string, sourcePath: string): ReadonlyArray<Block> => {
  const language = EXAMPLE_LANGUAGES[sourcePath.slice(sourcePath.lastIndexOf(".") + 1).toLowerCase()] ?? null
  const text = content.replace(/\r\n?/g, "\n")
  const comment = /^\s*\/\*\*([\s\S]*?)\*\//.exec(text)
  const blocks: Array<Block> = []
  let codeText = text
  if (comment !== null) {
    const lines = comment[1]!.split("\n").map((line) => line.replace(/^\s*\* ?/, "").trimEnd())
    const titleTag = lines.find((line) => line.startsWith("@title "))
    const prose = lines.filter((line) => !line.startsWith("@")).join("\n").trim()
    const [firstParagraph = "", ...rest] = prose.split(/\n\s*\n/)
    const title = titleTag?.slice("@title ".length).trim() ?? firstParagraph.split("\n")[0]!.trim()
    const description = titleTag === undefined ? rest.join("\n\n") : prose
    if (title !== "") blocks.push(heading(1, title))
    if (description.trim() !== "") blocks.push(paragraph(description.trim().split("\n")))
    codeText = text.slice(comment[0].length)
  }
  blocks.push(code(language, codeText.split("\n")))
  return blocks
}

/** One file's snippets. */
export const split = (content: string, sourcePath: string, format: Format = formatOf(sourcePath) ?? "text") =>
  assemble(
    format === "markdown"
      ? readMarkdown(content)
      : format === "rst"
      ? readRst(content)
      : format === "example"
      ? readExample(content, sourcePath)
      : readText(content),
    sourcePath
  )
