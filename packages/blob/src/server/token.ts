/**
 * `SVC_BLOB_TOKEN`: one connection string naming the store, the bucket and a long-lived key.
 *
 * ```
 * s3+http://ACCESS_KEY:SECRET_KEY@127.0.0.1:7480/my-bucket?region=us-east-1&role=arn:aws:iam:::role/uploads
 * s3://ACCESS_KEY:SECRET_KEY@s3.eu-west-1.amazonaws.com/my-bucket?region=eu-west-1&role=arn:aws:iam::123:role/x
 * ```
 *
 * - scheme: `s3` or `s3+https` (TLS), `s3+http` (plain HTTP, local stores);
 * - userinfo: the access key id and secret key, percent-encoded (`/` -> `%2F`, `+` -> `%2B`);
 * - host[:port]: the S3 endpoint; path: `/<bucket>` (exactly one segment);
 * - query (all optional):
 *   - `region` (default `us-east-1`);
 *   - `role`: a role ARN. When present, the client mints short-lived credentials with STS `AssumeRole` and
 *     never sends the long-lived key to S3; without it, the key signs S3 requests directly;
 *   - `sts`: the STS endpoint URL (default: the S3 endpoint itself, as on Ceph RGW and MinIO; use
 *     `https://sts.<region>.amazonaws.com` on AWS);
 *   - `duration`: session length in seconds (900-43200, default 3600);
 *   - `session`: the role session name prefix (default `svc-blob`);
 *   - `pathStyle`: `true` (default) or `false` for virtual-hosted addressing;
 *   - `access`: `readwrite` (default) or `readonly` (writes and upload URLs answer `forbidden`).
 *
 * A token that does not parse throws TypeError naming where it came from (`options.token`,
 * `SVC_BLOB_TOKEN`, another setting that holds one); its message never repeats the token.
 *
 * @module
 */
import { Redacted } from "effect"

export interface BlobToken {
  /** `http(s)://host[:port]` */
  readonly endpoint: string
  readonly bucket: string
  readonly region: string
  readonly accessKeyId: string
  readonly secretAccessKey: Redacted.Redacted<string>
  readonly role: string | undefined
  readonly stsEndpoint: string
  readonly durationSeconds: number
  readonly sessionName: string
  readonly forcePathStyle: boolean
  readonly readOnly: boolean
  /** a stable, non-secret key for caches (a hash of the whole token) */
  readonly cacheKey: string
}

const BUCKET = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/

/** A non-cryptographic but stable digest for cache keys (FNV-1a, 2 x 32 bit); never reversible to the secret. */
const digest = (text: string): string => {
  let h1 = 0x811c9dc5
  let h2 = 0x01000193 ^ text.length
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    h1 = Math.imul(h1 ^ c, 0x01000193) >>> 0
    h2 = Math.imul(h2 ^ c, 0x5bd1e995) >>> 0
  }
  return h1.toString(16).padStart(8, "0") + h2.toString(16).padStart(8, "0")
}

/**
 * Parses a bucket token (see the module comment). Throws TypeError when it is missing or malformed, naming
 * `source`: where the token came from, as its user wrote it (`options.token`, `SVC_BLOB_TOKEN`, ...).
 */
export const parseBlobToken = (token: string | Redacted.Redacted<string> | undefined, source: string): BlobToken => {
  const fail = (reason: string): never => {
    throw new TypeError(`${source} is not a valid bucket token: ${reason}`)
  }
  const raw = token === undefined ? undefined : Redacted.isRedacted(token) ? Redacted.value(token) : token
  if (raw === undefined || raw.trim() === "") {
    throw new TypeError(`${source} is not set: pass a bucket token (s3+http://KEY:SECRET@host:port/bucket?...)`)
  }
  let url: URL
  try {
    url = new URL(raw.trim())
  } catch {
    return fail("not a URL (expected s3://KEY:SECRET@host/bucket?region=...)")
  }
  const scheme = url.protocol.replace(/:$/, "")
  const protocol = scheme === "s3" || scheme === "s3+https" ? "https" : scheme === "s3+http" ? "http" : undefined
  if (protocol === undefined) return fail(`scheme must be s3, s3+https or s3+http (got ${scheme})`)
  if (url.hostname === "") return fail("no host")
  let accessKeyId: string
  let secretAccessKey: string
  try {
    accessKeyId = decodeURIComponent(url.username)
    secretAccessKey = decodeURIComponent(url.password)
  } catch {
    return fail("the key is not percent-encoded correctly")
  }
  if (accessKeyId === "" || secretAccessKey === "") return fail("no access key and secret key before the host (KEY:SECRET@)")
  const segments = url.pathname.split("/").filter((s) => s !== "")
  if (segments.length !== 1) return fail("the path must be exactly /<bucket>")
  const bucket = decodeURIComponent(segments[0] ?? "")
  if (!BUCKET.test(bucket)) return fail(`${JSON.stringify(bucket)} is not a valid bucket name`)
  const q = url.searchParams
  const known = new Set(["region", "role", "sts", "duration", "session", "pathStyle", "access"])
  for (const key of q.keys()) if (!known.has(key)) fail(`unknown parameter ${JSON.stringify(key)}`)
  const endpoint = `${protocol}://${url.host}`
  const region = q.get("region") ?? "us-east-1"
  if (!/^[a-z0-9-]+$/.test(region)) fail("region must be letters, digits and dashes")
  const role = q.get("role") ?? undefined
  if (role !== undefined && !role.startsWith("arn:")) fail("role must be an ARN (arn:aws:iam::ACCOUNT:role/NAME)")
  const sts = q.get("sts") ?? endpoint
  const stsProtocol = URL.parse(sts)?.protocol
  if (stsProtocol !== "http:" && stsProtocol !== "https:") fail("sts must be an http(s) URL")
  const durationText = q.get("duration") ?? "3600"
  const durationSeconds = Number(durationText)
  if (!Number.isInteger(durationSeconds) || durationSeconds < 900 || durationSeconds > 43200) {
    fail("duration must be whole seconds from 900 to 43200")
  }
  const sessionName = q.get("session") ?? "svc-blob"
  if (!/^[\w+=,.@-]{2,48}$/.test(sessionName)) fail("session must be 2-48 characters of [A-Za-z0-9_+=,.@-]")
  const pathStyle = q.get("pathStyle") ?? "true"
  if (pathStyle !== "true" && pathStyle !== "false") fail("pathStyle must be true or false")
  const access = q.get("access") ?? "readwrite"
  if (access !== "readwrite" && access !== "readonly") fail("access must be readwrite or readonly")
  return {
    endpoint,
    bucket,
    region,
    accessKeyId,
    secretAccessKey: Redacted.make(secretAccessKey),
    role,
    stsEndpoint: sts.replace(/\/+$/, ""),
    durationSeconds,
    sessionName,
    forcePathStyle: pathStyle === "true",
    readOnly: access === "readonly",
    cacheKey: digest(raw.trim())
  }
}

/** Builds a token string (tests, tooling). Percent-encodes the key. */
export const formatBlobToken = (parts: {
  readonly endpoint: string
  readonly bucket: string
  readonly accessKeyId: string
  readonly secretAccessKey: string
  readonly region?: string | undefined
  readonly role?: string | undefined
  readonly sts?: string | undefined
  readonly duration?: number | undefined
  readonly access?: "readwrite" | "readonly" | undefined
}): string => {
  const endpoint = new URL(parts.endpoint)
  const scheme = endpoint.protocol === "http:" ? "s3+http" : "s3"
  const q = new URLSearchParams()
  if (parts.region !== undefined) q.set("region", parts.region)
  if (parts.role !== undefined) q.set("role", parts.role)
  if (parts.sts !== undefined) q.set("sts", parts.sts)
  if (parts.duration !== undefined) q.set("duration", String(parts.duration))
  if (parts.access !== undefined) q.set("access", parts.access)
  const query = q.toString()
  return `${scheme}://${encodeURIComponent(parts.accessKeyId)}:${encodeURIComponent(parts.secretAccessKey)}@${endpoint.host}/${parts.bucket}${query === "" ? "" : `?${query}`}`
}
