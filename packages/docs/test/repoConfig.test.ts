/**
 * `svc.json` at a source's root on a real database: the title, description, folders read, paths
 * excluded and rules for agents it gives, kept up to date by refresh; a bad one fails the add naming
 * the field, with nothing stored.
 */
import { assert, layer } from "@effect/vitest"
import { Effect, Result } from "effect"
import { SqlClient } from "effect/sql"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { Indexer } from "../src/Indexer.ts"
import type { IndexFailed } from "../src/sources/Source.ts"
import { docsFolder, stack } from "./support.ts"

const failureOf = <A>(effect: Effect.Effect<A, IndexFailed>) =>
  Effect.map(Effect.result(effect), (result) => {
    if (Result.isSuccess(result)) throw new Error("expected a failure, the run succeeded")
    return result.failure
  })

const page = (title: string) => `# ${title}\n\nA page about ${title.toLowerCase()}, long enough to be a snippet of its own in the index.\n`

layer(stack)("svc.json", (it) => {
  it.effect("title, description, folders, exclude and rules; refresh reads it again", () =>
    Effect.gen(function*() {
      const dir = yield* docsFolder({
        "package.json": JSON.stringify({ name: "widgets-pkg", description: "From package.json", version: "1.0.0" }),
        "README.md": page("Readme"),
        "docs/guide.md": page("Guide"),
        "docs/internal/notes.md": page("Internal notes"),
        "docs/drafts.md": page("Drafts"),
        "guides/start.md": page("Start"),
        "other/ignored.md": page("Ignored"),
        "svc.json": JSON.stringify({
          $schema: "https://example.com/svc.schema.json",
          title: "Widgets",
          description: "Reusable widgets for dashboards",
          folders: ["docs", "guides/"],
          exclude: ["docs/internal", "docs/drafts.md"],
          rules: ["Always dispose a widget with Widget.close", "Prefer Widget.make over new Widget"]
        })
      })
      const indexer = yield* Indexer
      const outcome = yield* indexer.add(dir, { id: "/acme/widgets" })
      assert.strictEqual(outcome.files, 2)
      const sql = yield* SqlClient.SqlClient
      const paths = yield* sql<{ source_path: string }>`
        SELECT DISTINCT s.source_path FROM docs.snippets s JOIN docs.versions v ON v.generation_id = s.generation_id
        WHERE v.library_id = '/acme/widgets' ORDER BY 1`
      assert.deepStrictEqual(paths.map((row) => row.source_path), ["docs/guide.md", "guides/start.md"])
      const [row] = yield* sql<{ title: string; description: string }>`SELECT title, description FROM docs.libraries WHERE id = '/acme/widgets'`
      assert.deepStrictEqual(row, { title: "Widgets", description: "Reusable widgets for dashboards" })
      const listed = (yield* indexer.list).find((library) => library.id === "/acme/widgets")!
      assert.deepStrictEqual(listed.rules, ["Always dispose a widget with Widget.close", "Prefer Widget.make over new Widget"])

      yield* Effect.promise(() => fs.writeFile(path.join(dir, "svc.json"), JSON.stringify({ exclude: ["other"], rules: ["Only this rule"] })))
      const refreshed = yield* indexer.refresh("/acme/widgets")
      assert.strictEqual(refreshed.files, 5, "every file but other/ once folders is gone")
      const again = (yield* indexer.list).find((library) => library.id === "/acme/widgets")!
      assert.deepStrictEqual(again.rules, ["Only this rule"])
      assert.strictEqual(again.title, "widgets-pkg", "package.json's name again without a title in svc.json")
    }))

  it.effect("a bad svc.json fails the add naming the field; nothing is stored", () =>
    Effect.gen(function*() {
      const indexer = yield* Indexer
      const cases: ReadonlyArray<readonly [string, string]> = [
        [JSON.stringify({ title: "X", colour: "blue" }), `colour: is not a field of svc.json`],
        [JSON.stringify({ folders: ["docs", "missing"] }), `folders[1] "missing" does not exist`],
        [JSON.stringify({ exclude: ["../etc"] }), `exclude[0]: must be a path relative to the root, without ..`],
        [JSON.stringify({ folders: ["/etc"] }), `folders[0]: must be a path relative to the root, without ..`],
        [JSON.stringify({ rules: ["fine", 42] }), `rules[1]: Expected string`],
        [JSON.stringify({ title: "" }), `title: Expected a value with a length of at least 1`],
        [JSON.stringify({ description: "d".repeat(1001) }), `description: Expected a value with a length of at most 1000`],
        ["{ not json", `is not valid JSON`]
      ]
      for (const [config, expected] of cases) {
        const dir = yield* docsFolder({ "docs/guide.md": page("Guide"), "svc.json": config })
        const failure = yield* failureOf(indexer.add(dir, { id: "/acme/bad" }))
        assert.strictEqual(failure.category, "invalid_source", config)
        assert.strictEqual(failure.message, `svc.json of ${dir}: ${expected}`)
      }
      assert.isFalse((yield* indexer.list).some((library) => library.id === "/acme/bad"))
    }))
})
