/** The worker thread of OpenApi.ts: reads each OpenAPI document it is sent (OpenApiDocument.ts). */
import { answerInThread } from "./BoundedThread.ts"
import { readDocument } from "./OpenApiDocument.ts"

answerInThread(readDocument)
