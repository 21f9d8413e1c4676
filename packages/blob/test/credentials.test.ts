/**
 * Credential minting. Two parts:
 * - against radosgw's real STS (AssumeRole on the test run's instance, with a role created through its
 *   IAM API): minting, caching per token, re-minting before expiry, a rejected role;
 * - against a scripted credential service + scripted S3 for what radosgw cannot be made to do on demand
 *   (its shortest session is 900 s): an expired-credential refusal mid-request (re-mint and retry once,
 *   a second refusal surfaces), throttling (waited out / mint_backoff), a rejected token never retried.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import { LocalObjectStorage } from "../../platform/src/LocalObjectStorage.ts"
import { makeFreshBucket, TestObjectStorage } from "../../platform/src/testing/objectStorage.ts"
import { Bucket } from "../src/server/Bucket.ts"
import { mintCount } from "../src/server/credentials.ts"
import { formatBlobToken } from "../src/server/token.ts"
import { BlobError } from "../src/shared/BlobError.ts"
import { scriptedServer, stsError, xmlError } from "./support/scripted.ts"
import { signedFormPost } from "./support/sigv4.ts"
import { tokenFor } from "./support/storage.ts"

const createRole = Effect.fn("createRole")(function*(name: string) {
  const storage = yield* LocalObjectStorage
  const credentials = { accessKeyId: storage.accessKeyId, secretAccessKey: Redacted.value(storage.secretAccessKey) }
  const call = (params: Record<string, string>) =>
    Effect.promise(() => signedFormPost({ endpoint: storage.endpoint, region: storage.region, service: "iam", credentials, params }))
  const created = yield* call({
    Action: "CreateRole",
    RoleName: name,
    Path: "/",
    AssumeRolePolicyDocument: JSON.stringify({
      Version: "2012-10-17",
      Statement: [{ Effect: "Allow", Principal: { AWS: ["arn:aws:iam:::user/svc-dev"] }, Action: ["sts:AssumeRole"] }]
    })
  })
  assert.strictEqual(created.status, 200, created.body)
  const policy = yield* call({
    Action: "PutRolePolicy",
    RoleName: name,
    PolicyName: "s3",
    PolicyDocument: JSON.stringify({ Version: "2012-10-17", Statement: [{ Effect: "Allow", Action: ["s3:*"], Resource: "arn:aws:s3:::*" }] })
  })
  assert.strictEqual(policy.status, 200, policy.body)
  return `arn:aws:iam:::role/${name}`
})

layer(TestObjectStorage, { excludeTestServices: true })("credentials (radosgw STS)", (it) => {
  it.effect("mints session credentials once per token and uses them for every verb", () =>
    Effect.gen(function*() {
      const role = yield* createRole(`svc-blob-${Date.now()}`)
      const name = yield* makeFreshBucket("sts")
      const token = yield* tokenFor(name, { role, duration: 900 })
      const one = yield* Bucket.make({ token })
      const two = yield* Bucket.make({ token })
      yield* Effect.forEach(Array.from({ length: 6 }, (_, i) => i), (i) => one.put(`f${i}.txt`, `v${i}`), { concurrency: 6 })
      assert.strictEqual(yield* two.getText("f3.txt"), "v3")
      assert.strictEqual(mintCount(token), 1)
      const url = yield* two.signedReadUrl("f1.txt")
      assert.include(url, "X-Amz-Security-Token=")
      assert.strictEqual(yield* Effect.promise(() => fetch(url).then((r) => r.text())), "v1")
    }))

  it.effect("re-mints before expiry", () =>
    Effect.gen(function*() {
      const role = yield* createRole(`svc-blob-r-${Date.now()}`)
      const name = yield* makeFreshBucket("remint")
      const token = yield* tokenFor(name, { role, duration: 900 })
      // sessions last 900 s; renewing 895 s ahead leaves each one ~5 s of use (4 s and more with the
      // expiry in whole seconds): room for two puts on a busy machine, where ~1 s was not
      const bucket = yield* Bucket.make({ token, refreshBeforeExpiry: "895 seconds" })
      yield* bucket.put("a.txt", "a")
      assert.strictEqual(mintCount(token), 1)
      yield* bucket.put("b.txt", "b")
      assert.strictEqual(mintCount(token), 1)
      yield* Effect.sleep("5500 millis")
      yield* bucket.put("c.txt", "c")
      assert.strictEqual(mintCount(token), 2)
      assert.strictEqual(yield* bucket.getText("c.txt"), "c")
    }))

  it.effect("a role the key may not assume is unauthorized", () =>
    Effect.gen(function*() {
      const name = yield* makeFreshBucket("norole")
      const bucket = yield* Bucket.make({ token: yield* tokenFor(name, { role: "arn:aws:iam:::role/does-not-exist" }) })
      const error = yield* Effect.flip(bucket.put("x.txt", "x"))
      assert.isTrue(BlobError.is(error, "unauthorized"))
      assert.strictEqual(error.message, "Storage rejected the bucket token")
    }))

  it.effect("a wrong secret key is refused (never retried)", () =>
    Effect.gen(function*() {
      const storage = yield* LocalObjectStorage
      const name = yield* makeFreshBucket("badkey")
      const bucket = yield* Bucket.make({
        token: formatBlobToken({ endpoint: storage.endpoint, bucket: name, accessKeyId: storage.accessKeyId, secretAccessKey: "wrong-secret", role: "arn:aws:iam:::role/x" })
      })
      const error = yield* Effect.flip(bucket.getText("x.txt"))
      assert.strictEqual(error.code, "unauthorized")
      assert.notInclude(error.message, "wrong-secret")
    }))

  it.effect("a long-lived key with a wrong secret or an unknown id is unauthorized on every call, not a signature mismatch", () =>
    Effect.gen(function*() {
      const storage = yield* LocalObjectStorage
      const name = yield* makeFreshBucket("badlong")
      for (const [accessKeyId, secretAccessKey] of [[storage.accessKeyId, "wrong-secret"], ["NOSUCHKEY0000000000", "whatever-secret"]]) {
        const bucket = yield* Bucket.make({
          token: formatBlobToken({ endpoint: storage.endpoint, bucket: name, accessKeyId: accessKeyId!, secretAccessKey: secretAccessKey! })
        })
        for (const call of [bucket.getText("x.txt"), bucket.put("x.txt", "x"), bucket.list()] as ReadonlyArray<Effect.Effect<unknown, BlobError>>) {
          const error = yield* Effect.flip(call)
          assert.strictEqual(error.code, "unauthorized", `${accessKeyId}: ${error.message}`)
          assert.strictEqual(error.message, "Storage rejected the bucket token")
          assert.notInclude(error.message, secretAccessKey!)
        }
      }
    }))
})

const assumeRoleResponse = (n: number) => {
  const expiration = new Date(Date.now() + 3600_000).toISOString()
  return `<AssumeRoleResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><AssumeRoleResult><Credentials>` +
    `<AccessKeyId>ASIASCRIPTED${n}</AccessKeyId><SecretAccessKey>secret-${n}</SecretAccessKey>` +
    `<SessionToken>session-token-${n}</SessionToken><Expiration>${expiration}</Expiration></Credentials>` +
    `<AssumedRoleUser><Arn>arn:aws:sts:::assumed-role/r/s</Arn><AssumedRoleId>id</AssumedRoleId></AssumedRoleUser>` +
    `</AssumeRoleResult><ResponseMetadata><RequestId>r</RequestId></ResponseMetadata></AssumeRoleResponse>`
}

/** A scripted STS (answers per `sts`) and a scripted S3 that refuses session-token-1 as expired. */
const scripted = (options: {
  readonly sts?: (index: number) => { status: number; headers?: Record<string, string>; body: string }
  readonly expired?: (sessionToken: string | undefined) => boolean
}) =>
  Effect.gen(function*() {
    let mints = 0
    const sts = yield* scriptedServer((_, i) => {
      const answer = options.sts?.(i)
      if (answer !== undefined && answer.status !== 200) return answer
      mints++
      return { status: 200, headers: { "content-type": "text/xml" }, body: assumeRoleResponse(mints) }
    })
    const s3 = yield* scriptedServer((request) => {
      const sessionToken = request.headers["x-amz-security-token"] as string | undefined
      if (options.expired?.(sessionToken) ?? sessionToken === "session-token-1") {
        return { status: 403, body: xmlError("ExpiredToken", "The provided token has expired") }
      }
      return { status: 200, body: `hello with ${sessionToken}` }
    })
    const bucket = yield* Bucket.make({
      token: formatBlobToken({
        endpoint: s3.url,
        bucket: "scripted",
        accessKeyId: "LONGLIVED",
        secretAccessKey: "long-lived-secret",
        role: "arn:aws:iam::1:role/r",
        sts: sts.url
      }),
      retry: { times: 3, base: "5 millis" }
    })
    return { bucket, sts: sts.requests, s3: s3.requests, mints: () => mints }
  })

describe("credentials (scripted credential service)", () => {
  it.live("an expired credential mid-request is re-minted and the request retried once", () =>
    Effect.gen(function*() {
      const { bucket, sts, s3 } = yield* scripted({})
      const text = yield* bucket.getText("k")
      assert.strictEqual(text, "hello with session-token-2")
      assert.strictEqual(sts.length, 2)
      assert.strictEqual(s3.length, 2)
      assert.include(sts[0]?.body ?? "", "Action=AssumeRole")
      // the long-lived key signs STS only, never S3
      assert.notInclude(String(s3[0]?.headers.authorization), "LONGLIVED")
    }))

  it.live("a second refusal surfaces as unauthorized", () =>
    Effect.gen(function*() {
      const { bucket, sts, s3 } = yield* scripted({ expired: () => true })
      const error = yield* Effect.flip(bucket.getText("k"))
      assert.strictEqual(error.code, "unauthorized")
      assert.match(error.message, /^Storage refused the temporary credential/)
      assert.strictEqual(s3.length, 2)
      assert.strictEqual(sts.length, 2)
      assert.notInclude(error.message, "session-token")
    }))

  it.live("a credential-service backoff over 10 s is mint_backoff with retryAfter", () =>
    Effect.gen(function*() {
      const { bucket, sts, s3 } = yield* scripted({
        sts: () => ({ status: 400, headers: { "retry-after": "30" }, body: stsError("Throttling", "Rate exceeded") })
      })
      const error = yield* Effect.flip(bucket.getText("k"))
      assert.strictEqual(error.code, "mint_backoff")
      assert.strictEqual(error.status, 429)
      assert.strictEqual(error.retryAfter, 30)
      assert.strictEqual(sts.length, 1)
      assert.strictEqual(s3.length, 0)
    }))

  it.live("a short credential-service backoff is waited out", () =>
    Effect.gen(function*() {
      const { bucket, sts } = yield* scripted({
        sts: (i) => i === 0 ? { status: 400, headers: { "retry-after": "1" }, body: stsError("Throttling") } : { status: 200, body: "" },
        expired: () => false
      })
      const start = Date.now()
      assert.strictEqual(yield* bucket.getText("k"), "hello with session-token-1")
      assert.isAtLeast(Date.now() - start, 950)
      assert.strictEqual(sts.length, 2)
    }))

  it.live("a rejected token is unauthorized and never retried", () =>
    Effect.gen(function*() {
      const { bucket, sts, s3 } = yield* scripted({
        sts: () => ({ status: 403, body: stsError("InvalidClientTokenId", "The security token included in the request is invalid") })
      })
      const error = yield* Effect.flip(bucket.getText("k"))
      assert.strictEqual(error.code, "unauthorized")
      assert.strictEqual(error.message, "Storage rejected the bucket token")
      assert.strictEqual(sts.length, 1)
      assert.strictEqual(s3.length, 0)
      // the next call asks again (no negative caching), and is refused again
      yield* Effect.flip(bucket.getText("k"))
      assert.strictEqual(sts.length, 2)
    }))

  it.live("concurrent first requests share one mint", () =>
    Effect.gen(function*() {
      const { bucket, sts } = yield* scripted({ expired: () => false })
      yield* Effect.forEach(Array.from({ length: 10 }, (_, i) => i), (i) => bucket.getText(`k${i}`), { concurrency: 10 })
      assert.strictEqual(sts.length, 1)
    }))
})
