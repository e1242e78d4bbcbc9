import { Option, Schema } from "effect"
import { type JobRow, TerminalCode } from "../jobs/Job.ts"
import { OrgId, ProjectId } from "../kernel/Ids.ts"

export { TerminalCode }

/** A long-running job as clients see it (decisions.md part 4). */
export const Operation = Schema.Struct({
  id: Schema.String,
  kind: Schema.String,
  projectId: Schema.String,
  phase: Schema.String,
  terminalCode: Schema.NullOr(TerminalCode),
  createdAt: Schema.String,
  updatedAt: Schema.String
})
export type Operation = typeof Operation.Type

export const OperationStarted = Schema.Struct({ operationId: Schema.String })

/** The payload every operation kind carries: the org it answers to and the project it works on. */
export const OperationPayload = Schema.Struct({ orgId: OrgId, projectId: ProjectId })
export type OperationPayload = typeof OperationPayload.Type

const decodePayload = Schema.decodeUnknownOption(OperationPayload)

/**
 * The operation view of a job of the org, if it is one: an operation is a job of the jobs engine whose payload names
 * its org and project (mail and hostname-check jobs are not operations).
 */
export const operationOf = (job: JobRow, orgId: string): Option.Option<Operation> =>
  Option.flatMap(decodePayload(job.payload), (payload) =>
    payload.orgId === orgId
      ? Option.some({
          id: job.id,
          kind: job.kind,
          projectId: payload.projectId,
          phase: job.phase,
          terminalCode: job.terminalCode,
          createdAt: job.createdAt,
          updatedAt: job.updatedAt
        })
      : Option.none()
  )
