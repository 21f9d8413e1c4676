/**
 * The bucket's options as JavaScript without types passes them (`null`, a number for a string, a
 * string for a list), refused as `invalid_input` naming the option before anything is sent: they
 * were a `TypeError` from deep inside (`contentType.split is not a function`), or a request storage
 * answered 400 and the client retried as an outage. The shapes are `@svc/platform/Arguments`'; the
 * signed URLs' values are checked here too, for every layer (a NaN or 1.5 `expiresIn` was signed
 * as it was, and every fetch of the URL refused).
 *
 * @module
 */
import { shapeProblem, type Shapes } from "@svc/platform/Arguments"
import { Effect } from "effect"
import { BlobError } from "../../shared/BlobError.ts"
import { declaredTypeRefusal } from "../../shared/contentTypes.ts"

const PUT: Shapes = {
  contentType: "string",
  allowOverwrite: "boolean",
  ifUnchanged: "string",
  contentTypes: "string list",
  sniff: "boolean",
  metadata: "strings",
  cacheControl: "string"
}
const SIGNED_UPLOAD: Shapes = { contentType: "string!", size: "number!", expiresIn: "number", allowOverwrite: "boolean", partSize: "number" }

/** The shapes of each Promise verb's options: the position of its options argument, and their shapes. */
const OPTIONS: Readonly<Record<string, { readonly at: number; readonly shapes: Shapes; readonly required?: true }>> = {
  put: { at: 2, shapes: PUT },
  list: { at: 0, shapes: { prefix: "string", cursor: "string", limit: "number", mode: "string" } },
  copy: { at: 2, shapes: { allowOverwrite: "boolean", contentType: "string" } },
  move: { at: 2, shapes: { allowOverwrite: "boolean", contentType: "string" } },
  updateJson: { at: 2, shapes: { maxAttempts: "number" } },
  signedReadUrl: { at: 1, shapes: { expiresIn: "number" } },
  signedUploadUrl: { at: 1, shapes: SIGNED_UPLOAD, required: true },
  signedMultipartUpload: { at: 1, shapes: SIGNED_UPLOAD, required: true },
  completeMultipartUpload: { at: 3, shapes: { allowOverwrite: "boolean" } },
  signedUploadParts: { at: 3, shapes: { expiresIn: "number" } },
  configureCors: { at: 0, shapes: { origins: "string list", maxAgeSeconds: "number" } }
}

/** Arguments that are not options: the update function, the part lists. */
const otherProblem = (verb: string, args: ReadonlyArray<unknown>): string | undefined => {
  if (verb === "updateJson" && typeof args[1] !== "function") return "update: expected a function"
  if ((verb === "completeMultipartUpload" || verb === "signedUploadParts") && !Array.isArray(args[2])) return "parts: expected an array"
  return undefined
}

/** Why the arguments of `verb` are not what it takes, or undefined. */
export const argumentsProblem = (verb: string, args: ReadonlyArray<unknown>): string | undefined => {
  const options = OPTIONS[verb]
  const given = options === undefined ? undefined : args[options.at]
  return otherProblem(verb, args) ??
    (options === undefined || (given === undefined && options.required !== true)
      ? undefined
      : shapeProblem(given, options.shapes, "options"))
}

const refusal = (message: string) => new BlobError("invalid_input", { message })

/** A URL's lifetime: a whole number of seconds from 1, when given. */
export const checkExpiresIn = (expiresIn: unknown): Effect.Effect<void, BlobError> =>
  expiresIn === undefined || (Number.isSafeInteger(expiresIn) && (expiresIn as number) >= 1)
    ? Effect.void
    : Effect.fail(refusal(`Invalid expiresIn: a whole number of seconds from 1, got ${String(expiresIn)}`))

/** What a signed upload signs: a file's type and its size in bytes (a whole number from 1), and its lifetime. */
export const checkSignedUpload = (options: { readonly contentType: unknown; readonly size: unknown; readonly expiresIn?: unknown }) =>
  Effect.gen(function*() {
    if (typeof options?.contentType !== "string") return yield* refusal("Invalid contentType: the file's type is required (type/subtype)")
    const notAType = declaredTypeRefusal(options.contentType)
    if (notAType !== undefined) return yield* notAType
    if (!Number.isSafeInteger(options.size) || (options.size as number) < 1) {
      return yield* refusal(`Invalid size: the file's size in bytes is required, a whole number from 1, got ${String(options.size)}`)
    }
    yield* checkExpiresIn(options.expiresIn)
  })

/**
 * What a copy may do, for every layer: a new content type is a file's type (a copy stored "nope" as
 * one, which put refuses), and a path copied onto itself must change its type (S3 refuses such a copy
 * as illegal; it was a 400 from storage, "Storage answered 400 InvalidRequest").
 */
export const checkCopy = (from: string, to: string, options: { readonly contentType?: string | undefined }) => {
  if (options.contentType !== undefined) {
    const notAType = declaredTypeRefusal(options.contentType)
    if (notAType !== undefined) return Effect.fail(notAType)
  }
  return from === to && options.contentType === undefined
    ? Effect.fail(refusal(`Copying ${JSON.stringify(from)} onto itself changes nothing: give contentType to change its type`))
    : Effect.void
}
