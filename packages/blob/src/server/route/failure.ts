/**
 * Failure resolution, in the spec's order: `onError` first (a Response it returns is the answer, a
 * BlobError is answered as JSON); else a thrown BlobError as itself; else an application error with a
 * `status` (or `statusCode`) from 400 to 599 by the status table (other statuses: `request_failed` keeping
 * the status); anything else is rethrown unchanged (an application bug).
 *
 * @module
 */
import { BlobError, type BlobErrorCode } from "../../shared/BlobError.ts"
import type { UploadRouteOptions } from "./types.ts"

const STATUS_CODES: Readonly<Record<number, BlobErrorCode>> = {
  401: "unauthorized",
  403: "forbidden",
  404: "not_found",
  409: "conflict",
  411: "length_required",
  413: "too_large",
  429: "rate_limited"
}

/** The error's JSON at its own status (with Retry-After when retryAfter is set). */
export const errorResponse = (error: BlobError): Response =>
  new Response(JSON.stringify(error.toJSON()), {
    status: error.status,
    headers: {
      "content-type": "application/json",
      "cache-control": "no-store",
      ...(error.retryAfter === undefined ? {} : { "retry-after": String(Math.ceil(error.retryAfter)) })
    }
  })

const statusOf = (error: unknown): number | undefined => {
  if (typeof error !== "object" || error === null) return undefined
  const e = error as { status?: unknown; statusCode?: unknown }
  const status = typeof e.status === "number" ? e.status : typeof e.statusCode === "number" ? e.statusCode : undefined
  return status !== undefined && Number.isInteger(status) ? status : undefined
}

/** Steps 2-4 of the resolution order: BlobError as itself, a status mapped by the table, else undefined. */
export const toBlobError = (error: unknown): BlobError | undefined => {
  if (BlobError.is(error)) return error
  const status = statusOf(error)
  if (status === undefined || status < 400 || status > 599) return undefined
  const code = STATUS_CODES[status] ?? "request_failed"
  const message = error instanceof Error && error.message.trim() !== "" ? error.message : undefined
  return new BlobError(code, {
    message,
    ...(code === "request_failed" ? { status } : {}),
    cause: error
  })
}

export const resolveFailure = async (
  error: unknown,
  route: UploadRouteOptions | undefined,
  args: { readonly request: Request; readonly route: string }
): Promise<Response> => {
  if (route?.onError !== undefined) {
    const answer = await route.onError(error, args)
    if (answer instanceof Response) return answer
    if (BlobError.is(answer)) return errorResponse(answer)
  }
  const blobError = toBlobError(error)
  if (blobError !== undefined) return errorResponse(blobError)
  throw error
}
