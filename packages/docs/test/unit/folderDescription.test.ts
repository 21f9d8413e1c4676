/**
 * A folder's title and description when `svc docs add` names none: its README's first heading and
 * first paragraph of prose, else the first Markdown heading (top, then one folder down), never the
 * folder's name; `--title`/`--description` and package.json win. Resolved through `Sources` on the
 * Node file system (temporary folders), nothing indexed.
 */
import { assert, describe, it } from "@effect/vitest"
import { tempDir } from "@svc/platform/testing"
import { Effect } from "effect"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { Sources } from "../../src/sources/Sources.ts"
import type { SourceOptions } from "../../src/sources/Source.ts"

const folder = (name: string, files: Record<string, string>) =>
  Effect.gen(function*() {
    const dir = path.join(yield* tempDir("svc-docs-title-"), name)
    yield* Effect.promise(async () => {
      for (const [file, content] of Object.entries(files)) {
        await fs.mkdir(path.dirname(path.join(dir, file)), { recursive: true })
        await fs.writeFile(path.join(dir, file), content)
      }
    })
    return dir
  })

const described = (dir: string, options: SourceOptions = {}) =>
  Effect.gen(function*() {
    const sources = yield* Sources
    const resolved = yield* sources.resolve(dir, options)
    return { title: resolved.title, description: resolved.description, libraryId: resolved.libraryId }
  }).pipe(Effect.scoped, Effect.provide(Sources.layer))

describe("a folder's title and description", () => {
  it.effect("from the README: first heading, first paragraph of prose (badges and HTML skipped)", () =>
    Effect.gen(function*() {
      const dir = yield* folder("docs", {
        "README.md": "<p align=\"center\"><img src=\"logo.png\"></p>\n\n" +
          "# The **Widgets** toolkit [![npm](https://img.shields.io/npm/v/w.svg)](https://npm.im/w)\n\n" +
          "[![build](https://ci/badge.svg)](https://ci) [![cov](https://cov/badge.svg)](https://cov)\n\n" +
          "Widgets render [dashboards](https://example.com) of gauges and sparklines,\nrefreshed from a feed.\n\n" +
          "## Install\n\nnpm i widgets and more words here.\n",
        "guide/gauges.md": "# Gauges\n\nA gauge shows one number.\n"
      })
      const result = yield* described(dir)
      assert.deepStrictEqual(result, {
        title: "The Widgets toolkit",
        description: "Widgets render dashboards of gauges and sparklines, refreshed from a feed.",
        libraryId: "/local/docs"
      })
    }))

  it.effect("no README: the first Markdown file's heading at the top, else one folder down", () =>
    Effect.gen(function*() {
      const top = yield* folder("docs", {
        "b-usage.md": "# Usage of Gizmo\n\nHow to use the gizmo in an application, step by step.\n",
        "a-intro.mdx": "---\ntitle: ignored front matter\n---\n\nimport X from './x'\n\n# Gizmo\n\nGizmo makes gadgets from widgets and sprockets.\n"
      })
      assert.deepStrictEqual(yield* described(top), {
        title: "Gizmo",
        description: "Gizmo makes gadgets from widgets and sprockets.",
        libraryId: "/local/docs"
      })
      const nested = yield* folder("site", { "content/index.md": "Setext Title\n============\n\nThe nested index page of a documentation site.\n" })
      assert.strictEqual((yield* described(nested)).title, "Setext Title")
      // nothing to go by: the id's name, as before
      const bare = yield* folder("notes", { "notes.txt": "plain text notes without any heading at all, long enough." })
      assert.deepStrictEqual(yield* described(bare), { title: "notes", description: "", libraryId: "/local/notes" })
    }))

  it.effect("--title and --description win; package.json's name and description come before the docs'", () =>
    Effect.gen(function*() {
      const dir = yield* folder("docs", { "README.md": "# From the README\n\nThe README's own first paragraph of text.\n" })
      assert.deepStrictEqual(yield* described(dir, { title: "Acme handbook", description: "How we build" }), {
        title: "Acme handbook",
        description: "How we build",
        libraryId: "/local/docs"
      })
      assert.deepStrictEqual(yield* described(dir, { title: "Only the title" }), {
        title: "Only the title",
        description: "The README's own first paragraph of text.",
        libraryId: "/local/docs"
      })
      const pkg = yield* folder("pkg", {
        "package.json": JSON.stringify({ name: "acme-widgets", description: "Widgets, packaged" }),
        "README.md": "# Widgets\n\nThe README's own first paragraph of text.\n"
      })
      const fromPackage = yield* described(pkg)
      assert.strictEqual(fromPackage.title, "acme-widgets")
      assert.strictEqual(fromPackage.description, "Widgets, packaged")
      // a package without a description: the README's
      const noDescription = yield* folder("pkg2", {
        "package.json": JSON.stringify({ name: "acme-gears" }),
        "README.md": "# Gears\n\nGears turn other gears, in both directions.\n"
      })
      assert.strictEqual((yield* described(noDescription)).description, "Gears turn other gears, in both directions.")
    }))

  it.effect("a long heading and paragraph are clipped at a word", () =>
    Effect.gen(function*() {
      const dir = yield* folder("docs", { "README.md": `# ${"title ".repeat(40)}\n\n${"word ".repeat(200)}\n` })
      const result = yield* described(dir)
      assert.isAtMost(result.title.length, 100)
      assert.isAtMost(result.description.length, 300)
      assert.match(result.description, /word…$/)
    }))
})
