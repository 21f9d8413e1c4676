/**
 * The internal RPC group (`DocsRpcs`) at POST /rpc on docs-api (NDJSON over HTTP), behind
 * `DOCS_ADMIN_TOKEN`: what `svc docs add|refresh|remove|list` do against a running server (`DOCS_URL`).
 * Adding and refreshing stream the run's progress, then its outcome (`Done`). The server reads the
 * sources from its own file system and node_modules.
 *
 * The token is checked by the suite's one bearer check (`BearerAuth` in @svc/platform): without a
 * `DOCS_ADMIN_TOKEN` the RPC refuses every call (ServiceUnavailable): operating the index is never open.
 *
 * Folder sources (and local git repositories) added over the RPC must lie under `DOCS_SOURCE_ROOTS`
 * (folders separated by `:`, `;` on Windows), real paths compared, symlinks resolved; none by default,
 * so a token holder cannot index the server's own files (`/etc`, a home folder) and serve them to
 * everyone. `Refresh` reads the (real) path an add stored again. npm packages and remote git URLs are
 * not affected; the local `svc docs add` (no `DOCS_URL`) neither.
 */
import { BearerAuth, isDatabaseUnavailable, RpcDefects, RpcHttp } from "@svc/platform"
import { type IndexEvent, IndexingFailed, DocsRpcs, RPC_DEFECT_MESSAGE } from "@svc/schema"
import { Effect, Layer, Queue, Stream } from "effect"
import { HttpRouter } from "effect/http"
import { RpcSerialization } from "effect/rpc"
import { type IndexOptions, Indexer, type IndexOutcome, type IndexProgress } from "./Indexer.ts"
import { SourceRoots } from "./sources/Roots.ts"

/**
 * What the caller of a run learns when the database went away during it: the version is left
 * `indexing`, and a running docs-api takes it up again once the database is back (its resume pass).
 */
export const DATABASE_LOST_MESSAGE =
  "The database became unavailable during the run: a running docs-api resumes the version within " +
  "DOCS_RESUME_INTERVAL of the database being back (svc docs list shows it)"

/**
 * A run of the indexer as a stream of its progress, ending with `Done`. A defect of the run (a database
 * failure, a bug) ends the stream too, with a failure that says so: it is logged here in full, and the
 * caller, whose stream would otherwise never end, learns that the run failed, not why (RpcDefects' rule),
 * except that the database went away ({@link DATABASE_LOST_MESSAGE}, `service_unavailable`): that is the
 * operator's to know, and it was "internal error".
 */
export const indexingRun = (start: (options: IndexOptions) => Effect.Effect<IndexOutcome, { readonly category?: string; readonly message: string }>) =>
  Stream.callback<IndexEvent, IndexingFailed>((queue) =>
    start({ onProgress: (progress: IndexProgress) => Effect.asVoid(Queue.offer(queue, progress)) }).pipe(
      Effect.catchDefect((defect) =>
        Effect.logError("Docs RPC: an indexing run failed", defect).pipe(
          Effect.andThen(Effect.fail(
            isDatabaseUnavailable(defect)
              ? { category: "service_unavailable", message: DATABASE_LOST_MESSAGE }
              : { category: "internal_error", message: RPC_DEFECT_MESSAGE }
          ))
        )
      ),
      Effect.matchEffect({
        onFailure: (error) =>
          Queue.fail(queue, new IndexingFailed({ category: error.category ?? "unknown_library", message: error.message })),
        onSuccess: (outcome) =>
          Effect.andThen(
            Queue.offer(queue, {
              _tag: "Done",
              libraryId: outcome.libraryId,
              version: outcome.version,
              files: outcome.files,
              snippets: outcome.snippets,
              tokens: outcome.tokens
            }),
            Queue.end(queue)
          )
      }),
      Effect.forkScoped
    )
  )

export const RpcHandlers = DocsRpcs.toLayer(Effect.gen(function*() {
  const indexer = yield* Indexer
  const roots = yield* SourceRoots
  return DocsRpcs.of({
    AddLibrary: ({ description, id, source, title, trust, version }) =>
      indexingRun((options) => indexer.add(source, { ...options, id, trust, version, title, description, roots })),
    // confined as an add is: a folder replaced by a link out of the roots since its add was read through it
    Refresh: ({ libraryId }) => indexingRun((options) => indexer.refresh(libraryId, { ...options, roots })),
    Remove: ({ libraryId }) => indexer.remove(libraryId),
    List: () =>
      Effect.map(indexer.list, (libraries) =>
        libraries.map((library) => ({
          id: library.id,
          title: library.title,
          source: library.source,
          defaultVersion: library.defaultVersion,
          rules: library.rules ?? [],
          versions: library.versions.map((version) => ({
            version: version.version,
            state: version.state,
            errorCategory: version.errorCategory,
            snippets: version.snippets,
            tokens: version.tokens,
            lastUpdate: version.lastUpdate === null ? null : version.lastUpdate.toISOString()
          }))
        })))
  })
}))

/** POST /rpc: the token check, then the RPC server. Needs `Indexer`. */
export const RpcRoute = HttpRouter.use((router) =>
  Effect.gen(function*() {
    const auth = yield* BearerAuth.fromConfig("DOCS_ADMIN_TOKEN", "Operating the index over RPC")
    const httpEffect = yield* RpcHttp.rpcHttpEffect(DocsRpcs)
    yield* router.add("POST", "/rpc", auth.route(httpEffect))
  })
).pipe(Layer.provide([RpcHandlers, RpcDefects.layer, RpcSerialization.layerNdjson]))
