/**
 * The upload client's public option and result types, apart from the code so every phase of the upload
 * (begin, parts, complete, resume) can name them without importing the module that composes the phases.
 *
 * @module
 */
export interface UploadProgress {
  /** bytes stored or in flight */
  readonly loaded: number
  readonly total: number
  /** 0-100, two decimals */
  readonly percentage: number
}

/** Where multipart uploads are remembered for resuming (the `Storage` interface: localStorage fits). */
export interface ResumeStore {
  getItem(key: string): string | null
  setItem(key: string, value: string): void
  removeItem(key: string): void
}

/** The part of `XMLHttpRequest` the client uses (tests script it). */
export interface XhrLike {
  open(method: string, url: string): void
  setRequestHeader(name: string, value: string): void
  getResponseHeader(name: string): string | null
  send(body: Blob): void
  abort(): void
  readonly status: number
  readonly responseText: string
  readonly upload: { onprogress: ((event: { readonly loaded: number }) => void) | null }
  onload: (() => void) | null
  onerror: (() => void) | null
  ontimeout: (() => void) | null
  onabort: (() => void) | null
}

export interface UploadOptions {
  /** the upload route's URL (`/api/upload/avatar`) */
  readonly route: string
  /** the route's name when one URL serves several (sent as the body's `route`) */
  readonly routeName?: string | undefined
  /** where to store it (the route may change it); default: the file's name */
  readonly pathname?: string | undefined
  /** default: the file's type, else application/octet-stream */
  readonly contentType?: string | undefined
  /** handed to the route's onBeforeUpload */
  readonly clientPayload?: string | undefined
  /** extra headers of the route calls (an authorization header, a CSRF token) */
  readonly headers?: Readonly<Record<string, string>> | undefined
  /** aborting it cancels the upload: the promise rejects with an AbortError */
  readonly signal?: AbortSignal | undefined
  readonly onProgress?: ((progress: UploadProgress) => void) | undefined
  /** retries of each request after the first attempt (default 3) */
  readonly retries?: number | undefined
  /** backoff in milliseconds: first delay (default 250), largest delay before jitter (default 4000) */
  readonly retryDelay?: { readonly base?: number | undefined; readonly cap?: number | undefined } | undefined
  /** part PUTs in flight at once (default 4) */
  readonly concurrency?: number | undefined
  /** where multipart uploads are remembered for resuming; default localStorage when present; false: off */
  readonly resume?: ResumeStore | false | undefined
  /** a URL younger than this (ms, default 60 s) is "fresh": a 403 on it is signature_mismatch, not expiry */
  readonly freshFor?: number | undefined
  /**
   * a PUT with no progress and no answer for this long (ms, default 60 s), or a route call not fully answered
   * (headers and body) this long, is given up and retried: a dead connection (or a stalled store) must not hang the upload forever
   */
  readonly stallTimeout?: number | undefined
  /** default: globalThis.fetch */
  readonly fetch?: typeof fetch | undefined
  /** default: globalThis.XMLHttpRequest */
  readonly XMLHttpRequest?: (new() => XhrLike) | undefined
}

/** The stored object, as the route reported it after completing. */
export interface UploadResult {
  readonly path: string
  readonly size: number
  readonly contentType: string
  readonly etag: string
}

/** A file, or any Blob with a name. */
export type UploadFile = Blob & { readonly name?: string; readonly lastModified?: number }
