/**
 * API keys of the REST API v2: created and revoked by the operator (`svc docs keys ...`), checked by
 * the API on each request (Auth.ts).
 *
 * A key is `svcsk_` + 43 url-safe characters (32 random bytes, base64url). Only its SHA-256 is stored
 * (see migrations/docs/0002_api_keys.ts for why a plain hash is enough for random keys), so the key is
 * shown once, at creation, and never again; `svcsk_` + its first 8 random characters (the *prefix*)
 * names it afterwards. Authenticating is one lookup of the hash in a unique index: nothing is compared
 * character by character, so there is no timing signal to protect against.
 */
import { atDatabaseBoundary } from "@svc/platform"
import { API_KEY_PREFIX, LibraryFilterPattern, SourceKind, type TeamSettings } from "@svc/schema"
import { Clock, Context, Effect, Layer, Option, Ref, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { createHash, randomBytes } from "node:crypto"
import { RowId, Timestamp } from "./Rows.ts"

/** Characters of the random part shown in the prefix. */
const PREFIX_CHARS = 8

/** A key as listed: everything but the key itself. */
export interface ApiKeyRecord {
  readonly id: string
  readonly name: string
  readonly team: string | null
  /** `svcsk_` + 8 characters. */
  readonly prefix: string
  readonly settings: TeamSettings
  readonly createdAt: Date
  readonly revokedAt: Date | null
}

/** A new key: the record, and the key, which exists nowhere else once printed. */
export interface CreatedApiKey {
  readonly record: ApiKeyRecord
  readonly key: string
}

export interface CreateApiKeyOptions {
  readonly name?: string | undefined
  readonly team?: string | undefined
  /** Library ids `/owner/repo` or prefixes `/owner/*`; empty or absent = every library. */
  readonly libraries?: ReadonlyArray<string> | undefined
  /** Source kinds; empty or absent = every source. */
  readonly sources?: ReadonlyArray<SourceKind> | undefined
}

/** The operator's input was not usable; the message says why. */
export class InvalidApiKeyOptions extends Schema.TaggedError<InvalidApiKeyOptions>()("InvalidApiKeyOptions", {
  message: Schema.String
}) {}

export class ApiKeyNotFound extends Schema.TaggedError<ApiKeyNotFound>()("ApiKeyNotFound", {
  message: Schema.String
}) {}

/** SHA-256 (hex) of a key: what is stored and looked up. */
export const hashKey = (key: string): string => createHash("sha256").update(key, "utf8").digest("hex")

/** A fresh key: `svcsk_` + 43 base64url characters (256 bits). */
export const generateKey = (): string => API_KEY_PREFIX + randomBytes(32).toString("base64url")

/** The non-secret name of a key. */
export const prefixOf = (key: string): string => key.slice(0, API_KEY_PREFIX.length + PREFIX_CHARS)

/** Does `key` look like one of ours? (a cheap refusal before the database lookup) */
export const isWellFormedKey = (key: string): boolean =>
  key.startsWith(API_KEY_PREFIX) && /^[A-Za-z0-9_-]{43}$/.test(key.slice(API_KEY_PREFIX.length))

/**
 * No key is what `revoke` was given (`wanted`, trimmed): by id, by the key itself (never echoed back),
 * or by its prefix. Nothing given says so (it printed "No API key  (…)").
 */
const noSuchKey = (wanted: string, byId: boolean) =>
  new ApiKeyNotFound({
    message: `No API key ${
      byId
        ? `with id ${wanted}`
        : isWellFormedKey(wanted)
        ? "matches that key"
        : wanted === ""
        ? "given: name one by its id or its prefix"
        : wanted
    } (svc docs keys list shows them)`
  })

const KeyRow = Schema.Struct({
  id: RowId,
  name: Schema.String,
  team: Schema.NullOr(Schema.String),
  prefix: Schema.String,
  libraries: Schema.Array(Schema.String),
  sources: Schema.Array(SourceKind),
  created_at: Timestamp,
  revoked_at: Schema.NullOr(Timestamp)
})
type KeyRow = typeof KeyRow.Type

const toRecord = (row: KeyRow): ApiKeyRecord => ({
  id: row.id,
  name: row.name,
  team: row.team,
  prefix: row.prefix,
  settings: { libraries: row.libraries, sources: row.sources },
  createdAt: row.created_at,
  revokedAt: row.revoked_at
})

const SOURCE_KINDS: ReadonlyArray<string> = SourceKind.literals
const isSourceKind = Schema.is(SourceKind)

/** The longest name or team of a key (as a library's title): `list` printed a 100 KB name on one line. */
export const MAX_KEY_LABEL = 200

/** Normalises and checks the settings of a new key (`create`; `svc docs keys create` checks its flags with it before opening the database). */
export const validateSettings = (options: CreateApiKeyOptions): Effect.Effect<TeamSettings, InvalidApiKeyOptions> => {
  for (const [field, value] of [["name", options.name], ["team", options.team]] as const) {
    if (value !== undefined && value.trim().length > MAX_KEY_LABEL) {
      return Effect.fail(new InvalidApiKeyOptions({ message: `The key's ${field} is ${value.trim().length} characters long, more than ${MAX_KEY_LABEL}` }))
    }
  }
  const libraries = [...new Set((options.libraries ?? []).map((entry) => entry.trim().toLowerCase()).filter((e) => e !== ""))]
  const badLibrary = libraries.find((entry) => !LibraryFilterPattern.test(entry))
  if (badLibrary !== undefined) {
    return Effect.fail(
      new InvalidApiKeyOptions({
        message: `Library filter "${badLibrary}" is neither a library id /owner/repo nor a prefix like /owner/*`
      })
    )
  }
  const sources = [...new Set((options.sources ?? []).map((entry) => entry.trim().toLowerCase()).filter((e) => e !== ""))]
  const badSource = sources.find((entry) => !isSourceKind(entry))
  if (badSource !== undefined) {
    return Effect.fail(
      new InvalidApiKeyOptions({ message: `Source "${badSource}" is not one of ${SOURCE_KINDS.join(", ")}` })
    )
  }
  return Effect.succeed({ libraries, sources: sources.filter(isSourceKind) })
}

export class ApiKeys extends Context.Service<ApiKeys, {
  readonly create: (options?: CreateApiKeyOptions) => Effect.Effect<CreatedApiKey, InvalidApiKeyOptions>
  /** Every key, newest first, revoked ones included. */
  readonly list: Effect.Effect<ReadonlyArray<ApiKeyRecord>>
  /**
   * Revokes the key with this prefix (`svcsk_AbCd1234`), id, or the whole key itself; revoking twice
   * is not an error (the first time stays recorded).
   */
  readonly revoke: (prefixOrId: string) => Effect.Effect<ApiKeyRecord, ApiKeyNotFound>
  /** The live (not revoked) key for a presented key, if any. */
  readonly authenticate: (key: string) => Effect.Effect<Option.Option<ApiKeyRecord>>
}>()("@svc/docs/ApiKeys") {
  /** Needs `SqlClient` (the `docs` schema migrated). */
  static readonly layer = Layer.effect(
    ApiKeys,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient

      const create = Effect.fn("ApiKeys.create")(function*(options: CreateApiKeyOptions = {}) {
        const settings = yield* validateSettings(options)
        const name = options.name?.trim() ?? ""
        const team = options.team?.trim() || null
        // A prefix collision (1 in 2^48 per pair) only costs another draw.
        for (let attempt = 0;; attempt++) {
          const key = generateKey()
          const created = yield* SqlSchema.findOneOption({ Request: Schema.Void, Result: KeyRow, execute: () => sql`
            INSERT INTO docs.api_keys ${
            sql.insert({
              name,
              team,
              prefix: prefixOf(key),
              key_hash: hashKey(key),
              libraries: [...settings.libraries],
              sources: [...settings.sources]
            })
          }
            ON CONFLICT DO NOTHING
            RETURNING id, name, team, prefix, libraries, sources, created_at, revoked_at` })()
          if (Option.isSome(created)) return { record: toRecord(created.value), key }
          if (attempt >= 3) return yield* Effect.die(new Error("Could not draw a unique API key prefix"))
        }
      })

      const list = SqlSchema.findAll({
        Request: Schema.Void,
        Result: KeyRow,
        execute: () =>
          sql`SELECT id, name, team, prefix, libraries, sources, created_at, revoked_at
              FROM docs.api_keys ORDER BY created_at DESC, id DESC`
      })().pipe(Effect.map((rows) => rows.map(toRecord)), Effect.withSpan("ApiKeys.list"))

      const revoke = Effect.fn("ApiKeys.revoke")(function*(prefixOrId: string) {
        const wanted = prefixOrId.trim()
        const byId = /^\d{1,18}$/.test(wanted)
        const condition = byId
          ? sql`id = ${wanted}`
          : isWellFormedKey(wanted)
          ? sql`key_hash = ${hashKey(wanted)}`
          : sql`prefix = ${wanted}`
        const revoked = yield* SqlSchema.findOneOption({ Request: Schema.Void, Result: KeyRow, execute: () => sql`
          UPDATE docs.api_keys SET revoked_at = coalesce(revoked_at, now())
          WHERE ${condition}
          RETURNING id, name, team, prefix, libraries, sources, created_at, revoked_at` })()
        if (Option.isNone(revoked)) {
          return yield* noSuchKey(wanted, byId)
        }
        return toRecord(revoked.value)
      })

      const authenticate = Effect.fn("ApiKeys.authenticate")(function*(key: string) {
        if (!isWellFormedKey(key)) return Option.none<ApiKeyRecord>()
        const found = yield* SqlSchema.findOneOption({ Request: Schema.Void, Result: KeyRow, execute: () => sql`
          SELECT id, name, team, prefix, libraries, sources, created_at, revoked_at
          FROM docs.api_keys WHERE key_hash = ${hashKey(key)} AND revoked_at IS NULL` })()
        return Option.map(found, toRecord)
      })

      return ApiKeys.of({
        create: (options) => atDatabaseBoundary(create(options)),
        list: atDatabaseBoundary(list),
        revoke: (prefixOrId) => atDatabaseBoundary(revoke(prefixOrId)),
        authenticate: (key) => atDatabaseBoundary(authenticate(key))
      })
    })
  )

  /**
   * In memory (tests only): the same behaviour as {@link layer} as far as the contract suite
   * (test/contracts/ApiKeys.ts) tells. Holds hashes, like the table, never a key. Fresh per build.
   */
  static readonly layerMemory = Layer.effect(
    ApiKeys,
    Effect.gen(function*() {
      const keys = yield* Ref.make<ReadonlyArray<ApiKeyRecord & { readonly hash: string }>>([])
      let nextId = 1
      const record = ({ hash: _hash, ...rest }: ApiKeyRecord & { readonly hash: string }): ApiKeyRecord => rest

      const create = Effect.fnUntraced(function*(options: CreateApiKeyOptions = {}) {
        const settings = yield* validateSettings(options)
        const key = generateKey()
        const created = {
          id: String(nextId++),
          name: options.name?.trim() ?? "",
          team: options.team?.trim() || null,
          prefix: prefixOf(key),
          settings,
          createdAt: new Date(yield* Clock.currentTimeMillis),
          revokedAt: null,
          hash: hashKey(key)
        }
        yield* Ref.update(keys, (all) => [...all, created])
        return { record: record(created), key }
      })

      // newest first: created_at DESC, id DESC
      const list = Effect.map(Ref.get(keys), (all) =>
        [...all].sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime() || Number(b.id) - Number(a.id)).map(record))

      const revoke = Effect.fnUntraced(function*(prefixOrId: string) {
        const wanted = prefixOrId.trim()
        const byId = /^\d{1,18}$/.test(wanted)
        const matches = (entry: { readonly id: string; readonly prefix: string; readonly hash: string }) =>
          byId ? entry.id === String(Number(wanted)) : isWellFormedKey(wanted) ? entry.hash === hashKey(wanted) : entry.prefix === wanted
        const now = new Date(yield* Clock.currentTimeMillis)
        const revoked = yield* Ref.modify(keys, (all) => {
          const found = all.find(matches)
          if (found === undefined) return [undefined, all]
          const updated = { ...found, revokedAt: found.revokedAt ?? now }
          return [updated, all.map((entry) => entry === found ? updated : entry)]
        })
        if (revoked === undefined) {
          return yield* noSuchKey(wanted, byId)
        }
        return record(revoked)
      })

      const authenticate = (key: string) =>
        isWellFormedKey(key)
          ? Effect.map(Ref.get(keys), (all) =>
            Option.map(Option.fromNullishOr(all.find((entry) => entry.hash === hashKey(key) && entry.revokedAt === null)), record))
          : Effect.succeed(Option.none<ApiKeyRecord>())

      return ApiKeys.of({ create, list, revoke, authenticate })
    })
  )
}
