/**
 * Whether a service's base URL and bearer token can be sent at all, checked before any call: fetch's own
 * refusals quoted them (`Headers.append: "Bearer tok\nX: 1" is an invalid header value`, a URL's password
 * twice). The problem names the setting, never its value. Imports nothing: the queue's Promise client,
 * which loads nothing of effect, applies it as the CLI does.
 */
export const serviceTargetProblem = (target: {
  readonly url: unknown
  /** How the caller names the URL: `QUEUE_URL`, `baseUrl`. */
  readonly urlName: string
  readonly token: unknown
  readonly tokenName: string
}): string | undefined => {
  let url: URL
  try {
    url = new URL(String(target.url))
  } catch {
    return `${target.urlName} must be an http(s) URL`
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return `${target.urlName} must be an http(s) URL, not ${url.protocol}`
  if (url.username !== "" || url.password !== "") {
    return `${target.urlName} must not hold a user or password (the token goes in ${target.tokenName})`
  }
  // each call adds its own path and query: one in the setting was dropped without a word
  if (url.search !== "" || url.hash !== "") return `${target.urlName} must not hold a query (?) or fragment (#)`
  if (typeof target.token !== "string" || !/^[\x21-\x7e]+$/.test(target.token)) {
    return `${target.tokenName} holds a space, a line break or another character an HTTP header cannot carry`
  }
  return undefined
}
