/**
 * A re-index is atomic for readers: while a version is re-indexed again and again with changed
 * content, concurrent context queries always get all of the old snippets or all of the new ones,
 * never half of them and never a mix.
 */
import { assert, layer } from "@effect/vitest"
import { Effect, Fiber, Layer, Ref } from "effect"
import { Indexer } from "../src/Indexer.ts"
import { docsFolder, get, socketClient, stack } from "./support.ts"

/** `count` sections, each one prose snippet carrying `marker`. */
const pages = (marker: string, count: number) => ({
  "README.md": Array.from({ length: count }, (_, i) =>
    `## Section ${i}\n\nThe ${marker} text of section ${i}, about configuring the widget and its options.\n`).join("\n")
})

const ALPHA = { marker: "alphamark", count: 150 }
const BRAVO = { marker: "bravomark", count: 120 }

layer(socketClient.pipe(Layer.provideMerge(stack)), { timeout: 120_000 })("re-index under load", (it) => {
  it.effect("concurrent context queries see entirely the old or entirely the new generation", () =>
    Effect.gen(function*() {
      const indexer = yield* Indexer
      const alpha = yield* docsFolder(pages(ALPHA.marker, ALPHA.count))
      const bravo = yield* docsFolder(pages(BRAVO.marker, BRAVO.count))
      const options = { id: "/me/flip", version: "1.0" }
      yield* indexer.add(alpha, options)

      const done = yield* Ref.make(false)
      const answers = yield* Ref.make<Array<string>>([])
      const reader = Effect.gen(function*() {
        while (!(yield* Ref.get(done))) {
          const { status, body } = yield* get("/api/v2/context?libraryId=/me/flip&query=configuring%20widget%20options&type=json&tokens=50000")
          assert.strictEqual(status, 200)
          // the sections come as one entry (one file): count each marker's sections in the text
          const text = body.snippets.map((snippet: any) => snippet.content).join("\n")
          const sectionsOf = (marker: string) => text.split(`The ${marker} text of section`).length - 1
          const alphas = sectionsOf(ALPHA.marker)
          const bravos = sectionsOf(BRAVO.marker)
          const verdict = alphas === ALPHA.count && bravos === 0
            ? "alpha"
            : bravos === BRAVO.count && alphas === 0
            ? "bravo"
            : `mixed: ${alphas} alpha + ${bravos} bravo`
          yield* Ref.update(answers, (list) => [...list, verdict])
        }
      })
      const readers = yield* Effect.forEach([1, 2, 3], () => Effect.forkChild(reader))
      for (let round = 0; round < 8; round++) {
        yield* indexer.add(round % 2 === 0 ? bravo : alpha, options)
      }
      yield* Ref.set(done, true)
      yield* Fiber.joinAll(readers)

      const seen = yield* Ref.get(answers)
      assert.isAbove(seen.length, 10, "the readers ran while re-indexing")
      assert.deepStrictEqual(seen.filter((verdict) => verdict.startsWith("mixed")), [])
      assert.include(seen, "alpha")
      assert.include(seen, "bravo")
      // The last run (round 7: alpha) is live, and only its generation is left.
      const last = yield* get("/api/v2/context?libraryId=/me/flip/1.0&type=json&tokens=50000")
      assert.isTrue(last.body.snippets.every((snippet: any) => snippet.content.includes(ALPHA.marker)))
    }))
})
