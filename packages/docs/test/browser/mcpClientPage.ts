/**
 * Bundled by `mcpBrowser.test.ts` into a page: the MCP SDK's own Streamable HTTP client, run by
 * Chromium, so that the browser enforces CORS on every request it makes to the MCP server.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"

/** Connects (initialize, then the SDK's GET for a stream), lists the tools, closes; the tool names. */
const listTools = async (url: string, apiKey: string): Promise<ReadonlyArray<string>> => {
  const client = new Client({ name: "svc-browser-test", version: "1.0.0" })
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { authorization: `Bearer ${apiKey}` } }
  })
  await client.connect(transport)
  try {
    const { tools } = await client.listTools()
    return tools.map((tool) => tool.name)
  } finally {
    await client.close()
  }
}

Object.assign(globalThis, { listTools })
