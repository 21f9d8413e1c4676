/**
 * An OpenAPI 3 document's text read into snippets, one per operation (what OpenApi.ts describes). Pure
 * and synchronous: it runs in a bounded worker thread (OpenApiThread.ts), since a crafted document can
 * make a parser take time or memory growing much faster than its size.
 */
import { load } from "js-yaml"
import { Schema } from "effect"
import { MAX_SNIPPET_CHARS, type Snippet, tokensOf } from "../Splitter.ts"

/**
 * The most operations a document is read for (GitHub's REST API has ~1,100). Shared `$ref`s let a small
 * document make every operation a 4,000-character snippet: 40,000 of them in 3.8 MB took `svc docs add`
 * to 824 MB (1.25 GB while such JSON went through the YAML parser); 10,000 such operations, 477 MB, of
 * which 227 MB is the CLI at rest.
 */
export const MAX_OPERATIONS = 10_000
const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"] as const

export const Document = Schema.Struct({
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
/**
 * Bounds on what one operation contributes. `$ref`s and YAML aliases let one object stand for every
 * operation's path item, description or parameter list, so a 4 MB document can make each of 10,000
 * operations read 50,000 parameters (more than a GB and minutes before these bounds): each operation
 * reads a bounded part of whatever it points to.
 */
const NAME_CHARS = 200
const MAX_PARAMETERS = 100
const MAX_MEDIA_TYPES = 20

/** A string field, trimmed and at most `max` characters; anything else is empty. */
const text = (value: unknown, max = MAX_SNIPPET_CHARS): string => (typeof value === "string" ? value.slice(0, max).trim() : "")

/** The first `max` keys of an object, without listing all of them. */
const firstKeys = (object: Json, max: number): Array<string> => {
  const keys: Array<string> = []
  for (const key in object) {
    if (keys.length === max) break
    if (Object.hasOwn(object, key)) keys.push(key)
  }
  return keys
}

/** A value's local `$ref` (`#/components/...`), when it has one of a sane length. */
const localRef = (value: unknown): string | undefined =>
  isObject(value) && typeof value.$ref === "string" && value.$ref.startsWith("#/") && value.$ref.length <= NAME_CHARS * 5
    ? value.$ref
    : undefined

/** Follows local `$ref`s, at most 10 deep; a foreign or broken one stays as it is. */
const deref = (root: unknown, value: unknown): unknown => {
  let current = value
  for (let depth = 0, ref = localRef(current); depth < 10 && ref !== undefined; depth++, ref = localRef(current)) {
    let target: unknown = root
    for (const raw of ref.slice(2).split("/")) {
      let key: string
      try {
        key = decodeURIComponent(raw).replace(/~1/g, "/").replace(/~0/g, "~")
      } catch {
        return current // a malformed %-escape: broken
      }
      target = isObject(target) || Array.isArray(target) ? (target as Json)[key] : undefined
    }
    if (target === undefined) return current
    current = target
  }
  return current
}

/**
 * A schema's type for a parameter line: `string`, `array of integer`, the `$ref` name. Arrays of arrays
 * are followed 10 deep (a YAML alias can make an array its own items).
 */
const typeOf = (root: unknown, schema: unknown, depth = 0): string => {
  const ref = isObject(schema) && typeof schema.$ref === "string" ? schema.$ref.slice(-NAME_CHARS).split("/").at(-1) : undefined
  const resolved = deref(root, schema)
  if (!isObject(resolved)) return ref ?? ""
  if (resolved.type === "array") return `array of ${(depth < 10 && typeOf(root, resolved.items, depth + 1)) || "any"}`
  const type = Array.isArray(resolved.type) ? resolved.type.slice(0, 10).map((one) => text(one, NAME_CHARS)).join(" | ") : text(resolved.type, NAME_CHARS)
  const format = text(resolved.format, NAME_CHARS)
  return ref ?? (type + (format === "" ? "" : ` (${format})`))
}

/** The request body's example as text, when the document gives one. */
const requestExample = (root: unknown, body: unknown): { readonly mediaType: string; readonly example: string } | undefined => {
  const resolved = deref(root, body)
  if (!isObject(resolved) || !isObject(resolved.content)) return undefined
  for (const mediaType of firstKeys(resolved.content, MAX_MEDIA_TYPES)) {
    const media = deref(root, resolved.content[mediaType])
    if (!isObject(media)) continue
    const firstName = isObject(media.examples) ? firstKeys(media.examples, 1)[0] : undefined
    const first = firstName === undefined ? undefined : deref(root, (media.examples as Json)[firstName])
    const schema = deref(root, media.schema)
    const example = media.example ?? (isObject(first) ? first.value : undefined) ?? (isObject(schema) ? schema.example : undefined)
    if (example === undefined) continue
    const printed = exampleText(example)
    if (printed !== undefined) return { mediaType: mediaType.slice(0, NAME_CHARS), example: printed }
  }
  return undefined
}

/**
 * An example as text, or none when it has more values than a snippet could show: YAML aliases let a
 * few lines stand for billions of values (`&a [*b, *b, …]` nested), which JSON.stringify would print
 * one by one. Cycles (an alias inside its own anchor) are none too.
 */
const exampleText = (example: unknown): string | undefined => {
  if (typeof example === "string") return example
  let values = 0
  try {
    return JSON.stringify(example, (_key, value: unknown) => {
      if (++values > MAX_SNIPPET_CHARS) throw new RangeError("example too large")
      return value
    }, 2)
  } catch {
    return undefined
  }
}

/** The operations of a decoded document as snippets, in the document's order; past `max` of them, one more and no further. */
const operationSnippets = (root: Json, info: typeof Document.Type, file: string, max = Infinity): Array<Snippet> => {
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
      const operationId = text(operation.operationId, NAME_CHARS)
      const summary = text(operation.summary, NAME_CHARS)
      const title = summary || operationId || request
      const tag = Array.isArray(operation.tags) && typeof operation.tags[0] === "string" ? text(operation.tags[0], NAME_CHARS) : undefined
      // the path's parameters, then the operation's own (which replace a path one of the same name and place)
      const byKey = new Map<string, Json>()
      for (const list of [shared, Array.isArray(operation.parameters) ? operation.parameters : []]) {
        for (const raw of list.slice(0, MAX_PARAMETERS)) {
          const parameter = deref(root, raw)
          if (isObject(parameter) && typeof parameter.name === "string") {
            byKey.set(`${text(parameter.in, NAME_CHARS)}:${text(parameter.name, NAME_CHARS)}`, parameter)
          }
        }
      }
      const parameterLines = [...byKey.values()].map((p) => {
        const type = typeOf(root, p.schema).slice(0, NAME_CHARS)
        const facts = [text(p.in, NAME_CHARS), type, p.required === true ? "required" : ""].filter((fact) => fact !== "").join(", ")
        const description = text(p.description, 500).replace(/\s+/g, " ")
        return `- \`${text(p.name, NAME_CHARS)}\` (${facts})${description === "" ? "" : `: ${description}`}`
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
        headingPath: [info.info.title.slice(0, NAME_CHARS), ...(tag === undefined ? [] : [tag]), title],
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
 * A document's text as data. JSON is read as JSON first: a YAML parser reads it too (JSON is YAML) but
 * slower and in more memory. YAML through js-yaml: 4.6 MB of operations in 0.4 s and ~150 MB, where the
 * `yaml` package used before took 3.1 s and ~380 MB (its syntax tree of every token); a 3.8 MB JSON
 * document through that parser: 53 s and ~600 MB against JSON.parse's 0.1 s. js-yaml keeps an alias
 * (`*name`) as a reference to its anchor's value instead of copying it, so nested aliases cost nothing
 * here; what prints a value bounds it (`exampleText`).
 */
const parseDocument = (body: string): unknown => {
  if (body.trimStart().startsWith("{")) {
    try {
      return JSON.parse(body)
    } catch {
      // not strict JSON (comments, trailing commas): YAML may still read it
    }
  }
  return load(body)
}


/** What a document's text gives: its snippets (at most `max + 1`) and its `info`, or why it is refused. */
export type DocumentReading =
  | {
    readonly _tag: "Read"
    readonly info: typeof Document.Type["info"]
    readonly snippets: Array<Snippet>
  }
  | { readonly _tag: "Invalid"; readonly message: string }

/** Reads a document's text: `location` names it in messages, `file` begins each snippet's source path. */
export const readDocument = (input: {
  readonly body: string
  readonly location: string
  readonly file: string
  readonly max: number
}): DocumentReading => {
  const invalid = (message: string) => ({ _tag: "Invalid", message }) as const
  let parsed: unknown
  try {
    parsed = parseDocument(input.body)
  } catch (error) {
    return invalid(`${input.location} is not JSON or YAML: ${(error as Error).message.split("\n")[0]}`)
  }
  if (isObject(parsed) && typeof parsed.swagger === "string") {
    return invalid(`${input.location} is Swagger ${parsed.swagger}, not OpenAPI 3: convert it first (e.g. with swagger2openapi)`)
  }
  const decoded = Schema.decodeUnknownResult(Document)(parsed)
  if (decoded._tag === "Failure") {
    return invalid(`${input.location} is not an OpenAPI 3 document: ${decoded.failure.message.replace(/\s+/g, " ").trim()}`)
  }
  const document = decoded.success
  const info = { ...document.info, title: document.info.title.slice(0, NAME_CHARS), description: document.info.description?.slice(0, MAX_SNIPPET_CHARS) }
  return { _tag: "Read", info, snippets: operationSnippets(parsed as Json, document, input.file, input.max) }
}
