/**
 * `IntParam` and `DecimalParam`: the numbers of a query string as a URL writes them, decoded as the
 * HTTP API decodes a query (`toCodecStringTree`). JavaScript's number parsing (what a `BoundedInt`
 * query went through) took `1e1`, `10.0` and `+5`.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Result, Schema } from "effect"
import { DecimalParam, INT4_MAX, INT4_MIN, IntParam } from "../../src/Limits.ts"

const decoder = <S extends Schema.Top>(schema: S) => {
  const decode = Schema.decodeUnknownResult(Schema.toCodecStringTree(Schema.Struct({ n: schema })) as any)
  return (text: string): Result.Result<number, string> =>
    Result.mapBoth(decode({ n: text }) as Result.Result<{ readonly n: number }, Schema.SchemaError>, {
      onSuccess: (decoded) => decoded.n,
      onFailure: (error) => String(error)
    })
}

describe("IntParam", () => {
  it.effect("takes decimal digits only, leading zeros included", () =>
    Effect.sync(() => {
      const decode = decoder(IntParam({ minimum: 1, maximum: 1000 }))
      assert.deepStrictEqual(decode("10"), Result.succeed(10))
      assert.deepStrictEqual(decode("010"), Result.succeed(10))
      assert.deepStrictEqual(decode("1000"), Result.succeed(1000))
      for (const text of ["1e1", " 10", "10 ", "0x10", "10.0", "+5", "-5", "", "1_0", "Infinity", "NaN", "0b1", ".5", "５"]) {
        const refused = decode(text)
        assert.isTrue(Result.isFailure(refused), JSON.stringify(text))
        const message: string = (refused as any).failure
        assert.include(message, "must be a whole number from 1 to 1000 in decimal digits only", text)
        assert.include(message, `got ${JSON.stringify(text)}`, text)
      }
    }))

  it.effect("the range after the syntax: too large (beyond 2^53 too) is out of range, not 'not an integer'", () =>
    Effect.sync(() => {
      const decode = decoder(IntParam({ minimum: 1, maximum: 100 }))
      for (const text of ["0", "101", "99999999999999999999999", "9".repeat(400)]) {
        const refused = decode(text)
        assert.isTrue(Result.isFailure(refused), text)
        assert.include((refused as any).failure, "is out of range: must be an integer from 1 to 100", text)
      }
    }))

  it.effect("a leading '-' only where the range has negatives; -0 is 0", () =>
    Effect.sync(() => {
      const decode = decoder(IntParam({ minimum: INT4_MIN, maximum: INT4_MAX, told: "0 to 200" }))
      assert.deepStrictEqual(decode("-5"), Result.succeed(-5))
      const zero = decode("-0")
      assert.isTrue(Result.isSuccess(zero) && Object.is((zero as any).success, 0))
      for (const text of ["+5", "--5", "-", "- 5", "-1e1", "-5.0"]) {
        const refused = decode(text)
        assert.isTrue(Result.isFailure(refused), text)
        assert.include((refused as any).failure, "must be an integer from 0 to 200 in decimal digits, with a leading '-' if negative", text)
      }
    }))

  it.effect("encodes to the digits (a client built from the API sends them)", () =>
    Effect.sync(() => {
      const schema = Schema.toCodecStringTree(Schema.Struct({ n: IntParam({ minimum: 0, maximum: 10 }) }))
      assert.deepStrictEqual(Schema.encodeSync(schema)({ n: 7 }), { n: "7" })
    }))
})

describe("DecimalParam", () => {
  it.effect("takes digits with an optional fraction; no exponent, sign, space, hex or lone '.'", () =>
    Effect.sync(() => {
      const decode = decoder(DecimalParam({ minimum: 0, maximum: 1e10 }))
      assert.deepStrictEqual(decode("12500"), Result.succeed(12500))
      assert.deepStrictEqual(decode("12500.50"), Result.succeed(12500.5))
      assert.deepStrictEqual(decode("0.5"), Result.succeed(0.5))
      for (const text of ["1e4", " 1", "0x10", "+5", "-1", "", ".5", "5.", "1,5", "Infinity"]) {
        const refused = decode(text)
        assert.isTrue(Result.isFailure(refused), JSON.stringify(text))
        assert.include((refused as any).failure, "must be a number from 0 to 10000000000 in decimal digits", text)
        assert.include((refused as any).failure, `got ${JSON.stringify(text)}`, text)
      }
      assert.include((decode("10000000001") as any).failure, "must be a number from 0 to 10000000000")
    }))
})
