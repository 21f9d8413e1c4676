/**
 * Test support for the browser client: a scripted XMLHttpRequest (storage) and a scripted upload route
 * (fetch). Each PUT asks `storage(request)` what happens: a status (with an ETag), no answer after some
 * bytes, or hanging until aborted.
 */
import type { XhrLike } from "../../src/browser/upload.ts"

export interface PutRequest {
  readonly url: string
  readonly headers: Readonly<Record<string, string>>
  readonly size: number
  /** the bytes sent (a fake store keeps them) */
  readonly body: Blob
  /** 1-based count of PUTs to this URL's part (ignoring the query) */
  readonly attempt: number
}

export type PutScript =
  | { readonly status: number; readonly etag?: string; readonly body?: string }
  /** the connection drops after `sent` bytes (0: blocked before sending, like a CORS refusal) */
  | { readonly drop: true; readonly sent: number }
  /** never answers (until aborted) */
  | { readonly hang: true }

export interface ScriptedStorage {
  readonly Xhr: new() => XhrLike
  readonly puts: Array<PutRequest>
  readonly aborted: Array<string>
  inFlight: number
  maxInFlight: number
}

const withoutQuery = (url: string) => url.split("?")[0]!

export const scriptedStorage = (storage: (request: PutRequest) => PutScript): ScriptedStorage => {
  const state: ScriptedStorage = { Xhr: undefined as never, puts: [], aborted: [], inFlight: 0, maxInFlight: 0 }
  const attempts = new Map<string, number>()
  class Xhr implements XhrLike {
    status = 0
    responseText = ""
    upload: XhrLike["upload"] = { onprogress: null }
    onload: (() => void) | null = null
    onerror: (() => void) | null = null
    ontimeout: (() => void) | null = null
    onabort: (() => void) | null = null
    private url = ""
    private headers: Record<string, string> = {}
    private responseHeaders: Record<string, string> = {}
    private done = false
    open(method: string, url: string) {
      if (method !== "PUT") throw new Error(`unexpected ${method}`)
      this.url = url
    }
    setRequestHeader(name: string, value: string) {
      this.headers[name.toLowerCase()] = value
    }
    getResponseHeader(name: string) {
      return this.responseHeaders[name.toLowerCase()] ?? null
    }
    send(body: Blob) {
      const key = withoutQuery(this.url)
      const attempt = (attempts.get(key) ?? 0) + 1
      attempts.set(key, attempt)
      const request: PutRequest = { url: this.url, headers: { ...this.headers }, size: body.size, body, attempt }
      state.puts.push(request)
      state.inFlight++
      state.maxInFlight = Math.max(state.maxInFlight, state.inFlight)
      const script = storage(request)
      if ("hang" in script) {
        setTimeout(() => this.upload.onprogress?.({ loaded: Math.floor(body.size / 2) }), 1)
        return
      }
      setTimeout(() => {
        if (this.done) return
        if ("drop" in script) {
          if (script.sent > 0) this.upload.onprogress?.({ loaded: script.sent })
          this.finish(0, () => this.onerror?.())
          return
        }
        this.upload.onprogress?.({ loaded: Math.floor(body.size / 2) })
        this.upload.onprogress?.({ loaded: body.size })
        this.responseText = script.body ?? ""
        if (script.etag !== undefined) this.responseHeaders["etag"] = script.etag
        this.finish(script.status, () => this.onload?.())
      }, 1)
    }
    abort() {
      if (this.done) return
      state.aborted.push(this.url)
      this.finish(0, () => this.onabort?.())
    }
    private finish(status: number, callback: () => void) {
      this.done = true
      state.inFlight--
      this.status = status
      callback()
    }
  }
  ;(state as { Xhr: unknown }).Xhr = Xhr
  return state
}

export interface RouteCall {
  readonly body: Record<string, any>
}

/**
 * A scripted upload route. `answer(body)` returns the JSON (status 200), or a Response.
 * Calls are recorded in `calls`.
 */
export const scriptedRoute = (answer: (body: Record<string, any>, index: number) => unknown) => {
  const calls: Array<Record<string, any>> = []
  const fetch = (async (_url: string | URL | Request, init?: RequestInit) => {
    const body = JSON.parse(String(init?.body)) as Record<string, any>
    calls.push(body)
    const result = await answer(body, calls.length - 1)
    return result instanceof Response ? result : Response.json(result)
  }) as typeof globalThis.fetch
  return { fetch, calls }
}

/** A Map-backed ResumeStore (what localStorage offers). */
export const memoryStore = () => {
  const map = new Map<string, string>()
  return {
    map,
    getItem: (key: string) => map.get(key) ?? null,
    setItem: (key: string, value: string) => void map.set(key, value),
    removeItem: (key: string) => void map.delete(key)
  }
}

export const MiB = 1024 * 1024

/** A file of `size` bytes (content irrelevant to the scripted storage). */
export const fileOf = (size: number, name = "file.bin", type = "application/octet-stream") =>
  new File([new Uint8Array(size)], name, { type, lastModified: 1_700_000_000_000 })

/** A begin answer for a single PUT. */
export const singleBegin = (overrides: Record<string, unknown> = {}) => ({
  type: "begin",
  path: "uploads/file.bin",
  method: "PUT",
  url: "https://storage.test/bucket/uploads/file.bin?X-Amz-Signature=1",
  headers: { "content-type": "application/octet-stream", "if-none-match": "*" },
  expiresAt: Date.now() + 3_600_000,
  completionToken: "token-1",
  ...overrides
})

/** A begin answer for a multipart upload of `size` bytes in parts of `partSize`. */
export const multipartBegin = (size: number, partSize: number, signature = "1") => {
  const count = Math.ceil(size / partSize)
  return {
    type: "begin",
    path: "uploads/big.bin",
    method: "PUT",
    headers: {},
    expiresAt: Date.now() + 3_600_000,
    completionToken: "token-1",
    multipart: {
      uploadId: "up-1",
      partSize,
      parts: Array.from({ length: count }, (_, i) => ({
        partNumber: i + 1,
        url: `https://storage.test/bucket/uploads/big.bin/part${i + 1}?X-Amz-Signature=${signature}`,
        size: i + 1 < count ? partSize : size - partSize * (count - 1)
      }))
    }
  }
}

export const completed = (size: number, path = "uploads/file.bin") => ({
  type: "complete",
  path,
  size,
  contentType: "application/octet-stream",
  etag: "\"final\""
})
