/**
 * Input limits (DESIGN.md §3 "Input limits"): the building blocks every request schema of the suite
 * is made of, so that whatever a client sends is either decoded into something the server can use
 * (and the database can store and compare) or refused with a 400 `invalid_request` naming the
 * parameter — never a 500 from deep inside a handler.
 *
 * What goes wrong without them, each found by a sweep of bad inputs:
 * - a NUL character (`%00`): Postgres text cannot hold one, the statement fails
 *   (`invalid byte sequence for encoding "UTF8": 0x00`);
 * - an integer beyond the column's type (`responseStatus=99999999999` against an `int4`);
 * - an unbounded string: a 10 KB word in a tsquery (Postgres refuses words over 2,047 bytes), and
 *   in general work (and log lines) proportional to whatever was sent.
 *
 * ```ts
 * query: {
 *   make: Schema.optional(NameParam),                    // no NUL, at most 200 characters
 *   regions: Schema.optional(ListParam()),               // "a,b,c": at most 50 items of 200 characters
 *   minYear: Schema.optional(BoundedInt({ minimum: 0, maximum: 9999 })),
 *   url: Schema.optional(UrlParam)
 * }
 * ```
 *
 * The lengths and why (also in the package README):
 * - {@link MAX_NAME_LENGTH} 200: a name or a single filter value (make, region, library name, group
 *   name, source id). The longest such value stored anywhere is 100 characters (offers' make, model
 *   and region); twice that leaves room for spacing a filter collapses, and nothing longer can match.
 * - {@link MAX_ID_LENGTH} 300: an id in a path. Offer ids are `<source id (≤ 63)>:<native id (≤ 200)>`.
 * - {@link MAX_SEARCH_TEXT_LENGTH} 500: free text typed into a search box (listings `query`); only its
 *   first 16 words are searched.
 * - {@link MAX_QUESTION_LENGTH} 2,000: a question an agent asks (docs `query`); only its first 32
 *   distinct words are searched, so a longer one would only cost work.
 * - {@link MAX_URL_LENGTH} 2,048: a URL, the de-facto limit of browsers and CDNs.
 * - {@link MAX_LIST_ITEMS} 50 items of {@link MAX_NAME_LENGTH}: comma-separated lists (`fuelTypes`,
 *   `sources`): more values than any vocabulary of the suite has.
 * - integers: within the field's real range when it has one (a year, an HTTP status), else within
 *   Postgres `int4` ({@link INT4_MIN} to {@link INT4_MAX}), the type of every integer column compared.
 */
import { Schema, SchemaTransformation } from "effect"

/** A name or a single filter value. */
/**
 * The strictness of a request the suite decodes: every problem reported (not the first), the value
 * received kept for the message, and a key the schema does not have refused rather than ignored (a
 * misspelt field or filter must not be a request without it). The queue's HTTP bodies and queries and
 * every RPC payload of the suite decode with it.
 */
export const STRICT_REQUEST = { errors: "all", reportInput: true, onExcessProperty: "error" } as const

export const MAX_NAME_LENGTH = 200
/** An id taken from a path or a payload. */
export const MAX_ID_LENGTH = 300
/** Free text typed into a search box. */
export const MAX_SEARCH_TEXT_LENGTH = 500
/** A question in natural language (docs). */
export const MAX_QUESTION_LENGTH = 2000
/** A URL. */
export const MAX_URL_LENGTH = 2048
/** Items of a comma-separated list parameter. */
export const MAX_LIST_ITEMS = 50
/** Postgres `int4`. */
export const INT4_MIN = -2_147_483_648
export const INT4_MAX = 2_147_483_647

/** No NUL character (U+0000): Postgres text cannot hold one. */
export const isNulFree = Schema.makeFilter<string>(
  (text) => !text.includes("\u0000") || "must not contain a NUL character (%00, \\u0000)",
  { expected: "a string without NUL characters" }
)

/** Not white space alone: a required text of spaces says nothing (a name of "   " matched every library). */
const isNotBlank = Schema.makeFilter<string>(
  (text) => text.trim() !== "" || "must not be blank (white space only)",
  { expected: "a string with a character other than white space" }
)

/**
 * A string a client sends: no NUL, at most `maxLength` characters (UTF-16 code units), at least
 * `minLength` (default 0; from 1, white space alone is refused too). The length is checked first and
 * aborts, so a huge value costs one issue.
 */
export const RequestString = (options: { readonly maxLength: number; readonly minLength?: number | undefined }) => {
  const checks = [
    Schema.isMaxLength(options.maxLength, {
      message: `must be at most ${options.maxLength} characters long`
    }).abort(),
    isNulFree
  ] as const
  return options.minLength === undefined || options.minLength <= 0
    ? Schema.String.check(...checks)
    : Schema.String.check(
      ...checks,
      Schema.isMinLength(options.minLength, {
        message: options.minLength === 1 ? "must not be empty" : `must be at least ${options.minLength} characters long`
      }).abort(),
      isNotBlank
    )
}

/** A name or a single filter value: no NUL, at most {@link MAX_NAME_LENGTH} characters. */
export const NameParam = RequestString({ maxLength: MAX_NAME_LENGTH })
/** An id (path or payload): no NUL, at most {@link MAX_ID_LENGTH} characters. */
export const IdParam = RequestString({ maxLength: MAX_ID_LENGTH })
/** Free text of a search box: no NUL, at most {@link MAX_SEARCH_TEXT_LENGTH} characters. */
export const SearchTextParam = RequestString({ maxLength: MAX_SEARCH_TEXT_LENGTH })
/** A question in natural language: no NUL, at most {@link MAX_QUESTION_LENGTH} characters. */
export const QuestionParam = RequestString({ maxLength: MAX_QUESTION_LENGTH })
/** A URL (its syntax is the handler's to check): no NUL, at most {@link MAX_URL_LENGTH} characters. */
export const UrlParam = RequestString({ maxLength: MAX_URL_LENGTH })

/**
 * A comma-separated list (`?regions=a,b,c`), kept as the string the handler splits: no NUL, at most
 * `maxItems` non-blank items (default {@link MAX_LIST_ITEMS}) of at most `maxItemLength` characters
 * each (default {@link MAX_NAME_LENGTH}).
 */
export const ListParam = (options?: { readonly maxItems?: number; readonly maxItemLength?: number }) => {
  const maxItems = options?.maxItems ?? MAX_LIST_ITEMS
  const maxItemLength = options?.maxItemLength ?? MAX_NAME_LENGTH
  // Every item at its longest, a comma each: anything longer has too many or too long items.
  const maxLength = maxItems * (maxItemLength + 1)
  return Schema.String.check(
    Schema.isMaxLength(maxLength, {
      message: `must be at most ${maxLength} characters long (${maxItems} items of ${maxItemLength} characters)`
    }).abort(),
    isNulFree,
    Schema.makeFilter<string>((text) => {
      const items = text.split(",").map((item) => item.trim()).filter((item) => item !== "")
      if (items.length > maxItems) return `must list at most ${maxItems} comma-separated items, got ${items.length}`
      const long = items.findIndex((item) => item.length > maxItemLength)
      return long === -1 || `each item must be at most ${maxItemLength} characters long (item ${long + 1} is not)`
    }, { expected: `a list of at most ${maxItems} comma-separated items` })
  )
}

/**
 * An integer from `minimum` to `maximum` (both within {@link INT4_MIN}..{@link INT4_MAX} unless the field
 * needs more). The range is checked first: `99999999999999999999` is beyond 2^53, where an integer check
 * alone (safe integers) calls it "not an integer"; the caller sent an integer too large.
 */
export const BoundedInt = (options: {
  readonly minimum: number
  readonly maximum: number
  /** The range the message tells, where a handler narrows it ("0 to 200"); default `minimum to maximum`. */
  readonly told?: string
}) =>
  Schema.Number.check(
    Schema.isBetween({ minimum: options.minimum, maximum: options.maximum }, {
      message: `is out of range: must be an integer from ${options.told ?? `${options.minimum} to ${options.maximum}`}`
    }).abort(),
    Schema.isInt()
  )

/** Any integer Postgres `int4` holds. */
export const Int4 = BoundedInt({ minimum: INT4_MIN, maximum: INT4_MAX })

/** A finite number from `minimum` to `maximum`. */
export const BoundedNumber = (options: { readonly minimum: number; readonly maximum: number }) =>
  Schema.Finite.check(
    Schema.isBetween(options, { message: `must be a number from ${options.minimum} to ${options.maximum}` })
  )

/**
 * The syntax of an integer in a URL (a query parameter): decimal digits, a leading `-` only where the
 * range has negatives. JavaScript's number parsing, which effect's query decoding uses, also took
 * `1e1`, `10.0`, `+5` (and the empty string as 0): a client's typo or a generated value answered as
 * if it were another number.
 */
const PLAIN_UNSIGNED = /^[0-9]+$/
const PLAIN_SIGNED = /^-?[0-9]+$/
/** The syntax of a non-negative decimal number in a URL: digits, and a fraction after a `.` with digits on both sides. */
const PLAIN_DECIMAL = /^[0-9]+(?:\.[0-9]+)?$/

/**
 * The syntax check: `rule` and the value sent (its first 50 characters) when it fails, aborting (a
 * value of another syntax has no range to check); `syntax` is the parameter's `pattern` in OpenAPI.
 */
const plainSyntax = (syntax: RegExp, rule: string, expected: string) =>
  Schema.makeFilter<string>((text) => syntax.test(text) || `${rule}, got ${JSON.stringify(text.slice(0, 50))}`, {
    expected,
    toJsonSchema: () => ({ pattern: syntax.source })
  }).abort()

/** Text to number: `Number` of a string the syntax above let through; `-0` is 0. */
const plainNumber = SchemaTransformation.transform<number, string>({
  decode: (text) => Number(text) + 0,
  encode: (n) => String(n)
})

/**
 * An integer query parameter from `minimum` to `maximum` ({@link BoundedInt} once decoded): only
 * decimal digits, with a leading `-` where `minimum` is negative; `1e1`, ` 10`, `0x10`, `10.0`, `+5`
 * and the empty value are refused naming the parameter and the value. The one rule for every numeric
 * query parameter of the suite's APIs (a JSON payload uses {@link BoundedInt}: JSON has its own number syntax).
 */
export const IntParam = (options: Parameters<typeof BoundedInt>[0]) => {
  const signed = options.minimum < 0
  const syntax = signed ? PLAIN_SIGNED : PLAIN_UNSIGNED
  const range = options.told ?? `${options.minimum} to ${options.maximum}`
  const rule = signed
    ? `must be an integer from ${range} in decimal digits, with a leading '-' if negative (no '+', spaces, exponent, fraction or hex)`
    : `must be a whole number from ${range} in decimal digits only (no sign, spaces, exponent, fraction or hex)`
  return Schema.String.check(plainSyntax(syntax, rule, signed ? "an integer in decimal digits" : "a whole number in decimal digits"))
    .pipe(Schema.decodeTo(BoundedInt(options), plainNumber))
}

/**
 * A non-negative number query parameter from `minimum` to `maximum` ({@link BoundedNumber} once decoded):
 * decimal digits with an optional fraction (`12500`, `12500.50`); an exponent, a sign, spaces, hex or a
 * lone `.` are refused as {@link IntParam} refuses them.
 */
export const DecimalParam = (options: { readonly minimum: number; readonly maximum: number }) =>
  Schema.String.check(plainSyntax(
    PLAIN_DECIMAL,
    `must be a number from ${options.minimum} to ${options.maximum} in decimal digits, with an optional fraction after a '.' (no sign, spaces, exponent or hex)`,
    "a number in decimal digits"
  )).pipe(Schema.decodeTo(BoundedNumber(options), plainNumber))

/** An array (payloads) of at most `maxItems` elements. */
export const BoundedArray = <S extends Schema.Top>(item: S, maxItems: number) =>
  Schema.Array(item).check(Schema.isMaxLength(maxItems, { message: `must hold at most ${maxItems} items` }).abort())
