/**
 * `Source:` lines an agent can open, end to end on a real database and the REST API: a git
 * repository on GitHub links to its files at the commit cloned and the snippet's line (the clone is
 * served from a local bare repository through git's `url.<base>.insteadOf`: no network), an installed
 * npm package naming its repository links to the repository at its version's tag, a folder gives the
 * file's path. Both the text answer's `Source:` line and the JSON `sourceUrl` carry it.
 */
import { assert, layer } from "@effect/vitest"
import { ConfigProvider, Effect, Layer } from "effect"
import * as fs from "node:fs/promises"
import { createRequire } from "node:module"
import * as path from "node:path"
import { Indexer } from "../src/Indexer.ts"
import { Client, docsFolder, git, gitRepository, socketClient, stack } from "./support.ts"


const guide = [
  "# Widgets guide",
  "",
  "## Gauges",
  "",
  "A gauge shows one number between a minimum and a maximum, coloured by thresholds.",
  "",
  "```ts",
  "const gauge = widgets.gauge({ min: 0, max: 100 })",
  "```",
  ""
].join("\n")

const TestLayer = socketClient.pipe(Layer.provideMerge(stack)) as Layer.Layer<Client | Indexer, unknown>

const context = (libraryId: string, query: string, type: "txt" | "json") =>
  Effect.gen(function*() {
    const client = yield* Client
    const response = yield* client.fetch(
      `/api/v2/context?libraryId=${encodeURIComponent(libraryId)}&query=${encodeURIComponent(query)}&type=${type}`
    )
    return type === "json" ? yield* Effect.promise(() => response.json()) : yield* Effect.promise(() => response.text())
  })

layer(TestLayer, { excludeTestServices: true, timeout: 90_000 })("Source: lines an agent can open", (it) => {
  it.effect("git: the repository's page of the file at the commit cloned, at the snippet's line", () =>
    Effect.gen(function*() {
      const { bare, work } = yield* gitRepository("acme", "widgets", {
        "README.md": "# Widgets\n\nDashboards of gauges and sparklines, refreshed from a feed.\n",
        "docs/guide.md": guide
      })
      // the full hash: what a GitHub link names
      const commit = git(work, "rev-parse", "HEAD")
      // https://github.com/acme/widgets.git is this bare repository, for the git the indexer runs
      const saved = { ...process.env }
      Object.assign(process.env, {
        GIT_CONFIG_COUNT: "1",
        GIT_CONFIG_KEY_0: `url.${bare}.insteadOf`,
        GIT_CONFIG_VALUE_0: "https://github.com/acme/widgets.git"
      })
      yield* Effect.addFinalizer(() =>
        Effect.sync(() => {
          for (const key of ["GIT_CONFIG_COUNT", "GIT_CONFIG_KEY_0", "GIT_CONFIG_VALUE_0"]) {
            if (saved[key] === undefined) delete process.env[key]
            else process.env[key] = saved[key]
          }
        })
      )
      const indexer = yield* Indexer
      // github.com does not resolve here (no network) and git never goes there (insteadOf): the outbound
      // guard's address checks off, as for a developer's local mirror
      yield* indexer.add("https://github.com/acme/widgets.git").pipe(
        Effect.provide(ConfigProvider.layer(ConfigProvider.fromEnvRecord({ DOCS_ALLOW_PRIVATE: "true" })))
      )

      const text = yield* context("/acme/widgets", "gauge min max", "txt")
      const url = `https://github.com/acme/widgets/blob/${commit}/docs/guide.md#L8`
      assert.include(text, `Source: ${url}\n`)
      const json = yield* context("/acme/widgets", "gauge min max", "json")
      const gauge = json.snippets.find((snippet: any) => snippet.content.includes("widgets.gauge"))
      assert.strictEqual(gauge.sourceUrl, url)
      assert.strictEqual(gauge.sourcePath, "docs/guide.md")
      // line 8 is the code's first line
      assert.strictEqual(guide.split("\n")[7], "const gauge = widgets.gauge({ min: 0, max: 100 })")
    }).pipe(Effect.scoped))

  it.effect("npm: a package naming its repository links to it at the version's tag and the line", () =>
    Effect.gen(function*() {
      const indexer = yield* Indexer
      yield* indexer.add("npm:he")
      const require = createRequire(import.meta.url)
      const manifest = require.resolve("he/package.json")
      const { version } = require(manifest) as { version: string }
      const readme = yield* Effect.promise(() => fs.readFile(path.join(path.dirname(manifest), "README.md"), "utf8"))
      const json = yield* context("/mathiasbynens/he", "encode", "json")
      const linked = json.snippets.filter((snippet: any) => snippet.sourcePath === "README.md")
      assert.isAbove(linked.length, 0)
      for (const snippet of linked) {
        const match = new RegExp(`^https://github\\.com/mathiasbynens/he/blob/v${version.replaceAll(".", "\\.")}/README\\.md#L(\\d+)$`)
          .exec(snippet.sourceUrl)
        assert.isNotNull(match, snippet.sourceUrl)
        // the line the link names is one of the snippet's (a merged section links to its first part)
        const named = readme.split("\n")[Number(match![1]) - 1]!.trim()
        assert.notStrictEqual(named, "")
        assert.include(snippet.content, named)
      }
    }))

  it.effect("folder: the file's path", () =>
    Effect.gen(function*() {
      const dir = yield* docsFolder({ "docs/guide.md": guide })
      const indexer = yield* Indexer
      yield* indexer.add(dir, { id: "/acme/local-widgets" })
      const text = yield* context("/acme/local-widgets", "gauge min max", "txt")
      assert.include(text, `Source: ${path.join(dir, "docs/guide.md")}\n`)
    }))
})
