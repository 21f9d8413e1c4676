/**
 * The MCP server of the documentation lookup (spec/2): two tools, `resolve-library-id` and
 * `query-docs`, answered from the REST API v2 through `DocsClient`.
 *
 * Built on the SDK's low-level `Server` rather than `McpServer.registerTool`: the spec wants
 * alternative argument names rewritten to canonical ones *before* validation while `tools/list` shows
 * only the canonical schemas; with `registerTool` the SDK validates first. Here `tools/list` returns
 * the canonical JSON Schemas below, and `tools/call` rewrites aliases, then validates with Effect
 * Schema, then calls the API. Every failure (bad arguments, 401, 404, 429, a timeout) is a tool
 * result with `isError: true` and a sentence the agent can act on; nothing throws out of a tool. A
 * tool there is not (`tools/call` of an unknown name) is a protocol error, `-32602`, as MCP has it.
 *
 * A server holds no state between requests: the HTTP transport makes one per request.
 */
import type { LibrarySearchResult } from "@svc/schema"
import {
  LibraryIdPattern,
  MAX_CONTEXT_PAGE,
  MAX_CONTEXT_TOKENS,
  MAX_ID_LENGTH,
  MAX_NAME_LENGTH,
  MAX_QUESTION_LENGTH,
  MIN_CONTEXT_TOKENS,
  RequestString
} from "@svc/schema"
import { Server } from "@modelcontextprotocol/sdk/server/index.js"
import { CallToolRequestSchema, type CallToolResult, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js"
import { Effect, Schema } from "effect"
import { idPartsProblem } from "../sources/Source.ts"
import { CallerAddress, CallerApiKey, type DocsApiFailure, DocsClient } from "./DocsClient.ts"

export const SERVER_INFO = { name: "svc-docs", version: "0.1.0" } as const

const CALL_LIMIT =
  "Do not call this tool more than 3 times per question. If you cannot find what you need after 3 calls, " +
  "use the best result you have."

/**
 * Said once in the initialize result: what the server is for and the order of the calls. Clients
 * that show server instructions to the model (most agents do) need no rule of their own.
 */
export const INSTRUCTIONS =
  "Current documentation and code examples of the libraries indexed on this server. Use it when a question " +
  "is about a library, framework, SDK or tool: its API, configuration, setup, migration or errors.\n\n" +
  "1. Call resolve-library-id with the library's name (libraryName) and the user's question (query); pick the " +
  "best matching Library ID (/owner/repo) from the answer. Skip this when the user gave an ID like /owner/repo " +
  "or /owner/repo/version.\n" +
  "2. Call query-docs with that libraryId and a specific question (query). Each file's part of the answer " +
  "names its Source: a URL or path you can open for more.\n\n" +
  "A failed call says what to fix (a wrong ID, a missing argument, a key refused, a rate limit); follow it " +
  "rather than repeating the same call. At most 3 calls per tool and question."

/**
 * How each tool behaves, for clients that ask before calling (MCP tool annotations): both only read,
 * and both reach an index whose content changes as libraries are added (open world). They are hints,
 * which is all MCP makes of them.
 */
const readOnly = {
  readOnlyHint: true,
  destructiveHint: false,
  idempotentHint: true,
  openWorldHint: true
} as const

/** The tools as `tools/list` shows them: canonical argument names only. */
export const tools = [
  {
    name: "resolve-library-id",
    title: "Resolve library ID",
    annotations: { title: "Resolve library ID", ...readOnly },
    description:
      "Resolves a package or product name to a library ID that query-docs accepts (`/owner/repo`, or " +
      "`/owner/repo/version` for one version), and lists the best matching libraries with their " +
      "description, number of code snippets, trust score and versions.\n\n" +
      "Call this before query-docs unless the user gave a library ID in the form `/owner/repo` or " +
      "`/owner/repo/version`. Choose the library whose name matches best and, among close matches, the " +
      "one with more code snippets and a higher trust score. If no library fits, say so and suggest a " +
      `more precise name.\n\n${CALL_LIMIT}`,
    inputSchema: {
      type: "object" as const,
      properties: {
        query: {
          type: "string",
          description: "The user's question or task, used to rank the libraries by how well their documentation answers it"
        },
        libraryName: { type: "string", description: "The library or package name to look up, e.g. \"effect\" or \"vitest\"" }
      },
      required: ["query", "libraryName"]
    }
  },
  {
    name: "query-docs",
    title: "Query documentation",
    annotations: { title: "Query documentation", ...readOnly },
    description:
      "Retrieves current documentation and code examples of one library for a question: the sections " +
      "that answer it best, grouped by file (the best file first, its best section first), each with its " +
      "title, source, description and code.\n\n" +
      "You must call resolve-library-id first to get the library ID, unless the user gave one in the form " +
      "`/owner/repo` or `/owner/repo/version`. Ask a specific question (\"how do I retry with exponential " +
      `backoff\" rather than \"retry\").\n\n${CALL_LIMIT}`,
    inputSchema: {
      type: "object" as const,
      properties: {
        libraryId: {
          type: "string",
          description: "The library ID from resolve-library-id, e.g. /effect-ts/effect or /vitest-dev/vitest/4.0.0"
        },
        query: { type: "string", description: "The question or task to find documentation for" }
      },
      required: ["libraryId", "query"]
    }
  }
] as const

export type ToolName = (typeof tools)[number]["name"]

/**
 * The name Context7's server gave query-docs before (`get-library-docs`, with `topic` and `tokens`):
 * agents and saved prompts still call it. Accepted on `tools/call`, never listed by `tools/list`.
 */
export const LEGACY_TOOL = "get-library-docs"
export type CallableTool = ToolName | typeof LEGACY_TOOL

/** Accepted alternative names, per tool (spec/2 "Argument aliases"). */
const aliases: Record<CallableTool, Record<string, string>> = {
  "resolve-library-id": { userQuery: "query", question: "query" },
  // libraryName is canonical on resolve-library-id, an alias of libraryId here only
  "query-docs": {
    userQuery: "query",
    question: "query",
    svcCompatibleLibraryID: "libraryId",
    // Context7's name for it, which agents set up for Context7 send
    context7CompatibleLibraryID: "libraryId",
    libraryID: "libraryId",
    libraryName: "libraryId"
  },
  // Context7's get-library-docs: context7CompatibleLibraryID, topic (optional) and tokens
  [LEGACY_TOOL]: {
    context7CompatibleLibraryID: "libraryId",
    svcCompatibleLibraryID: "libraryId",
    libraryID: "libraryId",
    libraryName: "libraryId",
    topic: "query",
    userQuery: "query",
    question: "query"
  }
}

/**
 * Which argument sent is read for each canonical name: the name the tool documents (on query-docs the
 * canonical `libraryId` and `query`; on get-library-docs Context7's `context7CompatibleLibraryID` and
 * `topic`), then the canonical name, then the first other alias sent. get-library-docs read `libraryId`
 * over its own `context7CompatibleLibraryID` (outside audit); now both tools follow one rule: a tool's
 * own names win. Names are looked up and written as own keys only: an argument called `constructor` or
 * `__proto__` is an unknown argument like any other (read through the prototype, it became a key
 * "function Object() …" or "[object Object]", and the refusal named that).
 */
const chosenNames = (tool: CallableTool, args: Readonly<Record<string, unknown>>): Record<string, string> => {
  const rank = (name: string, canonical: string) => {
    const own = [documentedNames[tool]?.[canonical] ?? canonical, canonical].indexOf(name)
    return own === -1 ? 2 : own
  }
  const chosen: Record<string, string> = Object.create(null)
  for (const name of Object.keys(args)) {
    const canonical = Object.hasOwn(aliases[tool], name) ? aliases[tool][name]! : name
    if (!Object.hasOwn(chosen, canonical) || rank(name, canonical) < rank(chosen[canonical]!, canonical)) chosen[canonical] = name
  }
  return chosen
}

/** Renames aliases to canonical names, each read from the argument {@link chosenNames} picks. */
export const canonicalArguments = (
  tool: CallableTool,
  args: Readonly<Record<string, unknown>>
): Record<string, unknown> => {
  const result: Record<string, unknown> = Object.create(null)
  for (const [canonical, name] of Object.entries(chosenNames(tool, args))) result[canonical] = args[name]
  return { ...result }
}

// The API's own limits (@svc/schema Limits.ts): an argument the API would refuse is the agent's to fix,
// told here, rather than a request the API client cannot even encode.
const Text = (maxLength: number) => RequestString({ maxLength, minLength: 1 })
/**
 * A whole decimal number as an agent sends one: a non-negative integer, or a string of decimal digits
 * (`5000`, `"5000"`). `Number()` read `"0x10"` as 16 and `""` as 0 (then raised to 100) while refusing
 * `"abc"` (outside audit); `1.5`, `"1e3"`, `" 7"` and `-1` are not one either. A huge one (`1e23`,
 * twenty 9s) is one too, read approximately: the callers bring it into their range, and an agent
 * asking for "all the tokens" was told 1e+23 is not a whole number.
 */
export const wholeNumber = (value: unknown): number | undefined =>
  typeof value === "number" && Number.isInteger(value) && value >= 0
    ? value
    : typeof value === "string" && /^\d{1,400}$/.test(value)
    ? Number(value)
    : undefined

/**
 * get-library-docs' numeric arguments, read by {@link wholeNumber} (outside the Schema, so that the
 * refusal is worded as the others are, not "Expected number | string | undefined at ["tokens"]"):
 * `tokens` brought into the API's range as Context7 did (below the minimum asks for the minimum, above
 * the maximum the maximum); `page`, Context7's later n-th budget of snippets, from 1 to 10.
 */
const numericArguments = (
  args: Readonly<Record<string, unknown>>
): { readonly tokens?: number; readonly page?: number } | { readonly problem: string } => {
  const shown = (value: unknown) => JSON.stringify(value)?.slice(0, 40) ?? String(value)
  const tokens = args["tokens"] === undefined ? undefined : wholeNumber(args["tokens"])
  if (args["tokens"] !== undefined && tokens === undefined) {
    return {
      problem: `tokens must be a whole number (like 5000 or "5000"; ${MIN_CONTEXT_TOKENS} to ${MAX_CONTEXT_TOKENS}, ` +
        `others are brought into that range), not ${shown(args["tokens"])}`
    }
  }
  const page = args["page"] === undefined ? undefined : wholeNumber(args["page"])
  if (args["page"] !== undefined && (page === undefined || page < 1 || page > MAX_CONTEXT_PAGE)) {
    return { problem: `page must be a whole number from 1 to ${MAX_CONTEXT_PAGE}, not ${shown(args["page"])}` }
  }
  return {
    ...(tokens === undefined ? {} : { tokens: Math.min(MAX_CONTEXT_TOKENS, Math.max(MIN_CONTEXT_TOKENS, tokens)) }),
    ...(page === undefined ? {} : { page })
  }
}

const argumentSchemas = {
  "resolve-library-id": Schema.Struct({ query: Text(MAX_QUESTION_LENGTH), libraryName: Text(MAX_NAME_LENGTH) }),
  "query-docs": Schema.Struct({ libraryId: Text(MAX_ID_LENGTH), query: Text(MAX_QUESTION_LENGTH) }),
  [LEGACY_TOOL]: Schema.Struct({
    libraryId: Text(MAX_ID_LENGTH),
    query: Schema.optional(Text(MAX_QUESTION_LENGTH))
    // tokens and page: numericArguments
  })
} as const
const required: Record<CallableTool, ReadonlyArray<string>> = {
  "resolve-library-id": ["query", "libraryName"],
  "query-docs": ["libraryId", "query"],
  [LEGACY_TOOL]: ["libraryId"]
}
/** Where a tool documents an argument under another name than the canonical one (Context7's, for its old tool). */
const documentedNames: Partial<Record<CallableTool, Record<string, string>>> = {
  [LEGACY_TOOL]: { libraryId: "context7CompatibleLibraryID", query: "topic" }
}

/**
 * The name to tell the caller an argument by: the alias it sent, else the name the tool documents.
 * A refusal of `topic` said `at ["query"]`, and a missing `context7CompatibleLibraryID` "libraryId".
 */
const callerNames = (tool: CallableTool, args: Readonly<Record<string, unknown>>) => {
  const chosen = chosenNames(tool, args)
  return (canonical: string): string =>
    (Object.hasOwn(chosen, canonical) ? chosen[canonical] : undefined) ?? documentedNames[tool]?.[canonical] ?? canonical
}

/**
 * What is wrong with a library ID that does not have the ID's shape, and what to do: the usual case is
 * a name (`react`) where the ID (`/facebook/react`) belongs.
 */
export const malformedLibraryId = (libraryId: string): string | undefined => {
  const shown = JSON.stringify(libraryId.length > 100 ? `${libraryId.slice(0, 100)}…` : libraryId)
  if (LibraryIdPattern.test(libraryId)) {
    // the shape, but not an id the indexer makes (the rule written once, in Source.ts)
    const parts = idPartsProblem(libraryId)
    return parts === undefined
      ? undefined
      : `${shown} is not a library ID: ${parts}. Call resolve-library-id and pass the Library ID it answers as libraryId.`
  }
  const name = libraryId.replace(/^\/+|\/+$/g, "").split("/").at(-1) ?? ""
  return `${shown} is not a library ID: an ID looks like /owner/repo or /owner/repo/version (a leading slash, ` +
    "no spaces). Call resolve-library-id first" +
    (/^[\w@.-]{1,100}$/.test(name) ? ` (libraryName "${name}")` : "") +
    " and pass the Library ID it answers as libraryId."
}

const text = (body: string, isError = false): CallToolResult => ({
  content: [{ type: "text", text: body }],
  ...(isError ? { isError: true } : {})
})

/** A sentence for the agent about a failed API call. */
export const describeFailure = (failure: DocsApiFailure, libraryId?: string, keyed = false): string => {
  switch (failure.kind) {
    case "bad_request":
      return `The documentation service refused the request (${failure.status ?? 400}): ${failure.message}. ` +
        "Fix the arguments (a library ID from resolve-library-id, a question under " +
        `${MAX_QUESTION_LENGTH} characters) rather than retrying the same call.`
    case "unauthorized":
      return "The documentation service refused the API key (401). Check the key: SVC_API_KEY or --api-key " +
        "for stdio; an Authorization: Bearer, X-Svc-API-Key or X-API-Key header over HTTP."
    case "not_found":
      return libraryId === undefined
        ? "The documentation service found nothing for this request (404)."
        : / has no version /.test(failure.message)
        // the library exists: what the service said names the versions there are
        ? `${failure.message} (404). Pass one of those versions, or the ID without a version for the default one.`
        : `No library has the ID ${libraryId} (404). Call resolve-library-id to find the right ID.`
    case "rate_limited":
      return `The documentation service is rate limiting these requests (429)${
        failure.retryAfter === undefined ? "" : `; try again in ${failure.retryAfter} second${failure.retryAfter === 1 ? "" : "s"}`
      }. ${keyed ? "This API key has used its limit." : "An API key raises the limits."}`
    case "timeout":
      return `${failure.message}. Try again, or ask a narrower question.`
    case "unavailable":
      return "The documentation service could not be reached. It may be down; try again shortly."
    case "failed":
      return `The documentation service failed to answer${failure.status === undefined ? "" : ` (status ${failure.status})`}. Try again shortly.`
  }
}

/**
 * Text on one line of the list: a description may break lines (an svc.json's, a package.json's), and
 * printed as it was, its lines could add an entry with an ID of its authors' choosing to what the
 * agent reads ("\n- Title: React\n  Library ID: /acme/forger-react").
 */
const oneLine = (text: string): string => text.replace(/\s+/g, " ").trim()

const describeLibrary = (library: LibrarySearchResult): string =>
  [
    `- Title: ${oneLine(library.title)}`,
    `  Library ID: ${library.id}`,
    `  Description: ${oneLine(library.description) === "" ? "(none)" : oneLine(library.description)}`,
    `  Code snippets: ${library.totalSnippets} · Tokens: ${library.totalTokens} · Trust score: ${library.trustScore}`,
    `  Versions: ${library.versions.length === 0 ? "(none)" : library.versions.join(", ")} · State: ${library.state}`
  ].join("\n")

const resolveLibraryId = (args: { readonly query: string; readonly libraryName: string }) =>
  Effect.gen(function*() {
    const client = yield* DocsClient
    const { results, searchFilterApplied } = yield* client.searchLibraries(args.libraryName, args.query)
    // The REST answer's searchFilterApplied (spec/2), said where the agent reads: without it an agent
    // takes a library its key may not see for one that is not indexed.
    const filtered = searchFilterApplied
      ? "\n\nsearchFilterApplied: this API key's team settings limit the libraries searched; a library " +
        "outside them is not listed even when it is indexed."
      : ""
    if (results.length === 0) {
      return text(
        `No indexed library matches "${args.libraryName}". Try a shorter or different name (the package name, ` +
          "or the product name without version or suffix). If it is not indexed, an operator can add it with " +
          "`svc docs add`." + filtered,
        true
      )
    }
    return text(
      `Libraries matching "${args.libraryName}", best first. Pass the chosen Library ID to query-docs ` +
        "(append /<version> for one of the listed versions).\n\n" + results.map(describeLibrary).join("\n\n") + filtered
    )
  }).pipe(Effect.catchTag("DocsApiFailure", (failure) => answerFailure(failure)))

/** A failed API call as the tool's error result, said for the caller (with or without an API key). */
const answerFailure = (failure: DocsApiFailure, libraryId?: string) =>
  Effect.map(CallerApiKey, (key) => text(describeFailure(failure, libraryId, key !== undefined), true))

const queryDocs = (args: {
  readonly libraryId: string
  readonly query?: string | undefined
  readonly tokens?: number | undefined
  readonly page?: number | undefined
}) =>
  Effect.gen(function*() {
    const malformed = malformedLibraryId(args.libraryId)
    if (malformed !== undefined) return text(malformed, true)
    const client = yield* DocsClient
    const answer = yield* client.context(args.libraryId, args.query, { tokens: args.tokens, page: args.page })
    if (answer._tag === "Indexing") {
      // a failed first run stays failed until an operator refreshes the source: "try again in a minute"
      // sent agents back for calls that could only fail the same way
      return text(
        answer.indexing.state === "failed"
          ? `The documentation of ${args.libraryId} could not be indexed (state: failed): its last indexing run ` +
            "failed, and asking again will not change that until an operator fixes the source and runs " +
            "`svc docs refresh`. Answer without it, or pick another library from resolve-library-id."
          : `The documentation of ${args.libraryId} ${
            answer.indexing.state === "queued" ? "is queued for indexing" : "is being indexed"
          } (state: ${answer.indexing.state}). Try again in a minute, or answer without it.`,
        true
      )
    }
    if (answer.text.trim() === "") {
      return text(
        args.query === undefined
          ? `${args.libraryId} has no documentation yet.`
          : `${args.libraryId} has no documentation that matches "${args.query}". Rephrase the question.`,
        true
      )
    }
    return text(answer.text)
  }).pipe(
    Effect.catchTag("DocsApiFailure", (failure) => answerFailure(failure, args.libraryId))
  )

/** Whether `tools/call` takes `name`: the listed tools and {@link LEGACY_TOOL}. */
export const isCallableTool = (name: string): name is CallableTool => Object.hasOwn(aliases, name)

/**
 * An unknown tool is a protocol error, `-32602 Invalid params` (MCP 2025-11-25 tools "Error
 * handling": unknown tools and malformed requests are protocol errors; a tool result with `isError` is
 * for a tool that ran, its argument validation included). It was such a tool result, which a client
 * shows the model as if the tool existed and failed. Thrown as a plain error with a `code`: the SDK
 * sends `code` and `message` as they are (its `McpError` would put "MCP error -32602:" into the message,
 * which the client's `McpError` then says twice).
 */
export const unknownToolError = (name: string): Error & { readonly code: number } =>
  Object.assign(
    new Error(
      `Unknown tool: ${JSON.stringify(name.length > 100 ? `${name.slice(0, 100)}…` : name)}; ` +
        `the tools are ${tools.map((tool) => tool.name).join(" and ")}`
    ),
    { code: -32602 }
  )

/** Runs one `tools/call` of a tool there is: aliases → validation → the tool (`get-library-docs` runs query-docs). */
export const callTool = (name: CallableTool, rawArguments: Readonly<Record<string, unknown>> | undefined) =>
  Effect.gen(function*() {
    const args = canonicalArguments(name, rawArguments ?? {})
    const decoded = Schema.decodeUnknownResult(argumentSchemas[name] as Schema.Codec<unknown, unknown>)(args)
    const numbers = name === LEGACY_TOOL ? numericArguments(args) : {}
    if (decoded._tag === "Failure" || "problem" in numbers) {
      const named = callerNames(name, rawArguments ?? {})
      const expected = required[name]
      const missing = expected.filter((key) => typeof args[key] !== "string" || args[key] === "")
      const issue = "problem" in numbers
        ? numbers.problem
        : decoded._tag === "Failure"
        ? decoded.failure.message.replace(/\["(\w+)"\]/g, (_, key: string) => `["${named(key)}"]`)
        : ""
      return text(
        `Invalid arguments for ${name}: ${
          missing.length > 0 ? `${missing.map(named).join(" and ")} must be a non-empty string` : issue
        }. Required arguments: ${expected.map(named).join(", ")}.`,
        true
      )
    }
    return name === "resolve-library-id"
      ? yield* resolveLibraryId(decoded.success as { query: string; libraryName: string })
      : yield* queryDocs({ ...(decoded.success as { libraryId: string; query?: string }), ...numbers })
  })

/**
 * A fresh MCP server whose tool calls use `DocsClient` from the current context and send `apiKey`
 * (the caller's) to the API, and `address` (the caller's, over HTTP) as the signed client address.
 */
export const make = (apiKey: string | undefined, address?: string | undefined) =>
  Effect.gen(function*() {
    const context = yield* Effect.context<DocsClient>()
    const server = new Server(SERVER_INFO, {
      // the tool list never changes while the server runs: no list-changed notifications
      capabilities: { tools: { listChanged: false } },
      instructions: INSTRUCTIONS
    })
    server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: tools.map((tool) => ({ ...tool })) }))
    server.setRequestHandler(CallToolRequestSchema, (request, extra) => {
      const name = request.params.name
      if (!isCallableTool(name)) throw unknownToolError(name)
      return Effect.runPromiseWith(context)(
        callTool(name, request.params.arguments).pipe(
          Effect.provideService(CallerApiKey, apiKey),
          Effect.provideService(CallerAddress, address)
        ),
        { signal: extra.signal }
      )
    })
    return server
  })


