import { Layer } from "effect"
import { area } from "../Area.ts"
import { EdgeSessionStore } from "./EdgeSessionStore.ts"

/**
 * The edge's access passes: the store the node's edge writes and a project delete clears. The edge itself (its rules,
 * cache and listeners) is the data plane's, `@hostplane/node`.
 */
export const EdgeArea = area({ name: "edge", stores: [EdgeSessionStore], services: Layer.empty })
