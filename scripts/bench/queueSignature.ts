/**
 * The cost of `Svc-Signature` per delivery (issue 18): signing (what the worker does for every
 * attempt) and verifying (what a receiver does), by hand with node:crypto and through jose, in the
 * same run on the same bodies. As shipped (`packages/queue/src/Signing.ts`): signing by hand (the
 * worker's `sign`), verifying through jose (`verifySignature`); the other two are kept below for
 * this comparison only (jose's `SignJWT`, and the hand-written check the queue had before).
 *
 * `node scripts/bench/queueSignature.ts` (`npm run bench:queue-signature`); BENCH_SIGNATURES
 * (default 20,000) operations per figure, a body of BENCH_SIGNATURE_BODY bytes (default 1,024).
 * Each figure is measured one at a time (the cost of one delivery) and 100 at a time (the
 * worker's default concurrency: what a busy worker pays per delivery), after a warm-up.
 */
import { SignJWT } from "jose"
import * as Crypto from "node:crypto"
import { sign, verifySignature } from "@svc/queue"

const N = Number(process.env.BENCH_SIGNATURES ?? 20_000)
const BODY_BYTES = Number(process.env.BENCH_SIGNATURE_BODY ?? 1_024)
const CONCURRENCY = 100
const KEYS = ["sig_current_bench_key_0123456789abcdef", "sig_next_bench_key_0123456789abcdef"] as const
const URL = "https://example.com/orders"
const body = Crypto.randomBytes(BODY_BYTES)

// --- For the comparison only: jose's signing, and (below) the hand-written check of before. -----
const handSign = sign
const joseSign = async (key: string, request: { readonly url: string; readonly body: Uint8Array }): Promise<string> => {
  const iat = Math.floor(Date.now() / 1000)
  return new SignJWT({ body: Crypto.createHash("sha256").update(request.body).digest("base64url") })
    .setProtectedHeader({ alg: "HS256", typ: "JWT" })
    .setIssuer("Svc")
    .setSubject(request.url)
    .setIssuedAt(iat)
    .setNotBefore(iat)
    .setExpirationTime(iat + 300)
    .setJti(`jwt_${Crypto.randomUUID().replaceAll("-", "")}`)
    .sign(new TextEncoder().encode(key))
}
const equalText = (a: string, b: string) => {
  const left = Buffer.from(a)
  const right = Buffer.from(b)
  return left.length === right.length && Crypto.timingSafeEqual(left, right)
}
const handVerify = (keys: ReadonlyArray<string>, request: { readonly signature: string; readonly body: Uint8Array; readonly url: string }) => {
  const [header, payload, mac] = request.signature.split(".") as [string, string, string]
  if (JSON.parse(Buffer.from(header, "base64url").toString()).alg !== "HS256") return false
  const claims = JSON.parse(Buffer.from(payload, "base64url").toString())
  const unsigned = `${header}.${payload}`
  if (!keys.some((key) => equalText(Crypto.createHmac("sha256", key).update(unsigned).digest("base64url"), mac))) return false
  const now = Date.now() / 1000
  return claims.iss === "Svc" && now <= claims.exp + 5 && now >= claims.nbf - 5 && claims.sub === request.url &&
    equalText(Crypto.createHash("sha256").update(request.body).digest("base64url"), claims.body)
}
// ------------------------------------------------------------------------------------------------

/**
 * Microseconds per operation over `N` runs of `operation`, `concurrency` at a time: elapsed, and
 * the CPU time of the process (user + system, every thread: WebCrypto runs on libuv's pool).
 */
const measure = async (concurrency: number, operation: () => unknown): Promise<string> => {
  for (let i = 0; i < 1_000; i++) await operation() // warm-up (JIT, imported keys)
  const started = performance.now()
  const cpu = process.cpuUsage()
  let next = 0
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next++ < N) await operation()
  }))
  const { user, system } = process.cpuUsage(cpu)
  return `${(((performance.now() - started) * 1_000) / N).toFixed(1)} / ${((user + system) / N).toFixed(1)}`
}

const handSigned = handSign(KEYS[0], { url: URL, body })
const joseSigned = await joseSign(KEYS[0], { url: URL, body })
// Signed with the next key: the receiver tries the current key first, as after a rotation.
const joseSignedNext = await joseSign(KEYS[1], { url: URL, body })
const handSignedNext = handSign(KEYS[1], { url: URL, body })
if (!handVerify(KEYS, { signature: joseSigned, body, url: URL })) throw new Error("jose's signature fails the hand-written check")
if (!(await verifySignature(KEYS, { signature: handSigned, body, url: URL })).valid) throw new Error("the hand-written signature fails jose")

const rows: Array<[string, () => unknown, () => unknown]> = [
  ["sign", () => handSign(KEYS[0], { url: URL, body }), () => joseSign(KEYS[0], { url: URL, body })],
  [
    "verify (current key)",
    () => handVerify(KEYS, { signature: handSigned, body, url: URL }),
    () => verifySignature(KEYS, { signature: joseSigned, body, url: URL })
  ],
  [
    "verify (next key)",
    () => handVerify(KEYS, { signature: handSignedNext, body, url: URL }),
    () => verifySignature(KEYS, { signature: joseSignedNext, body, url: URL })
  ]
]

console.log(`Svc-Signature, ${N.toLocaleString("en")} operations per figure, ${BODY_BYTES.toLocaleString("en")}-byte body, node ${process.version}`)
console.log("| µs per operation, elapsed / CPU | hand-written, 1 at a time | jose, 1 at a time | hand-written, 100 at a time | jose, 100 at a time |")
console.log("| --- | --- | --- | --- | --- |")
for (const [name, hand, jose] of rows) {
  const figures = [await measure(1, hand), await measure(1, jose), await measure(CONCURRENCY, hand), await measure(CONCURRENCY, jose)]
  console.log(`| ${name} | ${figures.join(" | ")} |`)
}
