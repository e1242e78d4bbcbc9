import { area } from "../Area.ts"
import { EdgePasses } from "./EdgePasses.ts"
import { EdgeSessionStore } from "./EdgeSessionStore.ts"

/**
 * The edge's access passes: the store a project delete clears, and the passes every edge checks and issues (in process,
 * or over the node API for a node on another machine). The edge itself (its rules, cache and listeners) is the data
 * plane's, `@hostplane/node`.
 */
export const EdgeArea = area({ name: "edge", stores: [EdgeSessionStore], services: EdgePasses.layer })
