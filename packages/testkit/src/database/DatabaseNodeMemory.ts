import { Database, type Kernel } from "@hostplane/core"
import { Effect, Layer, Redacted, Schema, Stream } from "effect"

interface Cluster {
  readonly port: number
  readonly ownerVerifier: string
  tokens: Map<string, string>
  timeline: number
  draining: boolean
}

/** What a memory image holds: the cluster's state at the backup (tokens are roles of the cluster). */
const Image = Schema.fromJsonString(
  Schema.Struct({ timeline: Schema.Number, tokens: Schema.Array(Schema.Tuple([Schema.String, Schema.String])) })
)
const encodeImage = Schema.encodeSync(Image)
const decodeImage = Schema.decodeUnknownEffect(Image)

const unavailable = (projectId: string) =>
  new Database.DatabaseNodeError({ reason: "unavailable", message: `the node holds no database for ${projectId}` })

/**
 * A node admin in memory for tests and examples: clusters are records, tokens a map of verifiers, an image the JSON
 * of the cluster's state. It passes the same contract suite as the embedded PostgreSQL node.
 */
export const make = Effect.sync(() => {
  const clusters = new Map<Kernel.ProjectId, Cluster>()
  let nextPort = 15432
  const require = (projectId: Kernel.ProjectId) =>
    Effect.suspend(() => {
      const cluster = clusters.get(projectId)
      return cluster === undefined ? Effect.fail(unavailable(projectId)) : Effect.succeed(cluster)
    })
  const host = "127.0.0.1"
  return Database.DatabaseNode.of({
    // Nothing connects to a memory cluster: it answers what a node serving TLS answers, without an authority.
    authority: undefined,
    // One process, every cluster reachable: no home.
    home: undefined,
    ownerOf: (projectId) => projectId.toLowerCase().replace(/[^a-z0-9_]/g, "_"),
    verifier: (password) => Effect.sync(() => `memory$${Redacted.value(password).length}`),
    ensure: (projectId, ownerVerifier) =>
      Effect.sync(() => {
        let cluster = clusters.get(projectId)
        if (cluster === undefined) {
          cluster = { port: nextPort++, ownerVerifier, tokens: new Map(), timeline: 1, draining: false }
          clusters.set(projectId, cluster)
        }
        return { host, port: cluster.port, sslmode: "require" as const }
      }),
    endpoint: (projectId) =>
      Effect.sync(() => {
        const cluster = clusters.get(projectId)
        return cluster === undefined ? undefined : { host, port: cluster.port, sslmode: "require" as const }
      }),
    tokens: (projectId) => Effect.map(require(projectId), (cluster) => [...cluster.tokens.keys()].sort()),
    createToken: (projectId, token) =>
      Effect.map(require(projectId), (cluster) => void cluster.tokens.set(token.user, token.verifier)),
    deleteToken: (projectId, user) => Effect.map(require(projectId), (cluster) => void cluster.tokens.delete(user)),
    syncTokens: (projectId, tokens) =>
      Effect.map(require(projectId), (cluster) => {
        cluster.tokens = new Map(tokens.map((token) => [token.user, token.verifier]))
      }),
    drain: (projectId) => Effect.map(require(projectId), (cluster) => void (cluster.draining = true)),
    resume: (projectId) => Effect.map(require(projectId), (cluster) => void (cluster.draining = false)),
    backup: (projectId, write) =>
      Effect.gen(function* () {
        const cluster = yield* require(projectId)
        const bytes = new TextEncoder().encode(
          encodeImage({ timeline: cluster.timeline, tokens: [...cluster.tokens.entries()] })
        )
        const written = yield* write(Stream.make(bytes))
        return { epoch: cluster.timeline, written }
      }),
    restore: (projectId, image, epoch) =>
      Effect.gen(function* () {
        const cluster = yield* require(projectId)
        const chunks = yield* Stream.runCollect(image)
        const text = new TextDecoder().decode(Buffer.concat(Array.from(chunks)))
        const state = yield* decodeImage(text).pipe(
          Effect.mapError(() => new Database.DatabaseNodeError({ reason: "failed", message: "not an image" }))
        )
        cluster.tokens = new Map(state.tokens)
        cluster.timeline = epoch
      }),
    remove: (projectId) => Effect.sync(() => void clusters.delete(projectId)),
    held: Effect.sync(() => [...clusters.keys()])
  })
})

export const layer: Layer.Layer<Database.DatabaseNode> = Layer.effect(Database.DatabaseNode, make)
