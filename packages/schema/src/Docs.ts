/**
 * The documentation-lookup service's REST API v2 (spec/2, DESIGN.md §5 "Docs lookup"). Definitions
 * only; the server is `@svc/docs`. The MCP server calls it through an `HttpApiClient` made from this
 * definition.
 */
import { Context, Schema } from "effect"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiMiddleware, HttpApiSchema, OpenApi } from "effect/http-api"
import { Rpc, RpcGroup } from "effect/rpc"
import { ApiConventions, ApiError, Unauthorized } from "./Errors.ts"
import { HealthGroup } from "./Health.ts"
import { RpcDefects } from "./RpcDefects.ts"
import {
  IdParam,
  IntParam,
  isNulFree,
  MAX_ID_LENGTH,
  MAX_NAME_LENGTH,
  NameParam,
  QuestionParam,
  RequestString,
  SearchTextParam,
  STRICT_REQUEST,
  UrlParam
} from "./Limits.ts"

// -----------------------------------------------------------------------------
// Records
// -----------------------------------------------------------------------------

/** `/owner/repo`, or `/owner/repo/version` for one version. */
export const LibraryIdPattern = /^\/[^/\s]+\/[^/\s]+(\/[^/\s]+)?$/

/**
 * Where a caller finds a library's id, over REST or MCP: Context7's MCP server shows the API's error
 * messages to the agent as they are, so they name the tool too, not only the endpoint.
 */
const FIND_THE_ID = "GET /api/v2/libs/search?libraryName=<name> or the resolve-library-id tool"

export const LibraryIdParam = Schema.String.check(
  Schema.isMaxLength(MAX_ID_LENGTH, { message: `must be at most ${MAX_ID_LENGTH} characters long` }).abort(),
  isNulFree,
  Schema.isPattern(LibraryIdPattern, {
    // say what to do, not only what is wrong
    message: `Expected a library id like "/owner/repo" or "/owner/repo/1.2.3" (a leading slash): find it with ` +
      `${FIND_THE_ID}, then ask again with that id`
  })
)

/** Refresh states of an indexed version (DESIGN.md §5). */
export const IndexState = Schema.Literals(["queued", "indexing", "ready", "failed"]).annotate({ identifier: "IndexState" })
export type IndexState = typeof IndexState.Type

/** One result of GET /api/v2/libs/search: the library and its default version's figures. */
export const LibrarySearchResult = Schema.Struct({
  /** `/owner/repo`: what the context endpoint takes. */
  id: Schema.String,
  title: Schema.String,
  description: Schema.String,
  /** Of the default version's live index. */
  totalSnippets: Schema.Finite,
  totalTokens: Schema.Finite,
  /** 0-10; how far the source is trusted (local sources are 5 until the signal exists). */
  trustScore: Schema.Finite,
  /** Every indexed version; `/owner/repo/<version>` selects one. */
  versions: Schema.Array(Schema.String),
  /** The default version's state. */
  state: IndexState,
  /** ISO 8601: when the default version's index last went live; null before that. */
  lastUpdateDate: Schema.NullOr(Schema.String)
}).annotate({ identifier: "LibrarySearchResult" })
export type LibrarySearchResult = typeof LibrarySearchResult.Type

export const LibrarySearchResponse = Schema.Struct({
  results: Schema.Array(LibrarySearchResult),
  /**
   * The caller's team settings (source access or library filter of its API key) are active. Like
   * spec/2 says, it does not tell whether a result was left out.
   */
  searchFilterApplied: Schema.Boolean
}).annotate({ identifier: "LibrarySearchResponse" })
export type LibrarySearchResponse = typeof LibrarySearchResponse.Type

/** One of the sections an answer's entry holds from its file (see `ContextSnippet.sections`). */
export const ContextSection = Schema.Struct({
  title: Schema.String,
  headingPath: Schema.Array(Schema.String),
  sourceUrl: Schema.optionalKey(Schema.String)
}).annotate({ identifier: "ContextSection" })
export type ContextSection = typeof ContextSection.Type

/**
 * An entry of a context answer: what the answer took from one file. With one section, that section
 * (`kind`, `title`, ... its own); with more, they are read together, best first: `content` is Markdown,
 * the first section as it reads alone and each next one under its `####` title (and its `Source:` line
 * where that differs from the first's); `title`, `headingPath` and `sourceUrl` are the first section's
 * and `sections` names each.
 */
export const ContextSnippet = Schema.Struct({
  kind: Schema.Literals(["code", "prose"]),
  title: Schema.String,
  /** H1 > H2 > ... above the snippet. */
  headingPath: Schema.Array(Schema.String),
  /** Code: the paragraph before the block; prose: empty. */
  description: Schema.String,
  language: Schema.NullOr(Schema.String),
  /** The code or the prose. */
  content: Schema.String,
  /** Path of the file it came from, relative to the library's root. */
  sourcePath: Schema.String,
  /**
   * Where it can be opened: the repository's page of the file at its line (git sources, npm packages
   * naming a repository), or the file's path (folders). The text answer's `Source:` line shows it.
   */
  sourceUrl: Schema.optionalKey(Schema.String),
  tokens: Schema.Finite,
  /** The file's sections in this entry, best first, when there are more than one. */
  sections: Schema.optionalKey(Schema.Array(ContextSection))
}).annotate({ identifier: "ContextSnippet" })
export type ContextSnippet = typeof ContextSnippet.Type

/** GET /api/v2/context?type=json. */
export const ContextResponse = Schema.Struct({
  /** `/owner/repo/<version>` of the version answered. */
  libraryId: Schema.String,
  version: Schema.String,
  /** The question answered: `query` and `topic` joined (the topic alone when there is no query); null without either. */
  query: Schema.NullOr(Schema.String),
  /** The snippets' tokens and the rules'; at most the `tokens` budget. */
  totalTokens: Schema.Finite,
  /**
   * Page 1 only, when the library has any: its rules for agents (its `svc.json`), in their order while
   * they fit in half the budget.
   */
  rules: Schema.optionalKey(Schema.Array(Schema.String)),
  snippets: Schema.Array(ContextSnippet)
}).annotate({ identifier: "ContextResponse" })
export type ContextResponse = typeof ContextResponse.Type

/** 202: the library is known but has no searchable index yet; ask again later. */
export const LibraryIndexing = Schema.Struct({
  code: Schema.Literal("library_indexing"),
  message: Schema.String,
  libraryId: Schema.String,
  version: Schema.String,
  state: IndexState
}).annotate({ identifier: "LibraryIndexing" })
export type LibraryIndexing = typeof LibraryIndexing.Type

export const DEFAULT_CONTEXT_TOKENS = 5000
export const MIN_CONTEXT_TOKENS = 100
export const MAX_CONTEXT_TOKENS = 50_000
/** Pages of one context answer (`page`). */
export const MAX_CONTEXT_PAGE = 10
export const MAX_TOPIC_LENGTH = 200

export const ContextQuery = {
  libraryId: LibraryIdParam,
  /** The question; without it the version's first snippets in document order. */
  query: Schema.optional(QuestionParam),
  /** Default txt. */
  type: Schema.optional(Schema.Literals(["txt", "json"])),
  /** Token budget of the answer; default 5,000. */
  tokens: Schema.optional(IntParam({ minimum: MIN_CONTEXT_TOKENS, maximum: MAX_CONTEXT_TOKENS })),
  /** What to focus on (Context7 v2): its words join the question's; alone, it is the question. */
  topic: Schema.optional(RequestString({ maxLength: MAX_TOPIC_LENGTH })),
  /** The n-th budget of snippets past the first (Context7 v2): 1 (default) to 10. */
  page: Schema.optional(IntParam({ minimum: 1, maximum: MAX_CONTEXT_PAGE }))
}

// -----------------------------------------------------------------------------
// Errors
// -----------------------------------------------------------------------------

export class LibraryNotFound extends ApiError<LibraryNotFound>()("LibraryNotFound", {
  status: 404,
  fields: { libraryId: Schema.String },
  // through Context7's MCP server an agent read "find ids with GET /api/v2/libs/search", which it cannot do
  message: ({ libraryId }) => `No library with id ${libraryId}: find its id with ${FIND_THE_ID}`
}) {}

// -----------------------------------------------------------------------------
// API
// -----------------------------------------------------------------------------

/** 429: too many requests from this key or client address; `retryAfter` seconds (also `Retry-After`). */
export class RateLimited extends ApiError<RateLimited>()("RateLimited", {
  status: 429,
  fields: { retryAfter: Schema.Int },
  message: ({ retryAfter }) => `Too many requests: try again in ${retryAfter} second${retryAfter === 1 ? "" : "s"}`
}) {}

// -----------------------------------------------------------------------------
// Callers: API keys and team settings
// -----------------------------------------------------------------------------

/** The prefix every API key of the suite starts with (DESIGN.md §5). */
export const API_KEY_PREFIX = "svcsk_"

/** Where a library's docs came from; a key's source access names these. */
export const SourceKind = Schema.Literals(["folder", "npm", "git", "website", "openapi"]).annotate({ identifier: "SourceKind" })
export type SourceKind = typeof SourceKind.Type

/** A library filter entry: an id `/owner/repo`, or a prefix ending in `*` (`/acme/*`, `/acme/web-*`). */
export const LibraryFilterPattern = /^(\/[^/\s*]+\/[^/\s*]+|\/[^\s*]*\*)$/

export const LibraryFilter = Schema.String.check(
  Schema.isPattern(LibraryFilterPattern, { message: `Expected a library id "/owner/repo" or a prefix like "/owner/*"` })
)

/**
 * A key's team settings. Empty lists restrict nothing; a key with either list non-empty has its
 * settings active (`searchFilterApplied: true`).
 */
export const TeamSettings = Schema.Struct({
  /** Libraries the key may see: ids or `*` prefixes; empty = all. */
  libraries: Schema.Array(LibraryFilter),
  /** Source kinds the key may see; empty = all. */
  sources: Schema.Array(SourceKind)
}).annotate({ identifier: "TeamSettings" })
export type TeamSettings = typeof TeamSettings.Type

/** Whether settings restrict anything. */
export const settingsActive = (settings: TeamSettings): boolean =>
  settings.libraries.length > 0 || settings.sources.length > 0

/** Who is calling: provided to the handlers by {@link DocsAuth}. */
export type Caller =
  | {
    readonly _tag: "Anonymous"
    /** The client address the anonymous rate limit is counted against. */
    readonly address: string
  }
  | {
    readonly _tag: "ApiKey"
    readonly id: string
    /** `svcsk_` + 8 characters: names the key, is not secret. */
    readonly prefix: string
    readonly name: string
    readonly team: string | null
    readonly settings: TeamSettings
  }

export class DocsCaller extends Context.Service<DocsCaller, Caller>()("@svc/schema/Docs/DocsCaller") {}

/**
 * API keys and rate limits on the library and context endpoints. The key travels in
 * `Authorization: Bearer <key>`, `X-Svc-API-Key` or `X-API-Key` (spec/2); none is anonymous (lower
 * limits), a wrong, unknown or revoked one is 401. Over the limit: 429 with `Retry-After`.
 *
 * Not an `HttpApiSecurity` middleware: those try schemes one after another and treat a failure as
 * "try the next", while here a present-but-wrong key must be refused and an absent one allowed.
 */
export class DocsAuth extends HttpApiMiddleware.Service<DocsAuth, { provides: DocsCaller }>()(
  "@svc/schema/Docs/DocsAuth",
  { error: [Unauthorized, RateLimited] }
) {}

export class LibsGroup extends HttpApiGroup.make("libs").add(
  HttpApiEndpoint.get("search", "/api/v2/libs/search", {
    query: {
      libraryName: RequestString({ maxLength: MAX_NAME_LENGTH, minLength: 1 }),
      /** The user's question: libraries whose docs answer it rank higher. */
      query: Schema.optional(QuestionParam)
    },
    success: LibrarySearchResponse
  })
).middleware(DocsAuth).annotateMerge(OpenApi.annotations({ title: "Libraries" })) {}

export class ContextGroup extends HttpApiGroup.make("context").add(
  HttpApiEndpoint.get("context", "/api/v2/context", {
    query: ContextQuery,
    // type=txt answers text/plain (the snippets rendered), type=json a ContextResponse.
    success: [ContextResponse, Schema.String.pipe(HttpApiSchema.asText()), LibraryIndexing.pipe(HttpApiSchema.status(202))],
    error: LibraryNotFound
  })
).middleware(DocsAuth).annotateMerge(OpenApi.annotations({ title: "Context" })) {}

/**
 * OpenAPI: {@link DocsAuth} reads its three headers itself (see there), so the document gets its
 * security schemes here — each optional (`{}` first: anonymous callers are served).
 */
const documentApiKeys = (spec: Record<string, any>): Record<string, any> => {
  spec.components = {
    ...spec.components,
    securitySchemes: {
      ...spec.components?.securitySchemes,
      bearer: { type: "http", scheme: "bearer", description: `An API key (${API_KEY_PREFIX}...)` },
      svcApiKey: { type: "apiKey", in: "header", name: "X-Svc-API-Key" },
      apiKey: { type: "apiKey", in: "header", name: "X-API-Key" }
    }
  }
  for (const [path, operations] of Object.entries<Record<string, any>>(spec.paths ?? {})) {
    if (!path.startsWith("/api/v2/")) continue
    for (const operation of Object.values(operations)) {
      operation.security = [{}, { bearer: [] }, { svcApiKey: [] }, { apiKey: [] }]
    }
  }
  return spec
}

export class DocsApi extends HttpApi.make("docs")
  .add(HealthGroup)
  .add(LibsGroup)
  .add(ContextGroup)
  .annotateMerge(ApiConventions)
  .annotateMerge(OpenApi.annotations({
    title: "svc docs",
    description: "Documentation lookup: find a library by name, then fetch the snippets that answer a question.",
    transform: documentApiKeys
  }))
{}

// -----------------------------------------------------------------------------
// Internal RPC (served at /rpc on docs-api behind DOCS_ADMIN_TOKEN)
// -----------------------------------------------------------------------------

/** What an indexing run reports as it goes, then its outcome (`Done`). */
export const IndexEvent = Schema.Union([
  /** A git source's clone begins (it may take minutes): its URL without credentials. */
  Schema.TaggedStruct("Cloning", { url: Schema.String }),
  /** A website's page (or llms.txt) fetched: its URL, how many so far, and the cap (DOCS_CRAWL_MAX_PAGES). */
  Schema.TaggedStruct("Fetched", { url: Schema.String, pages: Schema.Finite, maxPages: Schema.Finite }),
  /**
   * A website's crawl (or llms.txt's pages) ended: pages read, the most there could be, pages skipped
   * by reason (`not_found`, `timed_out`, …), and the deadline when DOCS_CRAWL_DEADLINE stopped it.
   */
  Schema.TaggedStruct("Crawled", {
    pages: Schema.Finite,
    maxPages: Schema.Finite,
    skipped: Schema.Array(Schema.Struct({ reason: Schema.String, pages: Schema.Finite })),
    stoppedAfter: Schema.NullOr(Schema.String)
  }),
  /** Another run of the version holds it (`holder`: its process, in words): this one starts when that one ends. */
  Schema.TaggedStruct("Waiting", { libraryId: Schema.String, holder: Schema.String }),
  Schema.TaggedStruct("Started", { libraryId: Schema.String, version: Schema.String, root: Schema.String }),
  Schema.TaggedStruct("FileRead", {
    path: Schema.String,
    snippets: Schema.Finite,
    filesRead: Schema.Finite,
    totalFiles: Schema.Finite
  }),
  Schema.TaggedStruct("Stored", { snippets: Schema.Finite, tokens: Schema.Finite }),
  Schema.TaggedStruct("Done", {
    libraryId: Schema.String,
    version: Schema.String,
    files: Schema.Finite,
    snippets: Schema.Finite,
    tokens: Schema.Finite
  })
])
export type IndexEvent = typeof IndexEvent.Type

/** An indexing run that failed: the category (source_not_found, read_failed, ...) and what happened. */
export class IndexingFailed extends Schema.TaggedError<IndexingFailed>()("IndexingFailed", {
  category: Schema.String,
  message: Schema.String
}) {}

/** One library of `svc docs list`, as the RPC carries it (times as ISO 8601). */
export const LibraryEntry = Schema.Struct({
  id: Schema.String,
  title: Schema.String,
  source: Schema.String,
  defaultVersion: Schema.String,
  /** Rules for agents from the library's `svc.json` (absent from servers before they were listed). */
  rules: Schema.optionalKey(Schema.Array(Schema.String)),
  versions: Schema.Array(Schema.Struct({
    version: Schema.String,
    state: Schema.String,
    errorCategory: Schema.NullOr(Schema.String),
    snippets: Schema.Finite,
    tokens: Schema.Finite,
    lastUpdate: Schema.NullOr(Schema.String)
  }))
}).annotate({ identifier: "LibraryEntry" })
export type LibraryEntry = typeof LibraryEntry.Type

/** The operator's trust in a library's documentation, 0 to 10: ranks libraries of equal name score. */
export const TrustScore = Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 10 })).annotate({ identifier: "TrustScore" })
export const DEFAULT_TRUST_SCORE = 5

export const AddLibrary = Rpc.make("AddLibrary", {
  payload: {
    /** A folder, a git URL or an npm package. */
    source: UrlParam,
    id: Schema.optionalKey(IdParam),
    version: Schema.optionalKey(NameParam),
    trust: Schema.optionalKey(TrustScore),
    /** The library's title and description, instead of what its package.json or README say. */
    title: Schema.optionalKey(RequestString({ maxLength: MAX_NAME_LENGTH, minLength: 1 })),
    description: Schema.optionalKey(SearchTextParam)
  },
  success: IndexEvent,
  error: IndexingFailed,
  stream: true
})
export const RefreshLibrary = Rpc.make("Refresh", {
  payload: { libraryId: IdParam },
  success: IndexEvent,
  error: IndexingFailed,
  stream: true
})
export const RemoveLibrary = Rpc.make("Remove", {
  payload: { libraryId: IdParam },
  success: Schema.Boolean
})
export const ListLibraries = Rpc.make("List", {
  success: Schema.Array(LibraryEntry)
})

/**
 * What `svc docs add|refresh|remove|list` do against a running docs-api (`DOCS_URL`). A missing or
 * wrong DOCS_ADMIN_TOKEN is refused before the RPC (HTTP 401/503), as on the listings RPC.
 */
export class DocsRpcs extends RpcGroup.make(AddLibrary, RefreshLibrary, RemoveLibrary, ListLibraries).middleware(RpcDefects)
  // a misspelt option (`titel`) is refused, not an add without it
  .annotateRpcs(Rpc.ParseOptions, STRICT_REQUEST) {}
