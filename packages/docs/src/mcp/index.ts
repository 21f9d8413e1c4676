/** The MCP server of the documentation lookup: tools, HTTP and stdio transports, the REST client. */
export * from "./DocsClient.ts"
export * as McpHttp from "./McpHttp.ts"
export * as McpServer from "./McpServer.ts"
export * as Mcp from "./Mcp.ts"
