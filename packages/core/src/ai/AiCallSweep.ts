import { Effect, Schema } from "effect"
import { define, handler, type JobHandler } from "../jobs/Job.ts"
import { AiConfig, defaultSweepEvery } from "./AiConfig.ts"
import { AiGateway } from "./AiGateway.ts"

/**
 * Settles AI calls left `pending` by a gateway process that died or froze mid-call (`AiGateway.sweep`): one job of the
 * kind always exists, every 15 seconds (`SERVICE_AI_SWEEP_EVERY`), so a crashed replica's calls are charged once within
 * about that long of any runner (the restarted process, or another replica) noticing its session lock gone.
 */
export const aiCallSweep = define({
  kind: "ai_call_sweep",
  payload: Schema.Struct({}),
  phases: ["sweep"],
  every: defaultSweepEvery,
  singleton: { payload: {} }
})

export const aiCallSweepHandler: Effect.Effect<JobHandler, never, AiGateway | AiConfig> = Effect.gen(function* () {
  const gateway = yield* AiGateway
  const { sweepEvery } = yield* AiConfig
  return handler({ ...aiCallSweep, every: sweepEvery }, { run: () => Effect.asVoid(gateway.sweep) })
})
