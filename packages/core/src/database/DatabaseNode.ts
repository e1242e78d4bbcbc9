import { Context, Effect, Layer, Schema, type Redacted, type Stream } from "effect"
import { portOff } from "../kernel/Port.ts"
import type { ProjectId } from "../kernel/Ids.ts"

/**
 * Where a project's database listens; the database is always `app`. `sslmode` is the libpq mode clients are told to
 * use: `require` when the cluster serves TLS (and refuses connections without it), `disable` when it has none.
 */
export interface NodeEndpoint {
  readonly host: string
  readonly port: number
  readonly sslmode: "require" | "disable"
}

/**
 * The node admin failed: `unavailable` when no node can serve the database (503 `no_home_node`), `failed` when the
 * node answered with an error (a backup or a restore that did not complete).
 */
export class DatabaseNodeError extends Schema.TaggedError<DatabaseNodeError>()("DatabaseNodeError", {
  reason: Schema.Literals(["unavailable", "failed"]),
  message: Schema.String
}) {}

/** A token as the node keeps it: a login name and the SCRAM-SHA-256 verifier of its password (never the password). */
export interface NodeToken {
  readonly user: string
  readonly verifier: string
}

/**
 * The node admin of the database add-on: one PostgreSQL cluster per project database, whose project role owns the
 * database `app`. Tokens are login roles whose sessions run as the project role. Images are physical base backups
 * as one `.tar.gz` stream; a generation's epoch is the cluster's timeline. Every method is idempotent.
 */
export class DatabaseNode extends Context.Service<
  DatabaseNode,
  {
    /**
     * The PEM certificate of the authority that signs the clusters' server certificates (their names are the hosts
     * clients connect to), for `sslmode=verify-full`; undefined when the node serves no TLS.
     */
    readonly authority: string | undefined
    /**
     * Where this admin's clusters live when that is one replica's own machine (the embedded node: its data dir),
     * undefined when every replica reaches every cluster through it. A database is homed where it was created; the
     * work that needs its cluster runs on the replica with that home (decisions.md part 15, docs/operations.md).
     */
    readonly home: string | undefined
    /** The project role's name: the `user` of DatabaseConnect. */
    readonly ownerOf: (projectId: ProjectId) => string
    /** The SCRAM-SHA-256 verifier of a password, computed here so the plaintext never reaches PostgreSQL. */
    readonly verifier: (password: Redacted.Redacted<string>) => Effect.Effect<string>
    /**
     * Creates the cluster, its project role (with this password verifier) and database `app` when missing, starts it
     * when stopped, and answers where it listens. A second call never changes the password.
     */
    readonly ensure: (projectId: ProjectId, ownerVerifier: string) => Effect.Effect<NodeEndpoint, DatabaseNodeError>
    /** Where the cluster listens, if the node holds it. */
    readonly endpoint: (projectId: ProjectId) => Effect.Effect<NodeEndpoint | undefined, DatabaseNodeError>
    /** The login names of the cluster's tokens, sorted. */
    readonly tokens: (projectId: ProjectId) => Effect.Effect<ReadonlyArray<string>, DatabaseNodeError>
    /** Creates the token's login role (or resets its verifier). */
    readonly createToken: (projectId: ProjectId, token: NodeToken) => Effect.Effect<void, DatabaseNodeError>
    /** Drops the token's login role after ending its sessions; new connections with it are refused. */
    readonly deleteToken: (projectId: ProjectId, user: string) => Effect.Effect<void, DatabaseNodeError>
    /** Makes the cluster's tokens exactly these (after a restore brought back an older set). */
    readonly syncTokens: (
      projectId: ProjectId,
      tokens: ReadonlyArray<NodeToken>
    ) => Effect.Effect<void, DatabaseNodeError>
    /** Refuses new connections to `app` and ends the open ones (draining); `resume` takes connections again. */
    readonly drain: (projectId: ProjectId) => Effect.Effect<void, DatabaseNodeError>
    readonly resume: (projectId: ProjectId) => Effect.Effect<void, DatabaseNodeError>
    /**
     * Takes a physical image of the running cluster (`pg_backup_start`/`pg_backup_stop` with the WAL it needs) and
     * hands it as one `.tar.gz` stream to `write`, which must consume it before the backup ends. Answers the
     * cluster's timeline (the generation's epoch) and what `write` answered.
     */
    readonly backup: <A, E, R>(
      projectId: ProjectId,
      write: (image: Stream.Stream<Uint8Array, DatabaseNodeError>) => Effect.Effect<A, E, R>
    ) => Effect.Effect<{ readonly epoch: number; readonly written: A }, E | DatabaseNodeError, R>
    /**
     * Replaces the cluster's data with an image taken by `backup`, recovers it to its consistent point and promotes it
     * to timeline `epoch` (higher than any timeline the database had). The old data is kept aside until it succeeds.
     */
    readonly restore: <E>(
      projectId: ProjectId,
      image: Stream.Stream<Uint8Array, E>,
      epoch: number
    ) => Effect.Effect<void, E | DatabaseNodeError>
    /** Stops the cluster and moves its data directory to the tombstone; the node no longer holds it. */
    readonly remove: (projectId: ProjectId) => Effect.Effect<void, DatabaseNodeError>
    /** The projects whose clusters the node holds (those `remove` would act on). */
    readonly held: Effect.Effect<ReadonlyArray<ProjectId>, DatabaseNodeError>
  }
>()("@hostplane/core/database/DatabaseNode") {
  /** No node admin: the database add-on's routes answer 503 `no_node_admin`, and its teardown has nothing to remove. */
  static readonly off: Layer.Layer<DatabaseNode> = Layer.sync(DatabaseNode, () => DatabaseNode.offVerifying(undefined))

  /**
   * No node admin, but the clusters' certificates verified by `authority`: a node on another machine, which connects
   * workers to the databases the control plane runs and reads their authority from it.
   */
  static readonly offVerifying = (authority: string | undefined): DatabaseNode["Service"] => {
    const refuse = () =>
      Effect.fail(new DatabaseNodeError({ reason: "unavailable", message: "no database node admin" }))
    return portOff({
      authority,
      home: undefined,
      ownerOf: () => "",
      verifier: () => Effect.die(new Error("no database node admin")),
      ensure: refuse,
      endpoint: refuse,
      tokens: refuse,
      createToken: refuse,
      deleteToken: refuse,
      syncTokens: refuse,
      drain: refuse,
      resume: refuse,
      backup: refuse,
      restore: refuse,
      remove: refuse,
      held: Effect.succeed([])
    })
  }
}
