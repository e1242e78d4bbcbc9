import { Duration, Schema } from "effect"
import type { Sealed } from "../secrets/Sealer.ts"
import { define } from "../jobs/Job.ts"
import { OrgId, ProjectId } from "../kernel/Ids.ts"

/** DatabaseConnect (decisions.md part 4): everything a client needs, the password included. */
export const DatabaseConnect = Schema.Struct({
  host: Schema.String,
  port: Schema.Number,
  database: Schema.String,
  user: Schema.String,
  password: Schema.String,
  sslmode: Schema.String,
  url: Schema.String
})
export type DatabaseConnect = typeof DatabaseConnect.Type

/**
 * `GET /v1/node/database/authority`: the PEM certificate of the authority that signs the database clusters' server
 * certificates, what a node on another machine verifies them with; null when the clusters have none (TLS is then
 * encrypted, not verified, on every node).
 */
export const NodeDatabaseAuthority = Schema.Struct({ authority: Schema.NullOr(Schema.String) })
export type NodeDatabaseAuthority = typeof NodeDatabaseAuthority.Type

/** `GET /database/endpoint`: where the database is, nothing secret. */
export const DatabaseEndpoint = Schema.Struct({
  host: Schema.String,
  port: Schema.Number,
  database: Schema.String,
  sslmode: Schema.String
})
export type DatabaseEndpoint = typeof DatabaseEndpoint.Type

export const DatabaseStatus = Schema.Struct({ db: Schema.Boolean })

/** A token as listed: no password, no verifier. */
export const DatabaseTokenMeta = Schema.Struct({ user: Schema.String, createdAt: Schema.String })
export type DatabaseTokenMeta = typeof DatabaseTokenMeta.Type
export const DatabaseTokenList = Schema.Struct({ items: Schema.Array(DatabaseTokenMeta) })

/** A token as created: the password appears here only. */
export const DatabaseToken = Schema.Struct({ user: Schema.String, password: Schema.String, createdAt: Schema.String })
export type DatabaseToken = typeof DatabaseToken.Type

/** Spec 4.6: "Body object"; an array is an object to JavaScript, not to the spec. */
export const CreateTokenInput = Schema.Struct({}).check(
  Schema.makeFilter((body: object) => !Array.isArray(body) || "must be a JSON object")
)

export const DatabaseExport = Schema.Struct({ key: Schema.String })

/** One generation (decisions.md part 4); `lastCheckedAt` null means not re-hashed yet. */
export const Generation = Schema.Struct({
  epoch: Schema.Number,
  seq: Schema.Number,
  bytes: Schema.Number,
  sha256: Schema.String,
  offsiteKey: Schema.String,
  createdAt: Schema.String,
  lastCheckedAt: Schema.NullOr(Schema.String)
})
export type Generation = typeof Generation.Type
export const GenerationList = Schema.Struct({ items: Schema.Array(Generation) })

/** A stored generation: a failed re-hash is kept (`checkFailedAt`), never silently trusted. */
export interface GenerationRow extends Generation {
  readonly projectId: ProjectId
  readonly checkFailedAt: string | null
}

const Whole = Schema.Int.check(Schema.isGreaterThanOrEqualTo(1))
export const RestoreRequest = Schema.Struct({ epoch: Whole, seq: Whole })
export type RestoreRequest = typeof RestoreRequest.Type
export const DeleteRequest = Schema.Struct({ confirm: Schema.String })

/** Where a homed database's cluster listens, as its home replica recorded it for the others. */
export const HomeEndpoint = Schema.Struct({
  host: Schema.String,
  port: Schema.Number,
  sslmode: Schema.Literals(["require", "disable"])
})

/**
 * The control row of a project database: its sealed password, its epoch, the operation holding it, and its home (the
 * replica whose node admin holds its cluster, with the endpoint it recorded); a null home is reached from any replica.
 */
export interface DatabaseRow {
  readonly projectId: ProjectId
  readonly sealedPassword: Sealed
  readonly epoch: number
  readonly operationId: string | null
  readonly createdAt: string
  readonly home: string | null
  readonly endpoint: typeof HomeEndpoint.Type | null
}

export interface TokenRow {
  readonly projectId: ProjectId
  readonly user: string
  readonly verifier: string
  readonly createdAt: string
}

/** The sealing context of a project database's password. */
export const passwordContext = (projectId: string): string => `${projectId}/database`

export const RestorePayload = Schema.Struct({
  orgId: OrgId,
  projectId: ProjectId,
  epoch: Schema.Number,
  seq: Schema.Number,
  /** The epoch the database reactivates on, fixed at acceptance so a repeated phase lands on the same one. */
  nextEpoch: Schema.Number
})
export type RestorePayload = typeof RestorePayload.Type

export const DeletePayload = Schema.Struct({ orgId: OrgId, projectId: ProjectId })
export type DeletePayload = typeof DeletePayload.Type

/** `POST database/restore`: abortable while draining or sealing (decisions.md part 4). */
export const restoreGeneration = define({
  kind: "restore_generation",
  payload: RestorePayload,
  phases: ["draining", "sealing", "committing", "reactivation"],
  abortableBefore: "committing",
  maxAttempts: 10
})

/** `POST database/delete`: sealing leaves the final safety generation, committing drops the database. */
export const deleteDatabase = define({
  kind: "delete",
  payload: DeletePayload,
  phases: ["draining", "sealing", "committing"],
  abortableBefore: "committing",
  maxAttempts: 10
})

/**
 * What the system starts when a database's home is lost (decisions.md part 4, kind `restore`): the database is moved
 * to the replica that runs this, and rebuilt there from its newest sound generation on epoch `nextEpoch`. `from` is
 * the lost home. Never abortable: the old cluster is out of reach.
 */
export const RebuildPayload = Schema.Struct({
  orgId: OrgId,
  projectId: ProjectId,
  from: Schema.String,
  nextEpoch: Schema.Number
})
export type RebuildPayload = typeof RebuildPayload.Type

export const rebuildDatabase = define({
  kind: "restore",
  payload: RebuildPayload,
  phases: ["placing", "restoring", "reactivation"],
  maxAttempts: 10
})

/**
 * Node work for a database homed on another replica, handed to that replica as a job of this kind pinned there
 * (`database_node@<home>`). A call someone waits for carries `notAfter`: run later, it would surprise (a token made
 * after its request was answered 503), so it is dropped instead.
 */
export const NodeCallPayload = Schema.Struct({
  projectId: ProjectId,
  action: Schema.Literals(["drain", "remove", "createToken", "deleteToken", "export"]),
  user: Schema.optional(Schema.String),
  verifier: Schema.optional(Schema.String),
  key: Schema.optional(Schema.String),
  notAfter: Schema.NullOr(Schema.String)
})
export type NodeCallPayload = typeof NodeCallPayload.Type

export const databaseNodeCall = define({
  kind: "database_node",
  payload: NodeCallPayload,
  phases: ["call"],
  maxAttempts: 3
})

/** Handed-over node work is read only while its request waits: its finished jobs are removed after a while. */
export const databaseNodePurge = define({
  kind: "database_node_purge",
  payload: Schema.Struct({}),
  phases: ["purge"],
  every: Duration.minutes(10),
  singleton: { payload: {} }
})

/** The generations of the databases homed on one replica, pinned there: a round every few seconds. */
export const databaseGenerations = define({
  kind: "database_generations",
  payload: Schema.Struct({}),
  phases: ["generations"],
  every: Duration.seconds(5),
  singleton: { payload: {} }
})

/** The recovery-point grid and the re-hash checks: one periodic job, a round every few seconds. */
export const databaseSchedule = define({
  kind: "database_schedule",
  payload: Schema.Struct({}),
  phases: ["generations", "checks"],
  every: Duration.seconds(5),
  singleton: { payload: {} }
})
