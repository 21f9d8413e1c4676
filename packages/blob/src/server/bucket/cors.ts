/**
 * `configureCors`: the bucket's CORS rules, so browsers may PUT through signed URLs and read the ETag.
 *
 * @module
 */
import { PutBucketCorsCommand } from "@aws-sdk/client-s3"
import { Effect } from "effect"
import type { S3Context } from "./client.ts"
import type { CorsOptions } from "./types.ts"

export const makeCors = (s3: S3Context) => {
  const { Bucket, send, retried } = s3

  const configureCors = Effect.fn("Bucket.configureCors")(function*(options: CorsOptions = {}) {
    yield* retried(send(undefined, (client, signal) =>
      client.send(
        new PutBucketCorsCommand({
          Bucket,
          CORSConfiguration: {
            CORSRules: [{
              AllowedOrigins: [...(options.origins ?? ["*"])],
              AllowedMethods: ["GET", "HEAD", "PUT"],
              AllowedHeaders: ["*"],
              ExposeHeaders: ["ETag"],
              MaxAgeSeconds: options.maxAgeSeconds ?? 3600
            }]
          }
        }),
        { abortSignal: signal }
      )))
  })

  return configureCors
}
