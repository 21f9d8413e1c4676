/**
 * Reading a publish request's configuration: the `Svc-*` headers, each also accepted as a query
 * parameter whose key is the lowercased header name (`svc-retries`), plus a URL group's default
 * headers. Pure: every bad value becomes one {@link RequestIssue} naming the header (or query
 * parameter) as the caller wrote it, and nothing is enqueued unless there is none.
 *
 * Precedence, lowest first: the group's default headers, the request headers, the query parameters.
 */
import type { CallbackSettings, DefaultHeaders, RequestIssue } from "@svc/schema"
import { FLOW_CONTROL_KEY_PATTERN, MAX_URL_LENGTH, parseDuration, PUBLISH_SETTINGS } from "@svc/schema"
import { Duration } from "effect"
import leven from "leven"
import { connectionOptions, HOP_BY_HOP } from "./HopByHop.ts"
import type { QueueSettings } from "./QueueConfig.ts"
import { notANumberAt, parseRetryDelay } from "./RetryDelay.ts"

export const METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"] as const

/** How one message is delivered. */
export interface DeliverySettings {
  readonly method: string
  readonly timeoutMs: number
  readonly retries: number
  readonly delayMs: number
  /**
   * `Svc-Not-Before` (unix ms): not delivered before this instant. The later of it and `delayMs`
   * (counted from the insert) wins; an instant in the past means now.
   */
  readonly notBefore?: number | undefined
  /** `Svc-Retry-Delay`: the delay before each retry as an expression of `retried` (RetryDelay.ts). */
  readonly retryDelay?: string | undefined
  /** Sent to the destination as they are (names lowercase). */
  readonly headers: Readonly<Record<string, string>>
}

export interface PublishSettings {
  readonly delivery: DeliverySettings
  readonly callback: CallbackSettings | undefined
  readonly failureCallback: CallbackSettings | undefined
  readonly deduplicationId: string | undefined
  /**
   * `Svc-Content-Based-Deduplication: true`: the publish derives its deduplication id from what it
   * delivers (`Operations.contentDeduplicationId`); an explicit `Svc-Deduplication-Id` wins over it.
   */
  readonly contentBasedDeduplication: boolean
  readonly flowControl: FlowControlSettings | undefined
}

/**
 * `Svc-Flow-Control-Key` and `Svc-Flow-Control-Value: parallelism=<n>, rate=<n>, period=<duration>`:
 * the limits every message of `key` shares (`undefined` = no limit of that kind; at least one set).
 */
export interface FlowControlSettings {
  readonly key: string
  readonly parallelism: number | undefined
  readonly rate: number | undefined
  readonly periodMs: number
}

const FLOW_KEY = FLOW_CONTROL_KEY_PATTERN
/** The caps of `Svc-Flow-Control-Value`. */
export const MAX_FLOW_PARALLELISM = 1000
export const MAX_FLOW_RATE = 10_000
export const MIN_FLOW_PERIOD_MS = 1000
export const MAX_FLOW_PERIOD_MS = 86_400_000

/** `parallelism=<n>, rate=<n>, period=<duration>` (each optional, at least one limit), or the problems. */
export const parseFlowControlValue = (
  text: string
): { readonly parallelism: number | undefined; readonly rate: number | undefined; readonly periodMs: number } | {
  readonly problems: ReadonlyArray<string>
} => {
  const problems: Array<string> = []
  const seen = new Map<string, string>()
  for (const part of text.split(",")) {
    const trimmed = part.trim()
    if (trimmed === "") continue
    const eq = trimmed.indexOf("=")
    const name = (eq < 0 ? trimmed : trimmed.slice(0, eq)).trim().toLowerCase()
    const value = eq < 0 ? "" : trimmed.slice(eq + 1).trim()
    if (name !== "parallelism" && name !== "rate" && name !== "period") {
      problems.push(`unknown part ${JSON.stringify(trimmed.slice(0, 50))} (expected parallelism=<n>, rate=<n>, period=<duration>)`)
    } else if (seen.has(name)) problems.push(`${name} is given twice`)
    else seen.set(name, value)
  }
  const integer = (name: string, max: number): number | undefined => {
    const value = seen.get(name)
    if (value === undefined) return undefined
    if (!/^\d{1,9}$/.test(value) || Number(value) < 1 || Number(value) > max) {
      problems.push(`${name} must be an integer from 1 to ${max}, got ${JSON.stringify(value.slice(0, 50))}`)
      return undefined
    }
    return Number(value)
  }
  const parallelism = integer("parallelism", MAX_FLOW_PARALLELISM)
  const rate = integer("rate", MAX_FLOW_RATE)
  let periodMs = MIN_FLOW_PERIOD_MS
  const period = seen.get("period")
  if (period !== undefined) {
    const ms = parseDuration(period)
    if (ms === undefined || ms < MIN_FLOW_PERIOD_MS || ms > MAX_FLOW_PERIOD_MS) {
      problems.push(`period must be a duration from 1s to 1d such as "1s", "10s", "1m", got ${JSON.stringify(period.slice(0, 50))}`)
    } else periodMs = ms
  }
  if (problems.length === 0 && !seen.has("parallelism") && !seen.has("rate")) {
    problems.push("expected parallelism=<n> and/or rate=<n> (with an optional period=<duration>)")
  }
  return problems.length > 0 ? { problems } : { parallelism, rate, periodMs }
}

/**
 * Where a configuration value came from, to name it in a 400: a request header, a query parameter,
 * or a URL group's default header (named `headers.<Name>`, as in the `PATCH` body that set it).
 */
interface Source {
  readonly value: string
  readonly in: "header" | "query" | "default"
  readonly name: string
}

// -----------------------------------------------------------------------------
// Header rules: one set, used at publish, at PATCH of a group's defaults and by the worker
// -----------------------------------------------------------------------------

/** RFC 9110 `token`: what node's `http` and `fetch`'s `Headers` accept as a header name. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/
/**
 * A character outside RFC 9110 `field-value` as node's `http` accepts it: HTAB, SP, visible ASCII
 * and obs-text (0x80-0xFF). So no control character (0x00-0x1F but HTAB, 0x7F) and nothing beyond
 * Latin-1 (which neither node nor `fetch` can put on the wire). `fetch`'s `Headers` accepts a
 * superset, so a value passing this is sendable by either.
 */
const BAD_VALUE_CHAR = /[^\t\x20-\x7e\x80-\xff]/

/** Longest forwarded header value accepted at publish (characters). */
export const MAX_HEADER_VALUE_LENGTH = 8192

/**
 * Names the delivery sets itself (framing, connection management, the destination's host) or that
 * HTTP clients refuse to send (`fetch` throws on `connection`, `keep-alive`, `transfer-encoding`,
 * `upgrade`, `expect`): never forwarded.
 */
export const RESERVED_HEADERS: ReadonlySet<string> = new Set([
  "connection",
  "content-length",
  "expect",
  "host",
  "keep-alive",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade"
])

/**
 * Headers every delivery (and callback) gets from the queue itself (`Worker.ts`): a forwarded one was
 * replaced without a word (`Svc-Message-Id`, `Svc-Retried`, `Svc-Signature`) or, where the message
 * has none of its own, sent as if the queue had set it (`Svc-Topic-Name` on a message to no group,
 * `Svc-Schedule-Id` on one no schedule made). Not forwarded either; other `Svc-` names are (a
 * destination that is itself a queue reads its settings from them).
 */
export const DELIVERY_HEADERS: ReadonlySet<string> = new Set([
  "svc-message-id",
  "svc-retried",
  "svc-signature",
  "svc-topic-name",
  "svc-schedule-id"
])

/** `Svc-Forward-<Name>`, `Svc-Callback-Forward-<Name>`, `Svc-Failure-Callback-Forward-<Name>`: a header for the destination (or callback). */
export const FORWARDED_SETTING = /^svc-(?:(?:failure-)?callback-)?forward-/i

/** The settings {@link parsePublish} reads besides the forward families (the list the queue's OpenAPI document gives). */
const PUBLISH_SETTING_NAMES: ReadonlySet<string> = new Set(PUBLISH_SETTINGS)

/**
 * Why a `Svc-*` name (lowercase) is no setting of a publish, or `undefined` when it is one or is one
 * of the queue's own {@link DELIVERY_HEADERS} (a delivery re-published by a destination that is itself
 * a queue carries those; they were never settings, and are dropped). An unknown name was ignored: a
 * typo (`Svc-Retrys: 5`) gave the default retries, and `Svc-Cron` on a publish delivered once, at
 * once, without a word. `spelled` is how the caller wrote it: a header, or a query parameter.
 */
export const unknownSettingProblem = (name: string, spelled: "header" | "query"): string | undefined => {
  if (PUBLISH_SETTING_NAMES.has(name) || DELIVERY_HEADERS.has(name) || FORWARDED_SETTING.test(name)) return undefined
  const shown = (setting: string) => spelled === "header" ? canonicalHeaderName(setting) : setting
  if (name === "svc-cron") {
    return "is a schedule's setting, and a publish delivers once: create a schedule with POST /v2/schedules/<destination>"
  }
  const closest = PUBLISH_SETTINGS.map((setting) => ({ setting, distance: leven(name, setting) }))
    .reduce((best, next) => next.distance < best.distance ? next : best)
  const hint = closest.distance <= 2 ? `did you mean ${shown(closest.setting)}? ` : ""
  return `is not a setting of the queue (${hint}a header meant for the destination is sent as ${shown("svc-forward-")}<Name>)`
}

const describeChar = (text: string, index: number): string => {
  const code = text.codePointAt(index)!
  const hex = `U+${code.toString(16).toUpperCase().padStart(4, "0")}`
  if (code < 0x20 || code === 0x7f) return `the control character ${hex} at position ${index}`
  if (code >= 0xd800 && code <= 0xdfff) return `an unpaired surrogate (${hex}) at position ${index}`
  return `${JSON.stringify(String.fromCodePoint(code))} (${hex}, beyond Latin-1) at position ${index}`
}

/**
 * Why a header could not be sent by the delivery client (node's `http`, or `fetch`), or
 * `undefined` when it can: the name must be an RFC 9110 token, the value tabs, visible ASCII and
 * obs-text only. The worker checks every stored message with this before sending.
 */
export const headerSyntaxProblem = (name: string, value: unknown): string | undefined => {
  if (!TOKEN.test(name)) {
    return `${JSON.stringify(name.slice(0, 100))} is not a valid header name (an RFC 9110 token: letters, digits and !#$%&'*+-.^_\`|~)`
  }
  if (typeof value !== "string") return `the value of header ${name} is not a string`
  const bad = BAD_VALUE_CHAR.exec(value)
  if (bad !== null) {
    return `the value of header ${name} contains ${
      describeChar(value, bad.index)
    }: a header value may hold tabs, visible ASCII and Latin-1 characters only`
  }
  return undefined
}

/**
 * The publish rule for a header sent to a destination or callback (`Svc-Forward-<Name>`,
 * `Svc-Callback-Forward-<Name>`, forwarded incoming headers, a group's plain default headers):
 * {@link headerSyntaxProblem}, not a {@link RESERVED_HEADERS} name, at most
 * {@link MAX_HEADER_VALUE_LENGTH} characters.
 */
export const headerProblem = (name: string, value: string): string | undefined => {
  const syntax = headerSyntaxProblem(name, value)
  if (syntax !== undefined) return syntax
  if (RESERVED_HEADERS.has(name.toLowerCase())) return `header ${name} is set by the queue itself and cannot be forwarded`
  if (value.length > MAX_HEADER_VALUE_LENGTH) {
    return `the value of header ${name} is ${value.length} characters long, more than ${MAX_HEADER_VALUE_LENGTH}`
  }
  return undefined
}

/** Control characters and unpaired surrogates: never in a stored text (Postgres refuses NUL). */
const UNPRINTABLE = /[\p{Cc}\p{Cs}]/u

/** Headers never forwarded by `Svc-Header-Forward: true`: hop-by-hop, credentials of the queue, framing. */
export const NOT_FORWARDED: ReadonlySet<string> = new Set([
  ...HOP_BY_HOP,
  "host",
  "authorization",
  "content-length",
  "expect",
  "proxy-authorization",
  "x-request-id"
])

/**
 * A header name in lowercase, ASCII letters only: header names are ASCII tokens, and `toLowerCase`
 * folds some others into them (the Kelvin sign U+212A into `k`), so `X-\u212a` passed the token check
 * made on its lowercase form and was stored as a name the rules refuse.
 */
export const lowerHeaderName = (name: string): string => name.replace(/[A-Z]+/g, (letters) => letters.toLowerCase())

/**
 * Headers given as a JSON object (a batch element's, an RPC payload's, a URL group's defaults) with their names lowercase,
 * as node gives a request's. Two names that differ only in case (`Svc-Delay` and `svc-delay`) name
 * one header with two values: ambiguous (object order would pick the winner), so an issue naming both.
 */
export const lowercaseHeaders = <V>(
  headers: Readonly<Record<string, V>>
): { readonly headers: Record<string, V>; readonly issues: ReadonlyArray<RequestIssue> } => {
  const out: Record<string, V> = {}
  const given = new Map<string, string>()
  const issues: Array<RequestIssue> = []
  for (const [name, value] of Object.entries(headers)) {
    const lower = lowerHeaderName(name)
    const first = given.get(lower)
    if (first === undefined) {
      given.set(lower, name)
      out[lower] = value
    } else {
      issues.push({
        in: "header",
        parameter: first,
        problem: `is given twice, as ${JSON.stringify(first)} and ${JSON.stringify(name)}: header names are case-insensitive, give one`
      })
    }
  }
  return { headers: out, issues }
}

/** `Svc-Callback-Forward-X-Foo` from `svc-callback-forward-x-foo`, for messages. */
export const canonicalHeaderName = (name: string): string =>
  name.split("-").map((part) => part.charAt(0).toUpperCase() + part.slice(1)).join("-")

/**
 * Why a URL the queue would store (a destination, with the query it passes on, or a callback) is too
 * long: over {@link MAX_URL_LENGTH}, the bound of every other URL the queue takes (a batch element's
 * destination, the RPC's, an endpoint's, `filter.url`). The publish path and the callback headers took
 * any length the 16 KiB head allowed, and such a message could not be selected by its URL.
 */
export const urlLengthProblem = (url: string): string | undefined =>
  url.length > MAX_URL_LENGTH ? `is ${url.length} characters long, more than a URL may be here (${MAX_URL_LENGTH})` : undefined

/** The C0 controls and DEL (U+0000-U+001F, U+007F). */
const CONTROL = /[\u0000-\u001f\u007f]/

/** `must not contain control characters (found U+000A at position 3)` for the first one in `text`, or undefined. */
export const controlCharacterProblem = (text: string): string | undefined => {
  const control = CONTROL.exec(text)
  if (control === null) return undefined
  const code = `U+${control[0].charCodeAt(0).toString(16).toUpperCase().padStart(4, "0")}`
  return `must not contain control characters (found ${code} at position ${control.index + 1})`
}

/** A space-like character that is not a control character (a space, a no-break space, ...). */
const SPACE = /^[^\S\u0000-\u001f]$/

/**
 * `text` without the white space around it, control characters kept. Scanned from each end: as one
 * regular expression (`…+$`), a value of 16,000 spaces then a letter was read again from every space
 * (250 ms).
 */
const trimSpaces = (text: string): string => {
  let start = 0
  let end = text.length
  while (start < end && SPACE.test(text[start]!)) start++
  while (end > start && SPACE.test(text[end - 1]!)) end--
  return text.slice(start, end)
}

/**
 * An absolute http(s) URL (a destination, a callback, a group endpoint), or a problem: every URL a
 * message, schedule or group stores passes here. A control character anywhere is refused: the URL
 * parser (WHATWG) drops tab, LF and CR wherever they are and C0 controls at either end, so
 * `http://93.18\n4.216.34/c` was stored as `http://93.184.216.34/c`, a URL the caller never wrote.
 */
export const checkUrl = (text: string): { readonly url: string } | { readonly problem: string } => {
  const control = controlCharacterProblem(text)
  if (control !== undefined) return { problem: control }
  let parsed: URL
  try {
    parsed = new URL(text)
  } catch {
    return { problem: `expected an absolute http or https URL, got ${JSON.stringify(text.slice(0, 200))}` }
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    return { problem: `expected an http or https URL, got the scheme ${parsed.protocol.replace(/:$/, "")}` }
  }
  if (parsed.username !== "" || parsed.password !== "") return { problem: "credentials in the URL are not accepted" }
  // A fragment is never sent: `…/in#a` and `…/in` are one endpoint, which a group then held twice.
  if (parsed.href.includes("#")) return { problem: "a #fragment is never sent with a request: give the URL without it" }
  // Nothing listens on port 0 (connecting to it fails at once): every attempt would fail, then the DLQ.
  if (parsed.port === "0") return { problem: "port 0 is not a port to deliver to: give one from 1 to 65535, or none" }
  const url = parsed.toString()
  const tooLong = urlLengthProblem(url)
  return tooLong === undefined ? { url } : { problem: tooLong }
}

export interface PublishInput {
  /** Request headers, names lowercase (node's `IncomingMessage.headers`). */
  readonly headers: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>
  /** Query parameters that configure the queue: names starting with `svc-` (lowercase). */
  readonly query: ReadonlyArray<readonly [string, string]>
  /** A URL group's default headers. */
  readonly defaults?: DefaultHeaders | undefined
  /** The current time (unix ms), against which `Svc-Not-Before` is bounded by `QUEUE_MAX_DELAY`. */
  readonly now?: number | undefined
}

/** Parse the configuration of a publish; `issues` is non-empty when something is invalid. */
export const parsePublish = (
  input: PublishInput,
  settings: QueueSettings
): {
  readonly settings: PublishSettings
  readonly issues: ReadonlyArray<RequestIssue>
  /** The issue naming configuration value `key` (lowercase) where the caller wrote it. */
  readonly issueAt: (key: string, problem: string) => RequestIssue | undefined
} => {
  const issues: Array<RequestIssue> = []
  // Every configuration value by lowercase name; later sources override earlier ones.
  const config = new Map<string, Source>()
  const forwardDefaults: Record<string, string> = {}
  const issue = (source: Source, text: string): RequestIssue =>
    source.in === "default"
      ? { in: "body", parameter: `headers.${source.name}`, problem: text }
      : { in: source.in, parameter: source.name, problem: text }
  const problem = (source: Source, text: string) => issues.push(issue(source, text))
  for (const [rawName, raw] of Object.entries(input.defaults ?? {})) {
    const name = lowerHeaderName(rawName)
    const source: Source = { value: typeof raw === "string" ? raw : raw.join(", "), in: "default", name: rawName }
    // Stored defaults are headers, whatever they configure: never anything a header cannot hold.
    const syntax = headerSyntaxProblem(name, source.value)
    if (syntax !== undefined) problem(source, syntax)
    else if (name.startsWith("svc-")) config.set(name, source)
    else {
      const why = headerProblem(name, source.value)
      if (why === undefined) forwardDefaults[name] = source.value
      else problem(source, why)
    }
  }
  for (const [name, raw] of Object.entries(input.headers)) {
    if (raw === undefined || !name.startsWith("svc-")) continue
    const value = typeof raw === "string" ? raw : raw.join(", ")
    config.set(name, { value, in: "header", name: canonicalHeaderName(name) })
  }
  for (const [name, value] of input.query) config.set(lowerHeaderName(name), { value, in: "query", name })
  // The request's own names; a group's stored defaults were judged when set (`Operations.setTopicHeaders`).
  for (const [key, source] of config) {
    const unknown = source.in === "default" ? undefined : unknownSettingProblem(key, source.in)
    if (unknown !== undefined) problem(source, unknown)
  }

  /**
   * Whether a number or duration given as a query parameter has white space around it, refused then
   * (a problem pushed): `?svc-retries=+3` reached us as " 3" (a '+' is a space in a query string) and
   * was taken as 3, where a query number is digits alone (the rule of every other query of the queue,
   * `IntParam`). A header's own surrounding white space is not part of its value (RFC 9110 §5.5).
   */
  const spacedInQuery = (source: Source): boolean => {
    if (source.in !== "query" || source.value.trim() === source.value) return false
    problem(source, `must not have white space around it (a '+' in a query string is a space), got ${JSON.stringify(source.value.slice(0, 100))}`)
    return true
  }
  const integer = (key: string, fallback: number, max: number): number => {
    const source = config.get(key)
    if (source === undefined || spacedInQuery(source)) return fallback
    const value = source.value.trim()
    if (!/^\d+$/.test(value)) {
      problem(source, `expected a non-negative integer, got ${JSON.stringify(value.slice(0, 100))}`)
      return fallback
    }
    const n = Number(value)
    if (n > max) {
      problem(source, `is out of range: must be at most ${max}, got ${JSON.stringify(value.slice(0, 100))}`)
      return fallback
    }
    return n
  }
  const duration = (key: string, fallback: number, max: number, what: string): number => {
    const source = config.get(key)
    if (source === undefined || spacedInQuery(source)) return fallback
    const ms = parseDuration(source.value)
    if (ms === undefined) {
      problem(
        source,
        `expected a ${what} like "10s", "500ms", "5m", "1h" or a number of seconds, got ${
          JSON.stringify(source.value.slice(0, 100))
        }`
      )
      return fallback
    }
    if (ms > max) {
      problem(source, `must be at most ${Duration.format(Duration.millis(max))}`)
      return fallback
    }
    if (what === "timeout" && ms === 0) {
      problem(source, "must be longer than 0")
      return fallback
    }
    return ms
  }
  const method = (key: string, fallback: string): string => {
    const source = config.get(key)
    if (source === undefined) return fallback
    const value = source.value.trim().toUpperCase()
    if (!(METHODS as ReadonlyArray<string>).includes(value)) {
      problem(source, `expected one of ${METHODS.join(", ")}, got ${JSON.stringify(source.value.slice(0, 100))}`)
      return fallback
    }
    return value
  }
  const url = (key: string): string | undefined => {
    const source = config.get(key)
    if (source === undefined) return undefined
    // White space around the value goes, but not a control character (tab, LF, ...): checkUrl refuses those.
    const checked = checkUrl(trimSpaces(source.value))
    if ("problem" in checked) {
      problem(source, checked.problem)
      return undefined
    }
    return checked.url
  }
  const boolean = (key: string): boolean => {
    const source = config.get(key)
    if (source === undefined) return false
    const value = source.value.trim().toLowerCase()
    if (value !== "true" && value !== "false") {
      problem(source, `expected true or false, got ${JSON.stringify(source.value.slice(0, 100))}`)
      return false
    }
    return value === "true"
  }
  const forwarded = (prefix: string): Record<string, string> => {
    const out: Record<string, string> = {}
    for (const [key, source] of config) {
      if (!key.startsWith(prefix)) continue
      const name = key.slice(prefix.length)
      const why = name === ""
        ? "does not name a header to forward"
        : DELIVERY_HEADERS.has(name)
        ? `header ${name} is set by the queue itself and cannot be forwarded`
        : headerProblem(name, source.value)
      if (why !== undefined) problem(source, why)
      else out[name] = source.value
    }
    return out
  }

  const maxTimeout = Duration.toMillis(settings.maxTimeout)
  const maxDelay = Duration.toMillis(settings.maxDelay)
  const defaultTimeout = Duration.toMillis(settings.defaultTimeout)

  const callbackSettings = (prefix: "svc-callback" | "svc-failure-callback"): CallbackSettings | undefined => {
    const target = url(prefix)
    const headers = forwarded(`${prefix}-forward-`)
    const result: CallbackSettings = {
      url: target ?? "",
      method: method(`${prefix}-method`, "POST"),
      retries: integer(`${prefix}-retries`, settings.defaultRetries, settings.maxRetries),
      timeoutMs: duration(`${prefix}-timeout`, defaultTimeout, maxTimeout, "timeout"),
      delayMs: duration(`${prefix}-delay`, 0, maxDelay, "delay"),
      headers: { ...headers, "content-type": "application/json" }
    }
    return target === undefined ? undefined : result
  }
  // Callback settings first: the plain `svc-forward-` prefix must not swallow the callback families.
  const callback = callbackSettings("svc-callback")
  const failureCallback = callbackSettings("svc-failure-callback")

  const headers: Record<string, string> = { ...forwardDefaults }
  // Headers of the request itself (node's parser admits only valid ones; an RPC payload anything).
  const incoming = (name: string, raw: string | ReadonlyArray<string>) => {
    const value = typeof raw === "string" ? raw : raw.join(", ")
    const why = headerProblem(name, value)
    if (why === undefined) headers[name] = value
    else problem({ value, in: "header", name: canonicalHeaderName(name) }, why)
  }
  if (boolean("svc-header-forward")) {
    const hopByHop = connectionOptions(input.headers["connection"])
    for (const [name, raw] of Object.entries(input.headers)) {
      if (raw === undefined || name.startsWith("svc-") || NOT_FORWARDED.has(name) || hopByHop.has(name) || name === "content-type") continue
      incoming(name, raw)
    }
  }
  const contentType = input.headers["content-type"]
  if (contentType !== undefined) incoming("content-type", contentType)
  Object.assign(headers, forwarded("svc-forward-"))

  const dedupSource = config.get("svc-deduplication-id")
  let deduplicationId: string | undefined
  if (dedupSource !== undefined) {
    const value = dedupSource.value.trim()
    if (value.length === 0 || value.length > 200) problem(dedupSource, "must be 1 to 200 characters")
    else if (UNPRINTABLE.test(value)) problem(dedupSource, "must not contain control characters")
    else deduplicationId = value
  }

  const notBeforeSource = config.get("svc-not-before")
  let notBefore: number | undefined
  if (notBeforeSource !== undefined && !spacedInQuery(notBeforeSource)) {
    const value = notBeforeSource.value.trim()
    const now = input.now ?? Date.now()
    if (!/^\d+$/.test(value)) {
      problem(notBeforeSource, `expected a unix time in seconds such as ${Math.floor(now / 1000) + 60}, got ${JSON.stringify(value.slice(0, 100))}`)
    } else if (Number(value) * 1000 > now + maxDelay) {
      // However many digits (Number() of 400 of them is Infinity): a time, too far in the future.
      problem(notBeforeSource, `is too far in the future: more than ${Duration.format(Duration.millis(maxDelay))} (QUEUE_MAX_DELAY) from now`)
    } else notBefore = Number(value) * 1000
  }

  const retryDelaySource = config.get("svc-retry-delay")
  let retryDelay: string | undefined
  if (retryDelaySource !== undefined) {
    const parsedDelay = parseRetryDelay(retryDelaySource.value)
    const undefinedAt = "problem" in parsedDelay ? undefined : notANumberAt(parsedDelay.expression, settings.maxRetries)
    if ("problem" in parsedDelay) {
      problem(retryDelaySource, `${JSON.stringify(retryDelaySource.value.slice(0, 100))} is not a retry-delay expression: ${parsedDelay.problem}`)
    } else if (undefinedAt !== undefined) {
      problem(
        retryDelaySource,
        `${JSON.stringify(retryDelaySource.value.slice(0, 100))} is not a number when retried is ${undefinedAt} (a 0/0, or pow of a negative number to a fraction): give one that is`
      )
    } else retryDelay = retryDelaySource.value.trim()
  }

  const flowKeySource = config.get("svc-flow-control-key")
  const flowValueSource = config.get("svc-flow-control-value")
  let flowControl: FlowControlSettings | undefined
  if (flowKeySource !== undefined || flowValueSource !== undefined) {
    const key = flowKeySource?.value.trim()
    if (flowKeySource === undefined) {
      problem(flowValueSource!, "is given without Svc-Flow-Control-Key")
    } else if (!FLOW_KEY.test(key!)) {
      problem(flowKeySource, `expected 1 to 100 letters, digits, '.', '_', '-' or ':', got ${JSON.stringify(key!.slice(0, 100))}`)
    }
    if (flowKeySource !== undefined && flowValueSource === undefined) {
      problem(flowKeySource, "needs Svc-Flow-Control-Value with parallelism=<n> and/or rate=<n>")
    }
    const limits = flowValueSource === undefined ? undefined : parseFlowControlValue(flowValueSource.value)
    if (limits !== undefined && "problems" in limits) problem(flowValueSource!, limits.problems.join("; "))
    else if (limits !== undefined && flowKeySource !== undefined && FLOW_KEY.test(key!)) {
      flowControl = { key: key!, ...limits }
    }
  }

  return {
    issues,
    issueAt: (key, text) => {
      const source = config.get(key)
      return source === undefined ? undefined : issue(source, text)
    },
    settings: {
      delivery: {
        method: method("svc-method", "POST"),
        timeoutMs: duration("svc-timeout", defaultTimeout, maxTimeout, "timeout"),
        retries: integer("svc-retries", settings.defaultRetries, settings.maxRetries),
        delayMs: duration("svc-delay", 0, maxDelay, "delay"),
        ...(notBefore === undefined ? {} : { notBefore }),
        ...(retryDelay === undefined ? {} : { retryDelay }),
        headers
      },
      callback,
      failureCallback,
      deduplicationId,
      contentBasedDeduplication: boolean("svc-content-based-deduplication"),
      flowControl
    }
  }
}
