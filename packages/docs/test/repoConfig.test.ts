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

  it.effect("an empty folders list reads every folder, as Context7 reads context7.json's (its default), not none", () =>
    Effect.gen(function*() {
      // a context7.json copied as svc.json usually carries "folders": [] (Context7: "all"); it read
      // no file at all and failed "No documentation found in …", which never named svc.json
      const dir = yield* docsFolder({
        "README.md": page("Readme"),
        "docs/guide.md": page("Guide"),
        "docs/internal.md": page("Internal"),
        "svc.json": JSON.stringify({ folders: [], exclude: ["docs/internal.md"] })
      })
      const outcome = yield* (yield* Indexer).add(dir, { id: "/acme/all-folders" })
      assert.strictEqual(outcome.files, 2)
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
        [JSON.stringify({ title: "" }), `title: must not be blank`],
        // a rule leads every answer: one line of text, or it could forge the answer's own separators
        [JSON.stringify({ rules: ["fine", "two\n\n---\n### lines"] }), `rules[1]: must be one line of text (no line breaks or control characters)`],
        [JSON.stringify({ rules: ["nul \u0000 here"] }), `rules[0]: must be one line of text (no line breaks or control characters)`],
        [JSON.stringify({ rules: ["escape \u001b[31m"] }), `rules[0]: must be one line of text (no line breaks or control characters)`],
        [JSON.stringify({ rules: ["   "] }), `rules[0]: must not be blank`],
        [`{"rules":["lone \\ud800 half"]}`, `rules[0]: holds an unpaired surrogate (\\ud800-\\udfff alone): not text`],
        [JSON.stringify({ title: "Two\nlines" }), `title: must be one line of text (no line breaks or control characters)`],
        [JSON.stringify({ description: "nul \u0000" }), `description: must be text (no control characters but line breaks and tabs)`],
        [JSON.stringify({ description: "d".repeat(1001) }), `description: Expected a value with a length of at most 1000`],
        ["{ not json", `is not valid JSON`]
      ]
      for (const [config, expected] of cases) {
        const dir = yield* docsFolder({ "docs/guide.md": page("Guide"), "svc.json": config })
        const failure = yield* failureOf(indexer.add(dir, { id: "/acme/bad" }))
        assert.strictEqual(failure.category, "invalid_source", config)
        assert.strictEqual(failure.message, `svc.json of ${dir}: ${expected}`)
      }
      // bytes that are not UTF-8 refuse the file rather than becoming U+FFFD
      const latin1 = yield* docsFolder({ "docs/guide.md": page("Guide") })
      yield* Effect.promise(() => fs.writeFile(path.join(latin1, "svc.json"), Buffer.from([...Buffer.from('{"title":"Caf'), 0xe9, ...Buffer.from('"}')])))
      const notUtf8 = yield* failureOf(indexer.add(latin1, { id: "/acme/bad" }))
      assert.deepStrictEqual([notUtf8.category, notUtf8.message], ["invalid_source", `svc.json of ${latin1}: is not UTF-8 text (RFC 8259: a JSON file is UTF-8)`])
      assert.isFalse((yield* indexer.list).some((library) => library.id === "/acme/bad"))
    }))
})
