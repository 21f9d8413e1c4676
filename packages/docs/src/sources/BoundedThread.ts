/**
 * Synchronous work on untrusted input (an HTML page to convert, an OpenAPI document to read) run in a
 * worker thread, one input at a time, within a time limit and a heap limit.
 *
 * Why a thread: the parsers are synchronous, and crafted input can make them take time or memory
 * growing much faster than the input. On the main thread one such input stops the process from
 * answering anything, or takes all its memory. In a thread, an input past the time limit is abandoned:
 * the thread is ended (nothing else stops synchronous code) and the next input starts a new thread;
 * one past the heap limit ends its thread the same way. The limits count the work only: a new thread
 * first posts `ready` once its modules are loaded (seconds on a busy machine).
 *
 * The thread's module calls {@link answerInThread} with the function to run.
 */
import { Duration, Effect, Option, Semaphore } from "effect"
import { parentPort, Worker } from "node:worker_threads"

/** What a thread posts: once `ready`, then for each input its result or the reason it threw. */
type ThreadMessage<Output> =
  | { readonly ready: true }
  | { readonly result: Output }
  | { readonly reason: string }

/** The outcome of one input. */
export type ThreadOutcome<Output> =
  | { readonly _tag: "Done"; readonly result: Output }
  /** Not done within the time limit: the thread was ended. */
  | { readonly _tag: "TooSlow" }
  /** The thread ran out of its heap. */
  | { readonly _tag: "TooBig" }
  /** The work threw (its message), or the thread failed to start or stopped. */
  | { readonly _tag: "Failed"; readonly reason: string }

export interface BoundedThread<Input, Output> {
  readonly run: (input: Input) => Effect.Effect<ThreadOutcome<Output>>
}

/** Serves a {@link BoundedThread}: to be called once by the thread's module. */
export const answerInThread = <Input, Output>(work: (input: Input) => Output): void => {
  const port = parentPort!
  const post = (message: ThreadMessage<Output>) => port.postMessage(message)
  port.on("message", (input: Input) => {
    let reply: ThreadMessage<Output>
    try {
      reply = { result: work(input) }
    } catch (error) {
      reply = { reason: error instanceof Error ? error.message : String(error) }
    }
    post(reply)
  })
  post({ ready: true })
}

/** A thread of `module` (which calls {@link answerInThread}) living as long as the scope. */
export const makeBoundedThread = Effect.fnUntraced(function*<Input, Output>(options: {
  readonly module: URL
  readonly timeLimit: Duration.Duration
  readonly heapMb: number
}) {
  let thread: Worker | undefined
  const end = (worker: Worker) => {
    if (thread === worker) thread = undefined
    void worker.terminate()
  }
  yield* Effect.addFinalizer(() => Effect.sync(() => thread !== undefined && end(thread)))

  /**
   * The thread's next message, after posting `input` when given; a thread that fails or stops gives
   * why. Interrupted (the time limit, or the scope ending), the thread is ended: it may be deep in an
   * input, and nothing else stops synchronous code.
   */
  const nextReply = (worker: Worker, input?: { readonly value: Input }) =>
    Effect.callback<ThreadMessage<Output> | Exclude<ThreadOutcome<Output>, { _tag: "Done" }>>((resume) => {
      const detach = () => {
        worker.off("message", onMessage)
        worker.off("error", onError)
        worker.off("exit", onExit)
      }
      const settle = (reply: ThreadMessage<Output> | Exclude<ThreadOutcome<Output>, { _tag: "Done" }>) => {
        detach()
        resume(Effect.succeed(reply))
      }
      const onMessage = (message: ThreadMessage<Output>) => settle(message)
      // Out of heap, or the thread failed to start: the next input gets a new thread.
      const onError = (error: Error & { code?: string }) => {
        end(worker)
        settle(error.code === "ERR_WORKER_OUT_OF_MEMORY" ? { _tag: "TooBig" } : { _tag: "Failed", reason: error.message })
      }
      const onExit = () => {
        end(worker)
        settle({ _tag: "Failed", reason: "the thread stopped" })
      }
      worker.on("message", onMessage)
      worker.on("error", onError)
      worker.on("exit", onExit)
      if (input !== undefined) worker.postMessage(input.value)
      return Effect.sync(() => {
        detach()
        end(worker)
      })
    })

  /** The running thread, or a new one once it has loaded its modules. */
  const readyThread = Effect.suspend(() => {
    if (thread !== undefined) return Effect.succeed(thread)
    const worker = new Worker(options.module, { resourceLimits: { maxOldGenerationSizeMb: options.heapMb } })
    // An idle thread never keeps the process alive, and an error with no input waiting is not thrown.
    worker.unref()
    worker.on("error", () => {})
    thread = worker
    return Effect.map(nextReply(worker), (ready) => "_tag" in ready ? ready : worker)
  })

  const oneAtATime = yield* Semaphore.make(1)
  const run = (input: Input): Effect.Effect<ThreadOutcome<Output>> =>
    Effect.gen(function*() {
      const worker = yield* readyThread
      if (!(worker instanceof Worker)) return worker
      const reply = yield* nextReply(worker, { value: input }).pipe(Effect.timeoutOption(options.timeLimit))
      if (Option.isNone(reply)) return { _tag: "TooSlow" } as const
      const message = reply.value
      return "_tag" in message
        ? message
        : "result" in message
        ? { _tag: "Done", result: message.result } as const
        : { _tag: "Failed", reason: "reason" in message ? message.reason : "the thread answered out of turn" } as const
    }).pipe(oneAtATime.withPermits(1))
  return { run } satisfies BoundedThread<Input, Output>
})
