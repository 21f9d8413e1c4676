/**
 * The queue's names that travel as URL path segments (groups, FIFO queues, flow-control keys, schedule
 * ids): `.` and `..` are refused, since a client normalises them out of a path and the thing named so
 * could never be reached again; dots elsewhere in a name are fine.
 */
import { assert, describe, it } from "@effect/vitest"
import { Schema } from "effect"
import { TopicName } from "../../src/Queue.ts"
import { FlowControlKey, QueueName } from "../../src/QueueFlow.ts"
import { ScheduleId } from "../../src/QueueSchedules.ts"

describe("queue names", () => {
  it("refuse . and .., accept other names with dots", () => {
    for (const [label, schema] of [["TopicName", TopicName], ["QueueName", QueueName], ["FlowControlKey", FlowControlKey], ["ScheduleId", ScheduleId]] as const) {
      const accepts = (name: string) => Schema.is(schema)(name)
      for (const name of [".", ".."]) assert.isFalse(accepts(name), `${label} ${name}`)
      for (const name of ["...", ".hidden", "a..b", "v1.2", "jobs"]) assert.isTrue(accepts(name), `${label} ${name}`)
    }
  })
})
