/**
 * How an operator command's failure reads (`ServiceClient.describeFailure`), from real fetch failures
 * over a socket: a service that accepts and then sends nothing (no headers, or headers and no body)
 * is told apart from one that cannot be reached. fetch's own limit is 5 minutes; an undici agent with
 * a short one produces the same errors here.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { Agent, fetch as undiciFetch } from "undici"
import { describeFailure } from "../src/ServiceClient.ts"

/** A server that answers nothing, or only its headers, to every request; its URL and a close. */
const silentServer = async (mode: "nothing" | "headers") => {
  const server = Http.createServer((request, response) => {
    request.resume()
    if (mode === "headers") response.writeHead(200, { "content-type": "application/ndjson" }).flushHeaders()
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => {
      server.closeAllConnections()
      server.close()
    }
  }
}

const failureOf = async (url: string) => {
  const dispatcher = new Agent({ headersTimeout: 200, bodyTimeout: 200 })
  try {
    const response = await undiciFetch(`${url}/rpc`, { method: "POST", body: "{}", dispatcher })
    await response.text()
    return undefined
  } catch (error) {
    // as effect's client nests it: an HttpClientError whose reason's cause is fetch's error
    return { _tag: "RpcClientError", cause: { reason: { _tag: "TransportError", cause: error } } }
  } finally {
    await dispatcher.close()
  }
}

describe("ServiceClient.describeFailure", () => {
  for (const mode of ["nothing", "headers"] as const) {
    it(`a service that sends ${mode === "nothing" ? "nothing" : "headers and then nothing"}: it may still be working`, async () => {
      const server = await silentServer(mode)
      try {
        const failure = await failureOf(server.url)
        assert.isDefined(failure)
        assert.strictEqual(
          describeFailure({ service: "listings", url: server.url, tokenVariable: "ADMIN_TOKEN" }, failure),
          `listings at ${server.url} sent nothing for 5 minutes, so the command stopped waiting; the service may still be doing the work (see its log)`
        )
      } finally {
        server.close()
      }
    })
  }

  it("a service nobody listens for is 'no answer' with the network error", async () => {
    const server = await silentServer("nothing")
    server.close()
    const failure = await failureOf(server.url)
    assert.match(
      describeFailure({ service: "docs-api", url: server.url, tokenVariable: "DOCS_ADMIN_TOKEN" }, failure),
      new RegExp(`^no answer from docs-api at ${server.url}: .*ECONNREFUSED`)
    )
  })
})
