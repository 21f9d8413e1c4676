/**
 * `@svc/queue/client`: the queue for applications that do not use effect. Nothing here loads or
 * exposes effect: plain Promises, plain objects, `Error` subclasses.
 *
 * - {@link QueueClient}: every route of the queue's API (publish, batch, messages, DLQ, URL groups,
 *   schedules, flow control, FIFO queues, signing keys, events, bulk operations).
 * - {@link Receiver}, {@link verifySignatureNode}, {@link verifySignatureFetch}: `Svc-Signature`
 *   checks for the endpoints the queue delivers to.
 */
export type { CallbackOptions, PublishOptions } from "../PublishHeaders.ts"
export { verifySignatureFetch, verifySignatureNode, type ReceiverOptions } from "./handlers.ts"
export { QueueClient, type QueueClientOptions } from "./QueueClient.ts"
export { QueueError } from "./QueueError.ts"
export { Receiver, type SignatureClaims, SignatureError, type SignatureFailure, type SigningKeyPair, type VerifyRequest } from "./Receiver.ts"
export type * from "./types.ts"
