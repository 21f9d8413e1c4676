/** The splitter on crafted documents: headings, code blocks, descriptions, rst, text, size bounds. */
import { assert, describe, it } from "@effect/vitest"
import { MAX_SNIPPET_CHARS, render, SEPARATOR, split, tokensOf } from "../../src/Splitter.ts"

const markdown = `---
title: ignored front matter
---

# Guide

Intro paragraph that explains what the library does, long enough to be a prose snippet.

## Install

Install it with npm first.

Then add it to your project like this:

\`\`\`bash
npm install thing
\`\`\`

\`\`\`
no language here
\`\`\`

### Deep

\`\`\`TypeScript
const x = make()
\`\`\`

# Other

Setext Title
------------

<!-- a comment that must not become prose -->

\`\`\`js
ok()
\`\`\`
`

describe("Splitter", () => {
  it("markdown: code blocks carry heading path, title, the paragraph before them and their language", () => {
    const snippets = split(markdown, "docs/guide.md")
    const code = snippets.filter((snippet) => snippet.kind === "code")
    assert.deepStrictEqual(code.map((snippet) => snippet.body), [
      "npm install thing",
      "no language here",
      "const x = make()",
      "ok()"
    ].filter((body) => body.length >= 8))
    const install = code[0]!
    assert.deepStrictEqual(install.headingPath, ["Guide", "Install"])
    assert.strictEqual(install.title, "Install")
    assert.strictEqual(install.description, "Then add it to your project like this:")
    assert.strictEqual(install.language, "bash")
    assert.strictEqual(install.sourcePath, "docs/guide.md")
    // The second block directly follows the first: no paragraph of its own, so no description.
    assert.strictEqual(code[1]!.description, "")
    assert.strictEqual(code[1]!.language, null)
    const deep = code[2]!
    assert.deepStrictEqual(deep.headingPath, ["Guide", "Install", "Deep"])
    assert.strictEqual(deep.language, "typescript")
  })

  it("markdown: a new H1 resets the path, setext headings count, comments and front matter are not prose", () => {
    const snippets = split(`${markdown}\n\`\`\`js\nafterSetext()\n\`\`\`\n`, "guide.md")
    const last = snippets.filter((snippet) => snippet.kind === "code").at(-1)!
    assert.deepStrictEqual(last.headingPath, ["Other", "Setext Title"])
    const prose = snippets.filter((snippet) => snippet.kind === "prose")
    // "Install" keeps only "Install it with npm first." (its other paragraph is the code's
    // description, not repeated): too short on its own. "Other" has no prose.
    assert.deepStrictEqual(prose.map((snippet) => snippet.title), ["Guide"])
    assert.include(prose[0]!.body, "Intro paragraph")
    for (const snippet of snippets) {
      assert.notInclude(snippet.body, "comment that must not")
      assert.notInclude(snippet.body, "front matter")
    }
  })

  it("headings lose badges, links and inline code marks", () => {
    const [snippet] = split("# he [![Build status](https://ci.example/he.svg)](https://ci.example/he) `v1`\n\n## The [`decode`](#decode) function\n\n```js\nhe.decode('&amp;')\n```\n", "README.md")
    assert.deepStrictEqual(snippet!.headingPath, ["he v1", "The decode function"])
  })

  it("a documentation site's page (VitePress): anchors, badges, Vue blocks, code imports, [[toc]] and code-group openings are not text", () => {
    const page = [
      "<script setup>",
      "import { data } from './members.data'",
      "const members = data.filter((member) => member.active)",
      "</script>",
      "",
      "# Mocking {#mocking}",
      "",
      "[[toc]]",
      "",
      "## vi.fn <Badge type=\"info\">experimental</Badge> {#vi-fn}",
      "",
      "<<< @/snippets/mock.ts",
      "",
      "Creates a spy on a function that records every call, its arguments and what it returned.",
      "",
      "Install it first:",
      "",
      "::: code-group",
      "```sh [npm]",
      "npm install -D vitest",
      "```",
      ":::",
      "",
      "<style scoped>",
      ".member { color: red }",
      "</style>",
      ""
    ].join("\n")
    const snippets = split(page, "guide/mocking.md")
    assert.deepStrictEqual(snippets.map((snippet) => [snippet.headingPath, snippet.description, snippet.body]), [
      [["Mocking", "vi.fn"], "Install it first:", "npm install -D vitest"],
      [["Mocking", "vi.fn"], "", "Creates a spy on a function that records every call, its arguments and what it returned.\n\n:::"]
    ])
    // a <script> line never closed is not a block: what follows it is read as usual
    const unclosed = split("# Embedding\n\n<script src=\"https://cdn.example/widget.js\">\n\nPaste the tag above into the page and the widget loads itself.\n", "embed.md")
    assert.include(unclosed.map((snippet) => snippet.body).join("\n"), "Paste the tag above into the page")
  })

  it("drops trivial snippets: short prose and tiny code", () => {
    const snippets = split("# A\n\nSee below.\n\n```\nx\n```\n\n```sh\nnpm i thing\n```\n", "a.md")
    assert.deepStrictEqual(snippets.map((snippet) => [snippet.kind, snippet.body]), [["code", "npm i thing"]])
  })

  it("splits long prose at paragraph ends and long code at line ends, each part within the bound", () => {
    const paragraph = "Lorem ipsum dolor sit amet, consectetur adipiscing elit. ".repeat(10).trim()
    const longProse = Array.from({ length: 20 }, () => paragraph).join("\n\n")
    const longCode = Array.from({ length: 400 }, (_, i) => `const value${i} = compute(${i}) // line ${i}`).join("\n")
    const snippets = split(`# Long\n\n${longProse}\n\n## Code\n\n\`\`\`ts\n${longCode}\n\`\`\`\n`, "long.md")
    const prose = snippets.filter((snippet) => snippet.kind === "prose")
    const code = snippets.filter((snippet) => snippet.kind === "code")
    assert.isAbove(prose.length, 1)
    assert.isAbove(code.length, 1)
    for (const snippet of snippets) assert.isAtMost(snippet.body.length, MAX_SNIPPET_CHARS)
    assert.deepStrictEqual(prose.map((snippet) => snippet.title).slice(0, 2), ["Long (part 1)", "Long (part 2)"])
    // Nothing is lost: the parts put back together are the original.
    assert.strictEqual(prose.map((snippet) => snippet.body).join("\n\n"), longProse)
    assert.strictEqual(code.map((snippet) => snippet.body).join("\n"), longCode)
    // Code parts end at line ends.
    for (const snippet of code) assert.match(snippet.body, /\/\/ line \d+$/)
  })

  it("rst: underlined sections by order of appearance, code-block directives and literal blocks", () => {
    const rst = `Farewells
=========

Besides greetings, the library says goodbye politely with helpers for that.

Saying goodbye
--------------

Use \`\`farewell\`\` to end a conversation:

.. code-block:: python
   :linenos:

   from greeter import farewell
   farewell("Ada")

Another section
===============

A literal example follows::

   farewell("Ada", formal=True)

.. note::

   Notes read as prose.
`
    const snippets = split(rst, "farewells.rst")
    const code = snippets.filter((snippet) => snippet.kind === "code")
    assert.strictEqual(code.length, 2)
    assert.deepStrictEqual(code[0]!.headingPath, ["Farewells", "Saying goodbye"])
    assert.strictEqual(code[0]!.language, "python")
    assert.strictEqual(code[0]!.body, `from greeter import farewell\nfarewell("Ada")`)
    assert.strictEqual(code[0]!.description, "Use ``farewell`` to end a conversation:")
    assert.deepStrictEqual(code[1]!.headingPath, ["Another section"])
    assert.strictEqual(code[1]!.description, "A literal example follows:")
    assert.strictEqual(code[1]!.body, `farewell("Ada", formal=True)`)
    assert.strictEqual(code[1]!.language, null)
  })

  it("plain text: prose titled by the file name", () => {
    const snippets = split("Frequently asked questions.\n\nIt works in browsers and in Node.js alike, from version 18 on.\n", "docs/faq.txt")
    assert.strictEqual(snippets.length, 1)
    assert.strictEqual(snippets[0]!.title, "faq")
    assert.deepStrictEqual(snippets[0]!.headingPath, [])
  })

  it("tokens are chars / 4 of the rendered snippet with its separator", () => {
    const [snippet] = split("# T\n\nCall it:\n\n```ts\nconst a = 1\n```\n", "t.md")
    assert.strictEqual(snippet!.tokens, Math.ceil((render(snippet!) + SEPARATOR).length / 4))
    assert.strictEqual(tokensOf(snippet!), snippet!.tokens)
    assert.include(render(snippet!), "```ts\nconst a = 1\n```")
  })
})
