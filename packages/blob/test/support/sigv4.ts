/**
 * A minimal AWS SigV4 signer for form-encoded POST calls (the IAM API on radosgw), used by tests to
 * create the role that `AssumeRole` assumes. Test support only: the package itself signs through the SDK.
 */
import { createHash, createHmac } from "node:crypto"

const sha256 = (data: string) => createHash("sha256").update(data).digest("hex")
const hmac = (key: Buffer | string, data: string) => createHmac("sha256", key).update(data).digest()

export interface SigV4Credentials {
  readonly accessKeyId: string
  readonly secretAccessKey: string
  readonly sessionToken?: string | undefined
}

/** POSTs `params` form-encoded to `endpoint` signed for `service`; returns status and body text. */
export const signedFormPost = async (options: {
  readonly endpoint: string
  readonly region: string
  readonly service: string
  readonly credentials: SigV4Credentials
  readonly params: Record<string, string>
}): Promise<{ readonly status: number; readonly body: string }> => {
  const url = new URL(options.endpoint)
  const body = new URLSearchParams(options.params).toString()
  const now = new Date()
  const amzDate = now.toISOString().replace(/[:-]|\.\d{3}/g, "")
  const day = amzDate.slice(0, 8)
  const headers: Record<string, string> = {
    "content-type": "application/x-www-form-urlencoded; charset=utf-8",
    host: url.host,
    "x-amz-content-sha256": sha256(body),
    "x-amz-date": amzDate
  }
  if (options.credentials.sessionToken !== undefined) headers["x-amz-security-token"] = options.credentials.sessionToken
  const names = Object.keys(headers).sort()
  const canonical = [
    "POST",
    url.pathname || "/",
    "",
    names.map((n) => `${n}:${headers[n]}\n`).join(""),
    names.join(";"),
    sha256(body)
  ].join("\n")
  const scope = `${day}/${options.region}/${options.service}/aws4_request`
  const toSign = ["AWS4-HMAC-SHA256", amzDate, scope, sha256(canonical)].join("\n")
  let key = hmac(`AWS4${options.credentials.secretAccessKey}`, day)
  for (const part of [options.region, options.service, "aws4_request"]) key = hmac(key, part)
  const signature = createHmac("sha256", key).update(toSign).digest("hex")
  const authorization =
    `AWS4-HMAC-SHA256 Credential=${options.credentials.accessKeyId}/${scope}, SignedHeaders=${names.join(";")}, Signature=${signature}`
  const response = await fetch(url, { method: "POST", headers: { ...headers, authorization }, body })
  return { status: response.status, body: await response.text() }
}
