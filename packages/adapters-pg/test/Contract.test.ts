import { layer as pgStores } from "@hostplane/adapters-pg"
import { TestDatabase } from "@hostplane/adapters-pg/testing/TestDatabase"
import { contractSuites } from "@hostplane/testkit/contract/index"
import { Layer } from "effect"

// Every port contract of testkit on the PostgreSQL stores; each suite builds its own fresh database from this layer.
contractSuites("postgres", pgStores.pipe(Layer.provide(TestDatabase.layer)))
