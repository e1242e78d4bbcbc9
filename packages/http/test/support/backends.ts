import { layerMemory } from "@hostplane/testkit/memory/index"
import type { Layer } from "effect"
import type { Stores } from "./TestServer.ts"

/** Every store the HTTP suites run on: the same rules must hold on each. */
export const backends: ReadonlyArray<readonly [string, () => Layer.Layer<Stores, unknown>]> = [
  ["memory", () => layerMemory]
]
