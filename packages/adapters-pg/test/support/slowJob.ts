import { define } from "@hostplane/core/jobs/Job"
import { Schema } from "effect"

/** Three phases that each sleep the payload's `ms`: run by `jobRunnerChild.ts slow`. */
export const slowJob = define({
  kind: "test_slow",
  payload: Schema.Struct({ ms: Schema.Number }),
  phases: ["one", "two", "three"]
})
