/**
 * A CSV feed (RFC 4180: quoted fields, doubled quotes, newlines inside quotes, CRLF or LF), read as a
 * stream: the first row names the columns, each further row is one offer. Columns map to our fields
 * through `fields` like JSON paths do (`"make": "Marka"`); the images column is split on
 * `listSeparator` (default "|").
 */
import { Effect, Stream } from "effect"
import { HttpClient } from "effect/http"
import type { SourceConfig } from "../Sources.ts"
import { FeedError, mapRecord, type SourceAdapter } from "./SourceAdapter.ts"
import { feedBody, feedGet } from "./http.ts"

interface ParserState {
  readonly rows: Array<Array<string>>
  field: string
  row: Array<string>
  inQuotes: boolean
  /** the previous chunk ended on a quote inside a quoted field: escape or closing quote */
  pendingQuote: boolean
  /** the previous chunk ended on CR */
  pendingCr: boolean
}

/**
 * The longest CSV field: an offer's longest field is a description of a few kB. A field that never ends
 * (a feed streaming one forever) grew by string concatenation until the process died.
 */
export const MAX_FIELD_CHARS = 1024 * 1024

/** An incremental CSV parser: feed it chunks, it returns the rows completed so far. */
export const makeCsvParser = (delimiter = ",") => {
  const state: ParserState = { rows: [], field: "", row: [], inQuotes: false, pendingQuote: false, pendingCr: false }
  const endRow = () => {
    state.row.push(state.field)
    state.field = ""
    if (!(state.row.length === 1 && state.row[0] === "")) state.rows.push(state.row)
    state.row = []
  }
  const push = (chunk: string): Array<Array<string>> => {
    for (let i = 0; i < chunk.length; i++) {
      const c = chunk[i]!
      if (state.pendingCr) {
        state.pendingCr = false
        if (c === "\n") continue
      }
      if (state.pendingQuote) {
        state.pendingQuote = false
        if (c === "\"") {
          state.field += "\""
          continue
        }
        state.inQuotes = false
      }
      if (state.inQuotes) {
        if (c === "\"") {
          state.pendingQuote = true
        } else {
          // fast path: copy up to the next quote
          const next = chunk.indexOf("\"", i)
          const end = next === -1 ? chunk.length : next
          state.field += chunk.slice(i, end)
          i = end - 1
        }
        continue
      }
      if (c === "\"" && state.field === "") state.inQuotes = true
      else if (c === delimiter) {
        state.row.push(state.field)
        state.field = ""
      } else if (c === "\n") endRow()
      else if (c === "\r") {
        endRow()
        state.pendingCr = true
      } else state.field += c
    }
    return state.rows.splice(0)
  }
  const end = (): Array<Array<string>> => {
    if (state.pendingQuote) state.inQuotes = false
    if (state.field !== "" || state.row.length > 0) endRow()
    return state.rows.splice(0)
  }
  return {
    push,
    end,
    unterminated: () => state.inQuotes && !state.pendingQuote,
    /** The field being read is longer than {@link MAX_FIELD_CHARS} (checked per piece: a piece adds at most its length). */
    overlong: () => state.field.length > MAX_FIELD_CHARS
  }
}

export const make = (config: SourceConfig): Effect.Effect<SourceAdapter, never, HttpClient.HttpClient> =>
  Effect.gen(function*() {
    const client = yield* HttpClient.HttpClient
    const mapping = { fields: config.fields, defaults: config.defaults }
    const separator = config.listSeparator ?? "|"
    const read = Stream.unwrap(Effect.gen(function*() {
      const response = yield* feedGet(client, config.url ?? "", config)
      const parser = makeCsvParser(config.delimiter ?? ",")
      let header: Array<string> | undefined
      const toRecords = (rows: Array<Array<string>>) => {
        const out = []
        for (const row of rows) {
          if (header === undefined) {
            header = row.map((name, index) => (index === 0 ? name.replace(/^\uFEFF/, "") : name).trim())
            continue
          }
          const raw: Record<string, unknown> = {}
          for (let i = 0; i < header.length; i++) raw[header[i]!] = row[i] ?? ""
          const imagesColumn = config.fields?.["images"] ?? "images"
          const images = raw[imagesColumn]
          if (typeof images === "string") raw[imagesColumn] = images.split(separator).map((s) => s.trim())
          out.push(mapRecord(raw, mapping))
        }
        return out
      }
      const overlong = () => new FeedError({ kind: "malformed", message: `a CSV field is longer than ${MAX_FIELD_CHARS} characters` })
      return feedBody(response, config.url ?? "").pipe(
        Stream.decodeText(),
        // a field that grows past its cap (one that never ends) fails the feed at the piece that passes it
        Stream.mapEffect((text) => {
          const rows = parser.push(text)
          return parser.overlong() ? Effect.fail(overlong()) : Effect.succeed(toRecords(rows))
        }),
        Stream.flattenIterable,
        Stream.concat(Stream.suspend(() => {
          const last = toRecords(parser.end())
          return parser.unterminated()
            ? Stream.fail(new FeedError({ kind: "malformed", message: "the CSV ends inside a quoted field" }))
            : header === undefined
            ? Stream.fail(new FeedError({ kind: "malformed", message: "the CSV has no header row" }))
            : Stream.fromIterable(last)
        }))
      )
    }))
    return { read }
  })
