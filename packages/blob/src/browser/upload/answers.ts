/**
 * The shape checks of the route's answers (`src/shared/protocol.ts`), one per answer kind. The route is
 * the application's own code, but a wrongly shaped answer (a proxy's `{}`, a handler returning the wrong
 * thing) must not become a TypeError deep in a phase, a fake success, or worse a PUT of the file's bytes
 * to a URL that is not storage's (`undefined` is a relative URL: the page's own origin). Each check
 * covers exactly the fields the client reads, and says which one is wrong, so the message points at the
 * route's bug. Hand-written rather than a Schema: the browser bundle stays small.
 *
 * @module
 */
import type { BeginUploadResponse, CompleteUploadResponse, ResumeUploadResponse } from "../../shared/protocol.ts"

/** A route answer's kind, its type, and what is wrong with a value claiming to be one (undefined: valid). */
export interface AnswerCheck<A> {
  readonly kind: string
  readonly problem: (answer: unknown) => string | undefined
  /** never called: carries `A` for `callRoute` */
  readonly _A?: (a: A) => A
}

type Fields = Record<string, unknown>

const isObject = (value: unknown): value is Fields => typeof value === "object" && value !== null && !Array.isArray(value)

const shown = (value: unknown) => value === undefined ? "it is missing" : `got ${JSON.stringify(value) ?? typeof value}`

const nonEmptyString = (value: unknown) => typeof value === "string" && value !== ""
const count = (value: unknown, min: number) => typeof value === "number" && Number.isInteger(value) && value >= min

/** The first problem of `fields` by their rules: `[name, valid, expected]`. */
const firstProblem = (at: string, object: Fields, rules: ReadonlyArray<readonly [string, (value: unknown) => boolean, string]>) => {
  for (const [name, valid, expected] of rules) {
    if (!valid(object[name])) return `${at}${name} must be ${expected} (${shown(object[name])})`
  }
  return undefined
}

/** The problem of each element of an array field, named by its index. */
const eachProblem = (at: string, value: unknown, problem: (element: unknown, at: string) => string | undefined) => {
  if (!Array.isArray(value)) return `${at} must be an array (${shown(value)})`
  for (const [i, element] of value.entries()) {
    const found = problem(element, `${at}[${i}].`)
    if (found !== undefined) return found
  }
  return undefined
}

const objectProblem = (value: unknown, at: string) => isObject(value) ? undefined : `${at === "" ? "the answer" : at} must be a JSON object (${shown(value)})`

const stringRecord = (value: unknown) => isObject(value) && Object.values(value).every((v) => typeof v === "string")

const presignedPart = (value: unknown, at: string) =>
  objectProblem(value, at.slice(0, -1)) ?? firstProblem(at, value as Fields, [
    ["partNumber", (v) => count(v, 1), "an integer >= 1"],
    ["url", nonEmptyString, "a non-empty string"],
    ["size", (v) => count(v, 0), "an integer >= 0"]
  ])

const landedPart = (value: unknown, at: string) =>
  objectProblem(value, at.slice(0, -1)) ?? firstProblem(at, value as Fields, [
    ["partNumber", (v) => count(v, 1), "an integer >= 1"],
    ["etag", nonEmptyString, "a non-empty string"],
    ["size", (v) => count(v, 0), "an integer >= 0"]
  ])

/**
 * A plan (begin, resume): the token and expiry, then either `multipart` (part size and signed parts; a
 * resume may add the landed ones) or a single PUT's `url` and its signed `headers`. `need` narrows it
 * where only one kind can be used (a renewal of the single PUT's URL, or of part URLs).
 */
const planProblem = (need: "single" | "multipart" | "either") => (answer: unknown): string | undefined => {
  const notObject = objectProblem(answer, "")
  if (notObject !== undefined) return notObject
  const fields = answer as Fields
  const common = firstProblem("", fields, [
    ["completionToken", nonEmptyString, "a non-empty string"],
    ["expiresAt", Number.isFinite, "a number (epoch ms)"]
  ])
  if (common !== undefined) return common
  const multipart = need === "multipart" || (need === "either" && fields["multipart"] !== undefined)
  if (!multipart) {
    return firstProblem("", fields, [
      ["url", nonEmptyString, "a non-empty string (the signed PUT URL)"],
      ["headers", stringRecord, "an object of string headers"]
    ])
  }
  const plan = fields["multipart"]
  return objectProblem(plan, "multipart") ??
    firstProblem("multipart.", plan as Fields, [["partSize", (v) => count(v, 1), "an integer >= 1"]]) ??
    eachProblem("multipart.parts", (plan as Fields)["parts"], presignedPart) ??
    ((plan as Fields)["landed"] === undefined ? undefined : eachProblem("multipart.landed", (plan as Fields)["landed"], landedPart))
}

/** What `planProblem("either")` lets through: a multipart plan, or a single PUT with its URL. */
type Plan<R extends { readonly url?: string; readonly multipart?: unknown }> =
  & R
  & ({ readonly url: string; readonly multipart?: undefined } | { readonly multipart: NonNullable<R["multipart"]> })

export type BeginAnswer = Plan<BeginUploadResponse>
export const beginAnswer: AnswerCheck<BeginAnswer> = { kind: "begin", problem: planProblem("either") }

/** A remembered upload resumed: either kind (a single one is refused by the caller, knowingly). */
export const resumeAnswer: AnswerCheck<ResumeUploadResponse> = { kind: "resume", problem: planProblem("either") }

/** A single PUT's URL renewed: it must carry the new URL. */
export type RenewedUrl = ResumeUploadResponse & { readonly url: string }
export const renewedUrlAnswer: AnswerCheck<RenewedUrl> = { kind: "resume", problem: planProblem("single") }

/** Part URLs renewed: they must come as a multipart plan. */
export type RenewedParts = ResumeUploadResponse & { readonly multipart: NonNullable<ResumeUploadResponse["multipart"]> }
export const renewedPartsAnswer: AnswerCheck<RenewedParts> = { kind: "resume", problem: planProblem("multipart") }

export const completeAnswer: AnswerCheck<CompleteUploadResponse> = {
  kind: "complete",
  problem: (answer) =>
    objectProblem(answer, "") ?? firstProblem("", answer as Fields, [
      ["path", nonEmptyString, "a non-empty string"],
      ["size", (v) => count(v, 0), "an integer >= 0"],
      ["contentType", nonEmptyString, "a non-empty string"],
      ["etag", (v) => typeof v === "string", "a string"]
    ])
}
