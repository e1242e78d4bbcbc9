import * as Pg from "@hostplane/adapters-pg"
import { TestDatabase } from "@hostplane/adapters-pg/testing/TestDatabase"
import { layerMemory } from "@hostplane/testkit"
import { Layer } from "effect"
import type { Stores } from "./TestServer.ts"

/** Every store the HTTP suites run on: real PostgreSQL (a fresh database per server) and the memory store. */
export const backends: ReadonlyArray<readonly [string, () => Layer.Layer<Stores, unknown>]> = [
  ["postgres", () => Pg.layer.pipe(Layer.provideMerge(TestDatabase.layer))],
  ["memory", () => Layer.fresh(layerMemory)]
]
