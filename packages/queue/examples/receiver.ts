// An endpoint the queue delivers to: only requests the queue signed reach the handler.
import * as http from "node:http"
import { verifySignatureNode } from "@svc/queue/client"

const port = Number(process.env.PORT ?? 3000)

const onOrder = verifySignatureNode(async (req, res, body, claims) => {
  console.log(`${req.headers["svc-message-id"]} for ${claims.sub}: ${body.toString()}`)
  res.writeHead(200).end("ok")
}, {
  currentSigningKey: process.env.SVC_CURRENT_SIGNING_KEY!,
  nextSigningKey: process.env.SVC_NEXT_SIGNING_KEY!,
  url: `http://127.0.0.1:${port}/orders`          // optional: the signature must be for this URL
})

http.createServer(onOrder).listen(port, "127.0.0.1", () => console.log(`Receiving on http://127.0.0.1:${port}/orders`))
