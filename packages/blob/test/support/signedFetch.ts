/**
 * Test support: sends a request to a presigned URL, whichever layer signed it: a memory bucket's URL
 * (`*.memory.invalid`) is served in process by `memoryFetch`, anything else goes over the network.
 */
import { memoryFetch } from "../../src/server/Bucket.ts"

export const isMemoryUrl = (url: string): boolean => new URL(url).hostname.endsWith(".memory.invalid")

export const signedFetch = (url: string, init?: RequestInit): Promise<Response> =>
  isMemoryUrl(url) ? memoryFetch(new Request(url, init)) : fetch(url, init)
