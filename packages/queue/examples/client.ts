// The queue from an application without effect: publish, follow the message, page through the DLQ.
import { QueueClient, QueueError } from "@svc/queue/client"

const queue = new QueueClient({ baseUrl: process.env.QUEUE_URL ?? "http://localhost:8788", token: process.env.QUEUE_TOKEN! })
const destination = process.argv[2] ?? "https://example.com/orders"

try {
  const published = await queue.publishJSON({ destination, body: { order: 42 }, retries: 3, forward: { "X-Source": "example" } })
  console.log("published", JSON.stringify(published))
  if ("messageId" in published) {
    await new Promise((resolve) => setTimeout(resolve, 1_000))
    const message = await queue.messages.get(published.messageId)
    console.log(`message ${message.messageId} is ${message.state} (retried ${message.retried} of ${message.maxRetries})`)
  }

  const { messages, cursor } = await queue.dlq.list({ limit: 10 })
  console.log(`${messages.length} dead-lettered messages on this page${cursor === undefined ? "" : `, more after cursor ${cursor}`}`)

  try {
    await queue.messages.get("no-such-message")
  } catch (error) {
    if (!(error instanceof QueueError)) throw error
    console.log(`refused: ${error.status} ${error.code}`)
  }
} catch (error) {
  // a refusal (a wrong QUEUE_TOKEN, a destination the queue does not take) in one line, not a stack trace
  if (!(error instanceof QueueError)) throw error
  console.error(`the queue refused: ${error.status} ${error.code}: ${error.message}`)
  process.exitCode = 1
}
