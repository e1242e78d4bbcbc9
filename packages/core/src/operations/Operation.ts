import { Option, Schema } from "effect"
import { baseKind, type JobRow, TerminalCode } from "../jobs/Job.ts"
import { makeId, OperationId, OrgId, ProjectId } from "../kernel/Ids.ts"

export { TerminalCode }

/** A long-running job as clients see it (decisions.md part 4). */
export const Operation = Schema.Struct({
  id: OperationId,
  kind: Schema.String,
  projectId: ProjectId,
  phase: Schema.String,
  terminalCode: Schema.NullOr(TerminalCode),
  createdAt: Schema.String,
  updatedAt: Schema.String
})
export type Operation = typeof Operation.Type

export const OperationStarted = Schema.Struct({ operationId: OperationId })

/** The payload every operation kind carries: the org it answers to and the project it works on. */
export const OperationPayload = Schema.Struct({ orgId: OrgId, projectId: ProjectId })
export type OperationPayload = typeof OperationPayload.Type

const decodePayload = Schema.decodeUnknownOption(OperationPayload)

/**
 * The operation view of a job of the org, if it is one: an operation is a job of the jobs engine whose payload names
 * its org and project (mail and hostname-check jobs are not operations).
 */
export const operationOf = (job: JobRow, orgId: OrgId): Option.Option<Operation> =>
  Option.flatMap(decodePayload(job.payload), (payload) =>
    payload.orgId === orgId
      ? Option.some({
          // An operation is the job of that id.
          id: makeId("op", job.id),
          // A kind pinned to the replica that runs it is still the same operation kind to clients.
          kind: baseKind(job.kind),
          projectId: payload.projectId,
          phase: job.phase,
          terminalCode: job.terminalCode,
          createdAt: job.createdAt,
          updatedAt: job.updatedAt
        })
      : Option.none()
  )
