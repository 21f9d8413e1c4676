/**
 * An OpenAPI 3 document (JSON or YAML) as a source: a URL (`https://…/openapi.json`, fetched through
 * the outbound guard, WebFetch.ts) or a file path whose name ends in `.json`, `.yaml` or `.yml`.
 *
 * **One snippet per operation**: titled by its summary (else its operationId, else `METHOD /path`),
 * under the heading path `API title > tag`; its description says the method and path, the summary and
 * description, and the parameters (path-level ones included, `$ref`s within the document resolved:
 * name, where, type, required, description); its code is the request: `METHOD /path`, and the request
 * body's example when the document gives one (`example`, the first of `examples`, or the schema's
 * `example`; none is invented). Source path: `<file name>#<operationId or METHOD /path>`.
 *
 * Library id `--id`, else `/openapi/<title as a slug>`; version `--version`, else `info.version`;
 * title and description `--title`/`--description`, else from `info` (its description's first
 * paragraph). A document that is not OpenAPI 3 fails `invalid_source` naming the field (`openapi`,
 * `info.title`, `paths`); Swagger 2 is refused as such.
 */
import { Effect, FileSystem, Path, Schema } from "effect"
import YAML from "yaml"
import { MAX_SNIPPET_CHARS, type Snippet, tokensOf } from "../Splitter.ts"
import { checkLibraryId, checkVersion, IndexFailed, invalidSource, maxSnippets, type Source, type SourceOptions, tooManySnippets } from "./Source.ts"
import { makeFetcher, startFailed, webSettings } from "./WebFetch.ts"

/** Documents bigger than this are refused (the biggest public API descriptions are a few MB). */
export const MAX_DOCUMENT_BYTES = 10_000_000
/**
 * The most operations a document is read for (GitHub's REST API has ~1,100). Shared `$ref`s let a small
 * document make every operation a 4,000-character snippet: 40,000 of them in 3.8 MB took `svc docs add`
 * to 824 MB (1.25 GB while such JSON went through the YAML parser); 10,000 such operations, 477 MB, of
 * which 227 MB is the CLI at rest.
 */
export const MAX_OPERATIONS = 10_000
const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"] as const
const OPENAPI_FILE = /\.(json|ya?ml)$/i

const Document = Schema.Struct({
  openapi: Schema.String.check(Schema.isPattern(/^3\./, { message: `must be "3.x" (an OpenAPI 3 document)` })),
  info: Schema.Struct({
    title: Schema.String.check(Schema.isNonEmpty({ message: "must not be empty" })),
    version: Schema.String,
    description: Schema.optional(Schema.String)
  }),
  paths: Schema.Record(Schema.String, Schema.Unknown)
})

type Json = Record<string, unknown>
const isObject = (value: unknown): value is Json => typeof value === "object" && value !== null && !Array.isArray(value)
const text = (value: unknown): string => (typeof value === "string" ? value.trim() : "")

/** Follows local `$ref`s (`#/components/...`), at most 10 deep; a foreign or broken one stays as it is. */
const deref = (root: unknown, value: unknown): unknown => {
  let current = value
  for (let depth = 0; depth < 10 && isObject(current) && typeof current.$ref === "string"; depth++) {
    const ref = current.$ref
    if (!ref.startsWith("#/")) return current
    let target: unknown = root
    for (const raw of ref.slice(2).split("/")) {
      const key = decodeURIComponent(raw).replace(/~1/g, "/").replace(/~0/g, "~")
      target = isObject(target) || Array.isArray(target) ? (target as Json)[key] : undefined
    }
    if (target === undefined) return current
    current = target
  }
  return current
}

/** A schema's type for a parameter line: `string`, `array of integer`, the `$ref` name. */
const typeOf = (root: unknown, schema: unknown): string => {
  const ref = isObject(schema) && typeof schema.$ref === "string" ? schema.$ref.split("/").at(-1)! : undefined
  const resolved = deref(root, schema)
  if (!isObject(resolved)) return ref ?? ""
  if (resolved.type === "array") return `array of ${typeOf(root, resolved.items) || "any"}`
  const type = Array.isArray(resolved.type) ? resolved.type.join(" | ") : text(resolved.type)
  return ref ?? (type + (typeof resolved.format === "string" ? ` (${resolved.format})` : ""))
}

/** The request body's example as text, when the document gives one. */
const requestExample = (root: unknown, body: unknown): { readonly mediaType: string; readonly example: string } | undefined => {
  const resolved = deref(root, body)
  if (!isObject(resolved) || !isObject(resolved.content)) return undefined
  for (const [mediaType, raw] of Object.entries(resolved.content)) {
    const media = deref(root, raw)
    if (!isObject(media)) continue
    const first = isObject(media.examples) ? deref(root, Object.values(media.examples)[0]) : undefined
    const schema = deref(root, media.schema)
    const example = media.example ?? (isObject(first) ? first.value : undefined) ?? (isObject(schema) ? schema.example : undefined)
    if (example === undefined) continue
    return { mediaType, example: typeof example === "string" ? example : JSON.stringify(example, null, 2) }
  }
  return undefined
}

/** The operations of a decoded document as snippets, in the document's order; past `max` of them, one more and no further. */
export const operationSnippets = (root: Json, info: typeof Document.Type, file: string, max = Infinity): Array<Snippet> => {
  const snippets: Array<Snippet> = []
  for (const [route, rawItem] of Object.entries(info.paths)) {
    if (snippets.length > max) break
    const item = deref(root, rawItem)
    if (!isObject(item)) continue
    const shared = Array.isArray(item.parameters) ? item.parameters : []
    for (const method of METHODS) {
      if (snippets.length > max) break
      const operation = item[method]
      if (!isObject(operation)) continue
      const request = `${method.toUpperCase()} ${route}`
      const operationId = text(operation.operationId)
      const summary = text(operation.summary)
      const title = summary || operationId || request
      const tag = Array.isArray(operation.tags) && typeof operation.tags[0] === "string" ? operation.tags[0] : undefined
      const byKey = new Map<string, Json>()
      for (const raw of [...shared, ...(Array.isArray(operation.parameters) ? operation.parameters : [])]) {
        const parameter = deref(root, raw)
        if (isObject(parameter) && typeof parameter.name === "string") byKey.set(`${text(parameter.in)}:${parameter.name}`, parameter)
      }
      const parameterLines = [...byKey.values()].map((p) => {
        const type = typeOf(root, p.schema)
        const facts = [text(p.in), type, p.required === true ? "required" : ""].filter((fact) => fact !== "").join(", ")
        const description = text(p.description).replace(/\s+/g, " ")
        return `- \`${p.name as string}\` (${facts})${description === "" ? "" : `: ${description}`}`
      })
      const body = deref(root, operation.requestBody)
      const example = requestExample(root, body)
      const described = text(operation.description)
      const descriptionParts = [
        `\`${request}\`${summary !== "" && summary !== title ? `: ${summary}` : ""}${title !== request ? ` — ${title}` : ""}`,
        ...(described === "" ? [] : [described]),
        ...(parameterLines.length === 0 ? [] : [`Parameters:\n${parameterLines.join("\n")}`]),
        ...(isObject(body) && text(body.description) !== "" ? [`Request body: ${text(body.description)}`] : [])
      ]
      let description = descriptionParts.join("\n\n")
      const code = example === undefined ? request : `${request}\nContent-Type: ${example.mediaType}\n\n${example.example}`
      const room = MAX_SNIPPET_CHARS - code.length - title.length - 200
      if (description.length > room) description = `${description.slice(0, Math.max(room, 200)).trimEnd()} …`
      const snippet = {
        kind: "code" as const,
        title,
        headingPath: [info.info.title, ...(tag === undefined ? [] : [tag]), title],
        description,
        language: "http",
        body: code.length > MAX_SNIPPET_CHARS ? `${code.slice(0, MAX_SNIPPET_CHARS)}\n…` : code,
        sourcePath: `${file}#${operationId || request}`
      }
      snippets.push({ ...snippet, tokens: tokensOf(snippet) })
    }
  }
  return snippets
}

/**
 * A document's text as data. JSON is read as JSON first: the YAML parser reads it too (JSON is YAML) but
 * builds a syntax tree of every token on the way, ~400 times slower and ~150 times the memory (a 3.8 MB
 * JSON document: 53 s and ~600 MB against 0.1 s).
 */
const parseDocument = (body: string): unknown => {
  if (body.trimStart().startsWith("{")) {
    try {
      return JSON.parse(body)
    } catch {
      // not strict JSON (comments, trailing commas): YAML may still read it
    }
  }
  return YAML.parse(body, { maxAliasCount: 100 })
}

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
    if (!OPENAPI_FILE.test(source)) return undefined
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
    let parsed: unknown
    try {
      parsed = parseDocument(loaded.body)
    } catch (error) {
      return yield* invalidSource(`${loaded.location} is not JSON or YAML: ${(error as Error).message.split("\n")[0]}`)
    }
    if (isObject(parsed) && typeof parsed.swagger === "string") {
      return yield* invalidSource(`${loaded.location} is Swagger ${parsed.swagger}, not OpenAPI 3: convert it first (e.g. with swagger2openapi)`)
    }
    const document = yield* Schema.decodeUnknownEffect(Document)(parsed).pipe(
      Effect.mapError((error) => invalidSource(`${loaded.location} is not an OpenAPI 3 document: ${error.message.replace(/\s+/g, " ").trim()}`))
    )
    const max = Math.min(yield* maxSnippets, MAX_OPERATIONS)
    const snippets = operationSnippets(parsed as Json, document, loaded.file, max)
    if (snippets.length > max) {
      return yield* max < MAX_OPERATIONS ? tooManySnippets(loaded.location, max) : new IndexFailed({
        category: "read_failed",
        message: `${loaded.location} describes more than ${MAX_OPERATIONS} operations, the most an OpenAPI document is read for`
      })
    }
    if (snippets.length === 0) {
      return yield* new IndexFailed({ category: "no_documents", message: `${loaded.location} describes no operations (paths is empty)` })
    }
    const libraryId = yield* checkLibraryId(options.id ?? `/openapi/${slug(document.info.title)}`)
    const version = yield* checkVersion(options.version ?? (document.info.version.trim().replace(/[\s/]+/g, "-") || "latest"))
    return {
      kind: "openapi" as const,
      location: loaded.location,
      root: loaded.location,
      libraryId,
      version,
      title: options.title ?? document.info.title,
      description: options.description ?? (document.info.description ?? "").trim().split(/\n\s*\n/)[0]!.slice(0, 500),
      snippets
    }
  })

  return { kind: "openapi", resolve } satisfies Source
})
