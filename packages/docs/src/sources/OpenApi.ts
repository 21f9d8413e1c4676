/**
 * An OpenAPI 3 document (JSON or YAML) as a source: a URL (`https://…/openapi.json`, fetched through
 * the outbound guard, WebFetch.ts) or a file path whose name ends in `.json`, `.yaml` or `.yml`.
 *
 * **One snippet per operation**: titled by its summary (else its operationId, else `METHOD /path`),
 * under the heading path `API title > tag`; its description says the method and path, the summary and
 * description, and the parameters (path-level ones included, `$ref`s within the document resolved:
 * name, where, type, required, description); its code is the request: `METHOD /path`, and the request
 * body's example when the document gives one (`example`, the first of `examples`, or the schema's
 * `example`; none is invented). Source path: `<file name>#<operationId or METHOD /path>`; `Source:` line
 * the document's URL, or the file's absolute path.
 *
 * Library id `--id`, else `/openapi/<title as a slug>`; version `--version`, else `info.version`;
 * title and description `--title`/`--description`, else from `info` (its description's first
 * paragraph). A document that is not OpenAPI 3 fails `invalid_source` naming the field (`openapi`,
 * `info.title`, `paths`); Swagger 2 is refused as such.
 */
import { Duration, Effect, FileSystem, Path } from "effect"
import { makeBoundedThread } from "./BoundedThread.ts"
import { type DocumentReading, MAX_OPERATIONS, type readDocument } from "./OpenApiDocument.ts"
import { checkLibraryId, checkVersion, IndexFailed, invalidSource, maxSnippets, type Source, type SourceOptions, tooManySnippets } from "./Source.ts"
import { isRemoteGitUrl } from "./Git.ts"
import { withSourceUrl } from "./SourceLinks.ts"
import { makeFetcher, startFailed, webSettings } from "./WebFetch.ts"

/** Documents bigger than this are refused (the biggest public API descriptions are a few MB). */
export const MAX_DOCUMENT_BYTES = 10_000_000
const OPENAPI_FILE = /\.(json|ya?ml)$/i

const THREAD = new URL("./OpenApiThread.ts", import.meta.url)
/**
 * The reading thread's limits. The biggest real documents (GitHub's REST API, ~11 MB of YAML) read in
 * a few seconds and a few hundred MB; a crafted one is refused when it needs more.
 */
export const READ_TIME_LIMIT = Duration.seconds(60)
export const READ_HEAP_MB = 1024

const slug = (value: string) => value.toLowerCase().replace(/[^a-z0-9.]+/g, "-").replace(/^-+|-+$/g, "") || "api"

export const make = Effect.gen(function*() {
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path

  /** The document's text and where it is from, or undefined when `source` is no OpenAPI location. */
  const load = Effect.fnUntraced(function*(source: string) {
    if (/^https?:\/\//i.test(source)) {
      const url = URL.parse(source)
      if (url === null || !OPENAPI_FILE.test(url.pathname)) return undefined
      if (url.username !== "" || url.password !== "") {
        return yield* invalidSource("An OpenAPI URL with a user name or password is not accepted (it would be stored)")
      }
      const fetcher = yield* makeFetcher(yield* webSettings)
      const answer = yield* fetcher.get(url, MAX_DOCUMENT_BYTES)
      if (answer._tag === "Failure") return yield* startFailed(answer.failure)
      if (answer.success.status !== 200) {
        return yield* new IndexFailed({ category: "source_not_found", message: `${url.href} answered HTTP ${answer.success.status}` })
      }
      return { location: url.href, file: path.basename(url.pathname), body: answer.success.body }
    }
    // A clone URL is not a path, though `path.resolve` makes one of it: `git@x.invalid:../../tmp/a.json`
    // read /tmp/a.json, past DOCS_SOURCE_ROOTS (which confines paths, not clone URLs).
    if (!OPENAPI_FILE.test(source) || isRemoteGitUrl(source)) return undefined
    const full = path.resolve(source)
    const info = yield* fs.stat(full).pipe(Effect.option)
    if (info._tag === "None" || info.value.type !== "File") return undefined
    if (Number(info.value.size) > MAX_DOCUMENT_BYTES) {
      return yield* new IndexFailed({ category: "read_failed", message: `${full} is bigger than ${MAX_DOCUMENT_BYTES / 1_000_000} MB` })
    }
    const body = yield* fs.readFileString(full).pipe(
      Effect.mapError((error) => new IndexFailed({ category: "read_failed", message: `Cannot read ${full}: ${error.message}` }))
    )
    return { location: full, file: path.basename(full), body }
  })

  const resolve = Effect.fnUntraced(function*(source: string, options: SourceOptions) {
    const loaded = yield* load(source)
    if (loaded === undefined) return undefined
    const max = Math.min(yield* maxSnippets, MAX_OPERATIONS)
    // The thread lives for this one document: its heap is given back at once.
    const outcome = yield* Effect.scoped(Effect.flatMap(
      makeBoundedThread<Parameters<typeof readDocument>[0], DocumentReading>({ module: THREAD, timeLimit: READ_TIME_LIMIT, heapMb: READ_HEAP_MB }),
      (thread) => thread.run({ body: loaded.body, location: loaded.location, file: loaded.file, max })
    ))
    if (outcome._tag !== "Done") {
      return yield* invalidSource(
        outcome._tag === "TooSlow"
          ? `${loaded.location} was not read within ${Duration.format(READ_TIME_LIMIT)}`
          : outcome._tag === "TooBig"
          ? `${loaded.location} needs more than ${READ_HEAP_MB} MB to read`
          : `${loaded.location} cannot be read: ${outcome.reason}`
      )
    }
    const reading = outcome.result
    if (reading._tag === "Invalid") return yield* invalidSource(reading.message)
    const { info, snippets } = reading
    if (snippets.length > max) {
      return yield* max < MAX_OPERATIONS ? tooManySnippets(loaded.location, max) : new IndexFailed({
        category: "read_failed",
        message: `${loaded.location} describes more than ${MAX_OPERATIONS} operations, the most an OpenAPI document is read for`
      })
    }
    if (snippets.length === 0) {
      return yield* new IndexFailed({ category: "no_documents", message: `${loaded.location} describes no operations (paths is empty)` })
    }
    const libraryId = yield* checkLibraryId(options.id ?? `/openapi/${slug(info.title)}`)
    const version = yield* checkVersion(options.version ?? (info.version.trim().replace(/[\s/]+/g, "-") || "latest"))
    return {
      kind: "openapi" as const,
      location: loaded.location,
      root: loaded.location,
      libraryId,
      version,
      title: options.title ?? info.title,
      description: options.description ?? (info.description ?? "").trim().split(/\n\s*\n/)[0]!.slice(0, 500),
      // an agent opens the document itself: its URL, or the file's absolute path
      snippets: withSourceUrl(snippets, loaded.location)
    }
  })

  return { kind: "openapi", resolve } satisfies Source
})
