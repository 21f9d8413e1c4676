/**
 * A publish's options as the `Svc-*` headers that carry them: the one mapping the effect client
 * (`Client.ts`) and the Promise client (`promise/QueueClient.ts`, also for each element of a batch)
 * share. No effect here, so the Promise entrypoint stays free of it.
 */

/** Delivery settings of a callback, as the `Svc-Callback-*` / `Svc-Failure-Callback-*` headers. */
export interface CallbackOptions {
  readonly url: string
  readonly method?: string | undefined
  readonly retries?: number | undefined
  /** `"10s"`, `"500ms"`, ... */
  readonly timeout?: string | undefined
  readonly delay?: string | undefined
  /** Sent to the callback endpoint (`Svc-Callback-Forward-<Name>`). */
  readonly forward?: Readonly<Record<string, string>> | undefined
}

export interface PublishOptions {
  /** A full URL or a URL group name. */
  readonly destination: string
  readonly body?: string | Uint8Array | undefined
  readonly contentType?: string | undefined
  readonly method?: string | undefined
  readonly retries?: number | undefined
  /** `Svc-Delay`: `"500ms"`, `"10s"`, `"1h30m"`, ... */
  readonly delay?: string | undefined
  /** `Svc-Not-Before`: no attempt before this time (a `Date`, or Unix seconds); the later of it and `delay` wins. */
  readonly notBefore?: Date | number | undefined
  readonly timeout?: string | undefined
  readonly deduplicationId?: string | undefined
  /** `Svc-Content-Based-Deduplication: true`: a repeat of the same destination, body and delivery headers within the window is not enqueued again. */
  readonly contentBasedDeduplication?: boolean | undefined
  /** `Svc-Retry-Delay`: the wait before retry `retried`, in ms, as an expression (`"pow(2, retried) * 1000"`). */
  readonly retryDelay?: string | undefined
  /** Headers for the destination (`Svc-Forward-<Name>`). */
  readonly forward?: Readonly<Record<string, string>> | undefined
  readonly callback?: CallbackOptions | undefined
  readonly failureCallback?: CallbackOptions | undefined
  /** `Svc-Flow-Control-Key` / `-Value`: limits shared by every message of `key` (at least one limit). */
  readonly flowControl?: {
    readonly key: string
    readonly parallelism?: number | undefined
    readonly rate?: number | undefined
    /** `"1s"` (default), `"10s"`, `"1m"`, ... */
    readonly period?: string | undefined
  } | undefined
  /** Any further raw headers (e.g. `Svc-Header-Forward`); they win over the options above, whatever the case of their names. */
  readonly headers?: Readonly<Record<string, string>> | undefined
}

/** The `Svc-*` headers (and `content-type`) of a publish. */
export const publishHeaders = (options: Omit<PublishOptions, "destination" | "body">): Record<string, string> => {
  const headers: Record<string, string> = {}
  if (options.contentType !== undefined) headers["content-type"] = options.contentType
  if (options.method !== undefined) headers["Svc-Method"] = options.method
  if (options.retries !== undefined) headers["Svc-Retries"] = String(options.retries)
  if (options.delay !== undefined) headers["Svc-Delay"] = options.delay
  if (options.notBefore !== undefined) {
    const seconds = options.notBefore instanceof Date ? options.notBefore.getTime() / 1000 : options.notBefore
    headers["Svc-Not-Before"] = String(Math.floor(seconds))
  }
  if (options.timeout !== undefined) headers["Svc-Timeout"] = options.timeout
  if (options.deduplicationId !== undefined) headers["Svc-Deduplication-Id"] = options.deduplicationId
  if (options.contentBasedDeduplication !== undefined) {
    headers["Svc-Content-Based-Deduplication"] = String(options.contentBasedDeduplication)
  }
  if (options.retryDelay !== undefined) headers["Svc-Retry-Delay"] = options.retryDelay
  for (const [name, value] of Object.entries(options.forward ?? {})) headers[`Svc-Forward-${name}`] = value
  for (const [prefix, callback] of [["Svc-Callback", options.callback], ["Svc-Failure-Callback", options.failureCallback]] as const) {
    if (callback === undefined) continue
    headers[prefix] = callback.url
    if (callback.method !== undefined) headers[`${prefix}-Method`] = callback.method
    if (callback.retries !== undefined) headers[`${prefix}-Retries`] = String(callback.retries)
    if (callback.timeout !== undefined) headers[`${prefix}-Timeout`] = callback.timeout
    if (callback.delay !== undefined) headers[`${prefix}-Delay`] = callback.delay
    for (const [name, value] of Object.entries(callback.forward ?? {})) headers[`${prefix}-Forward-${name}`] = value
  }
  if (options.flowControl !== undefined) {
    const { key, parallelism, rate, period } = options.flowControl
    headers["Svc-Flow-Control-Key"] = key
    headers["Svc-Flow-Control-Value"] = [
      parallelism === undefined ? undefined : `parallelism=${parallelism}`,
      rate === undefined ? undefined : `rate=${rate}`,
      period === undefined ? undefined : `period=${period}`
    ].filter((part) => part !== undefined).join(", ")
  }
  return withHeaders(headers, options.headers)
}

/**
 * `headers` with `extra` over them: an extra header replaces one of the same name in any case
 * (`svc-retries` over `Svc-Retries`), so no name is sent twice (the queue refuses a batch element's
 * headers naming one header in two cases, and two HTTP header lines would join into "1, 2").
 */
const withHeaders = (
  headers: Readonly<Record<string, string>>,
  extra: Readonly<Record<string, string>> | undefined
): Record<string, string> => {
  const out: Record<string, string> = { ...headers }
  for (const [name, value] of Object.entries(extra ?? {})) {
    for (const key of Object.keys(out)) if (key.toLowerCase() === name.toLowerCase()) delete out[key]
    out[name] = value
  }
  return out
}

/**
 * Why `value` cannot be one path segment of a request to the queue (a destination, an id, a name),
 * or undefined when it can. "", "." and ".." would be dropped or resolved as a path step by any URL
 * parser, sending the request, with its token, to another route (`.../v2/publish/..` is `/v2/`).
 */
export const segmentProblem = (value: unknown): string | undefined =>
  typeof value !== "string"
    ? `expected a string, got ${value === null ? "null" : typeof value}`
    : value === "" || value === "." || value === ".."
    ? `${JSON.stringify(value)} is not a name or URL: a URL parser would drop it or resolve it as a path step`
    : !value.isWellFormed()
    ? "holds a lone surrogate, which has no UTF-8 encoding"
    : undefined

/**
 * One path segment (check it with {@link segmentProblem} first), percent-encoded whole: a destination
 * URL's `/`, `?`, `#` and `..` stay inside the segment, where no URL parser resolves them, and the
 * queue decodes once a destination not written out as `http(s)://…` (`http.ts`, `destinationIn`).
 */
export const pathSegment = (value: string): string => encodeURIComponent(value)
