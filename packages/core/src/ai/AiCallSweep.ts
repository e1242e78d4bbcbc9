import { Duration, Effect, Schema } from "effect"
import { define, handler, type JobHandler } from "../jobs/Job.ts"
import { AiGateway } from "./AiGateway.ts"

/**
 * Settles AI calls left `pending` by a gateway process that died or froze mid-call (`AiGateway.sweep`): one job of the
 * kind always exists, every 15 seconds, so a crashed replica's calls are charged once within about that long of any
 * runner (the restarted process, or another replica) noticing its session lock gone.
 */
export const aiCallSweep = define({
  kind: "ai_call_sweep",
  payload: Schema.Struct({}),
  phases: ["sweep"],
  every: Duration.seconds(15),
  singleton: { payload: {} }
})

export const aiCallSweepHandler: Effect.Effect<JobHandler, never, AiGateway> = Effect.map(
  Effect.service(AiGateway),
  (gateway) => handler(aiCallSweep, { run: () => Effect.asVoid(gateway.sweep) })
)
