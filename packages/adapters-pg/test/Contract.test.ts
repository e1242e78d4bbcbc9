import { layer as pgStores } from "@hostplane/adapters-pg"
import { TestDatabase } from "@hostplane/adapters-pg/testing/TestDatabase"
import { contractSuites } from "@hostplane/testkit/contract/index"
import { type Context, Effect, Exit, Layer, Scope } from "effect"
import { afterAll } from "vitest"

// One database for the file, copied from the run's template when the first suite builds its stores: every port
// contract uses unique ids, as PostgreSQL tests sharing one database do, and a database of its own was most of a
// suite's time. Each suite still builds its own stores on it.
const scope = Scope.makeUnsafe()
afterAll(() => Effect.runPromise(Scope.close(scope, Exit.void)))
let database: Promise<Context.Context<Layer.Success<typeof TestDatabase.layer>>> | undefined
const shared = Layer.effectContext(
  Effect.promise(() => (database ??= Effect.runPromise(Layer.buildWithScope(TestDatabase.layer, scope))))
)

// Every port contract of testkit on the PostgreSQL stores.
contractSuites("postgres", pgStores.pipe(Layer.provide(shared)))
